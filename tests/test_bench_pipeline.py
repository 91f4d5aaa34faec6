"""bench/pipeline.py: a run's notebook seconds and shares from its run.json."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def test_pipeline_shares(tmp_path):
    run = tmp_path/'20261126-000000-abc'; run.mkdir()
    res = {'01_arenas': dict(status='ok', seconds=30.0), '75_seasons': dict(status='ok', seconds=90.0)}
    (run/'run.json').write_text(json.dumps(dict(run_id=run.name, preset='quick', status='running', results=res,
                                                notebooks=['01_arenas', '75_seasons', '99_pipeline'])))
    out = subprocess.run([sys.executable, ROOT/'bench'/'pipeline.py', run, '--budget', '100'],
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert '120.0 s of notebooks, budget 100 s (1.20x)' in lines[0]
    assert lines[1].split()[:4] == ['75_seasons', '90.0', 's', '75.0%']
    assert lines[2].split()[:4] == ['01_arenas', '30.0', 's', '25.0%']
    assert 'not run' in lines[3] and lines[-1] == 'not finished: 99_pipeline'

def test_a_run_in_two_lanes_is_read_by_its_wall_clock(tmp_path):
    run = tmp_path/'20261207-000000-abc'; run.mkdir()
    res = {'01_arenas': dict(status='ok', seconds=30.0), '75_seasons': dict(status='ok', seconds=90.0)}
    (run/'run.json').write_text(json.dumps(dict(run_id=run.name, preset='quick', status='ok', results=res, lanes=2,
                                                wall_seconds=95.0, notebooks=['01_arenas', '75_seasons'])))
    out = subprocess.run([sys.executable, ROOT/'bench'/'pipeline.py', run, '--budget', '100'],
                         capture_output=True, text=True, check=True).stdout
    assert '95.0 s of notebooks; 120.0 s summed over 2 lanes, budget 100 s (0.95x)' in out.splitlines()[0]
