"""bench/kit.py, the benches' run kit: the step memo resumes and refuses other settings, the figures merge-write keeps
other benches' keys, and `parse` reads a bench's flags from its config dataclass."""
import json
from dataclasses import dataclass, field
import pytest
from kit import Memo, parse, read_figures, write_figures

def test_memo_resumes_skipping_the_steps_done(tmp_path):
    runs = []
    def make(v): runs.append(v); return dict(v=v)
    m = Memo(tmp_path/'state.json', dict(seed=1, steps=10))
    assert m.step('a', lambda: make(1)) == dict(v=1) and 'b' not in m
    again = Memo(tmp_path/'state.json', dict(steps=10, seed=1))            # a rerun with the same settings
    assert again.step('a', lambda: make(2)) == dict(v=1) and again.step('b', lambda: make(3)) == dict(v=3)
    assert runs == [1, 3] and json.loads((tmp_path/'state.json').read_text())['steps'] == dict(a=dict(v=1), b=dict(v=3))

def test_memo_refuses_a_memo_made_with_other_settings(tmp_path):
    Memo(tmp_path/'state.json', dict(seed=1, steps=10))['a'] = 1
    with pytest.raises(ValueError, match=r"steps 10 there, 20 here.*remove the file"):
        Memo(tmp_path/'state.json', dict(seed=1, steps=20))
    fresh = Memo(tmp_path/'state.json', dict(seed=1, steps=20), redo=True)   # a per-step file: made again
    assert 'a' not in fresh and fresh.step('a', lambda: 2) == 2
    assert Memo(tmp_path/'state.json', dict(seed=1, steps=20))['a'] == 2

def test_memo_values_read_back_as_stored(tmp_path):
    "A fresh run and a resumed one see the same values (tuples as lists, numpy floats as floats)."
    import numpy as np
    m = Memo(tmp_path/'s.json', dict(k=(1, 2)))
    assert m.step('x', lambda: dict(t=(1, 2), f=np.float32(0.5))) == dict(t=[1, 2], f=0.5)
    assert Memo(tmp_path/'s.json', dict(k=[1, 2]))['x'] == dict(t=[1, 2], f=0.5)

def test_write_figures_keeps_the_files_other_keys(tmp_path):
    out = tmp_path/'measured'/'dreaming.json'
    assert read_figures(out) == {}
    write_figures(out, dict(dream_policy=dict(ratio=1.5)))
    write_figures(out, dict(world_model_tetris=dict(k=1), world_model_tetris_run=dict(s=2)))
    write_figures(out, dict(dream_policy=dict(ratio=2.0)))
    assert read_figures(out) == dict(dream_policy=dict(ratio=2.0), world_model_tetris=dict(k=1),
                                     world_model_tetris_run=dict(s=2))
    assert [p.name for p in out.parent.iterdir()] == ['dreaming.json']     # atomic: no stray temporary file

@dataclass
class _Bench:
    "A bench's settings."
    run: str = '' # a run folder
    window: list[int] = field(default_factory=lambda: [1000, 3000]) # START STOP
    quick: bool = False # tiny settings?
    def __post_init__(self):
        if len(self.window) != 2: raise ValueError(f"--window takes START STOP, not {self.window}")

def test_parse_reads_flags_positionals_and_lists_and_reports_a_configs_check(capsys):
    assert parse(_Bench, argv=[]) == _Bench()
    assert parse(_Bench, argv=['r1', '--window', '0', '0', '--quick'], positional=('run',)) == _Bench('r1', [0, 0], True)
    with pytest.raises(SystemExit) as e: parse(_Bench, argv=['--window', '1'])
    assert e.value.code == 2 and '--window takes START STOP, not [1]' in capsys.readouterr().err
    with pytest.raises(SystemExit): parse(_Bench, argv=['--win', '1', '2'])   # no abbreviations
