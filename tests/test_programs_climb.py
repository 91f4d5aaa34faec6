"""bench/programs_climb.py at tiny settings: the producer works as one process for its budget, its best offer is checked
by the lead rule against the non-random tetris founders, and the figures file holds what 65_llm_evolution quotes."""
import json
from genome_lab.ecosystem.loop import climb_check
from genome_lab.registry.store import Registry

def test_programs_climb_bench_runs_with_tiny_settings(tmp_path, monkeypatch, bench):
    bench = bench('programs_climb')
    def small_rule(registry, genome):   # the lead rule at 2 games of 60 ticks a seed: its form, not its figures
        with Registry(registry) as reg: r = climb_check(reg, genome, games=2, given=dict(steps=60, agents=2))
        return {k: r[k] for k in ('checks', 'leads', 'reached')}
    monkeypatch.setattr(bench, 'lead_record', small_rule)
    res = bench.main(['--root', str(tmp_path/'climb'), '--budget-s', '20', '--heldout', '1', '--program-ticks', '60',
                      '--program-games', '1', '--program-children', '2', '--program-generations', '2',
                      '--program-cma-generations', '1', '--program-cma-popsize', '2', '--program-qualifier-games', '1',
                      '--out', str(tmp_path/'climb.json')])
    saved = json.loads((tmp_path/'climb.json').read_text())
    assert 'error' not in saved['producer'] and saved['offers'] and saved['best_offer'] in saved['offers']
    assert saved['producer']['settings']['program_ticks'] == 60 and res['producer']['names'] == [o['name'] for o in saved['offers']]
    assert all(o['qualified_lines'] >= 0 and 0 <= o['train_lost'] <= 1 and 0 <= o['qualified_lost'] <= 1 for o in saved['offers'])
    assert {c['founder'] for c in saved['checks']} == set(saved['leads']) == {'Dellacherie', 'ElTetris', 'PufferTetris'}
    assert saved['reached'] == all(v['lead'] for v in saved['leads'].values())
    assert set(saved['solo']) == {f"offer {saved['best_offer']['name']}", 'Dellacherie', 'ElTetris'}
    assert all(r['pieces'] > 0 and r['ticks_per_piece'] > 1 for r in saved['solo'].values())
    assert saved['pace']['budget_mean_s'] == 0.01 and set(saved['pace']['references']) == {'Dellacherie', 'ElTetris'}
    assert saved['season']['tetris_settings'] == dict(topout_share=0.0) and sum(saved['strategies'].values()) > 3
    again = bench.main(['--root', str(tmp_path/'climb'), '--budget-s', '20', '--heldout', '1', '--program-ticks', '60',
                        '--program-games', '1', '--program-children', '2', '--program-generations', '2',
                        '--program-cma-generations', '1', '--program-cma-popsize', '2', '--program-qualifier-games', '1'])
    assert again['leads'] == res['leads'] and again['producer'] == res['producer']   # resumed, not run again
