"""bench/programs_climb.py at tiny settings: the producer works as one process for its budget, its best offer plays the
check tournament against the non-random tetris founders, and the figures file holds what 63_llm_evolution quotes."""
import importlib.util, json, sys
from pathlib import Path
import numpy as np
from genome_lab.programs.program_producer import ProgramSettings
from genome_lab.ecosystem.seasons import SeasonConfig

def test_programs_climb_bench_runs_with_tiny_settings(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location('bench_climb', Path(__file__).parents[1]/'bench'/'programs_climb.py')
    bench = importlib.util.module_from_spec(spec); sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    assert bench.SEASON.arena_of('tetris') == SeasonConfig().arena_of('tetris')   # the season's own
    monkeypatch.setattr(bench, 'SEASON', SeasonConfig(producers='', arena_settings=dict(tetris=dict(steps=60, agents=2))))   # short games here
    res = bench.main(['--root', str(tmp_path/'climb'), '--budget-s', '20', '--games', '4', '--heldout', '1',
                      '--program-ticks', '60', '--program-games', '1', '--program-children', '2', '--program-generations', '2',
                      '--program-cma-generations', '1', '--program-cma-popsize', '2', '--out', str(tmp_path/'climb.json')])
    saved = json.loads((tmp_path/'climb.json').read_text())
    assert 'error' not in saved['producer'] and saved['offers'] and saved['best_offer'] in saved['offers']
    assert saved['producer']['settings']['program_ticks'] == 60 and res['producer']['names'] == [o['name'] for o in saved['offers']]
    c = saved['check']
    names = {e['name'] for e in c['entrants'].values()}
    assert names == {'Dellacherie', 'ElTetris', 'PufferTetris', saved['best_offer']['name']} and c['games'] >= 4
    assert c['settings'] == dict(steps=60, agents_per_genome=2, genomes_per_game=3)
    a, b = c['genome'], c['founder']
    assert b['name'] in bench.FOUNDERS and b['mu'] == max(e['mu'] for e in c['entrants'].values() if e['name'] in bench.FOUNDERS)
    assert np.isclose(c['sigma_gap'], (a['mu'] - b['mu'])/np.hypot(a['sigma'], b['sigma'])) and saved['reached'] == (c['sigma_gap'] >= 1)
    h = c['head_to_head']
    assert h['games'] == h['wins'] + h['losses'] + h['ties'] > 0
    assert set(saved['solo']) == {f"offer {saved['best_offer']['name']}", 'Dellacherie', 'ElTetris'}
    assert all(r['pieces'] > 0 and r['ticks_per_piece'] > 1 for r in saved['solo'].values())
    assert saved['pace']['budget_mean_s'] == 0.01 and set(saved['pace']['references']) == {'Dellacherie', 'ElTetris'}
    assert all(getattr(ProgramSettings(), k) != v for k, v in bench.PRESET.items())   # the bench's preset, said in --help
