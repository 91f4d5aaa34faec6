"""AlphaStar's league (76_league): PFSP weighting, each role's opponents, the snapshot schedule, resume and the
producer, at tiny budgets."""
import json
import numpy as np
import pytest
from genome_lab.core import ProducerContext, read_events
from genome_lab.registry import Registry, seed_founders
from genome_lab.training import League, PPOConfig
from genome_lab.league import (AlphaStarLeague, LeagueConfig, LeagueSettings, LEAGUE_FILE, ROLES, produce_league,
                               role_opponents)

def test_pfsp_hard_meets_the_opponents_that_win_and_variance_the_even_ones():
    lg = League(['strong', 'even', 'weak'], [None] * 3, power=1.0, seed=0, prior=[0.9, 0.5, 0.1])
    assert np.allclose(lg.probs(), [0.9, 0.5, 0.1] / np.float64(1.5))
    for _ in range(20): lg.record(2, 10.0, 5.0)   # the weak one wins 20 games: its rate, and so its weight, rise
    assert lg.win_rates()[2] == pytest.approx((20 + 0.2) / 22) and lg.probs()[2] > lg.probs()[1]
    var = League(['strong', 'even', 'weak'], [None] * 3, weighting='variance', prior=[0.9, 0.5, 0.1])
    assert np.allclose(var.probs(), np.array([0.09, 0.25, 0.09]) / 0.43)
    var.restrict(['strong', 'weak'])
    assert var.probs()[1] == 0 and set(var.draw(100)) == {0, 2}
    with pytest.raises(ValueError, match='weighting must be one of'): League(['a'], [None], weighting='soft')
    with pytest.raises(ValueError, match='not in the league'): var.restrict(['nobody'])
    with pytest.raises(ValueError, match='pfsp_weighting'):
        PPOConfig(mode='league', learner_share=0.5, pfsp_weighting='soft')

def test_role_opponents_follow_the_league_as_it_grows():
    league = [dict(id='p', role='registry', learner='')]
    mains = ['main-0']
    assert role_opponents('main_exploiter', 'main-exploiter-0', league, 'p', mains) == ['p']   # the main agent's start
    league += [dict(id='m1', role='main', learner='main-0'),
               dict(id='x1', role='main_exploiter', learner='main-exploiter-0'),
               dict(id='l1', role='league_exploiter', learner='league-exploiter-0'),
               dict(id='m2', role='main', learner='main-0')]
    assert role_opponents('main', 'main-0', league, 'p', mains) == ['p', 'm1', 'x1', 'l1', 'm2']
    assert role_opponents('main_exploiter', 'main-exploiter-0', league, 'p', mains) == ['m2']   # current mains only
    assert role_opponents('league_exploiter', 'league-exploiter-0', league, 'p', mains) == ['p', 'm1', 'x1', 'm2']
    assert set(ROLES) == {'main', 'main_exploiter', 'league_exploiter'}

TINY = dict(num_snakes=8, snapshot_every=256, eval_snakes=4, eval_max_steps=200)

def test_snapshots_join_on_schedule_each_role_gets_its_opponents_and_a_kill_resumes(tmp_path):
    reg = Registry(tmp_path/'registry')
    puffer = seed_founders(reg)['PufferSnake']
    cfg = LeagueConfig(opponents='PufferSnake,HeuristicSnake', **TINY)
    lg = AlphaStarLeague(cfg, tmp_path/'league', reg)
    lg.step(); lg.step()
    snaps = [e for e in lg.entries if e['role'] != 'registry']
    assert [(e['learner'], e['agent_steps'] // 256) for e in snaps] == [
        (n, k) for k in (1, 2) for n in ('main-0', 'main-exploiter-0', 'league-exploiter-0')]
    assert all(e['agent_steps'] >= 256 * (1 + i // 3) for i, e in enumerate(snaps))
    newest_main = snaps[3]['id']
    for name, (role, run) in lg.learners.items():
        drawn = set(np.array(run.league.ids)[run.league.open])
        assert drawn == set(lg.opponents(name))
        assert run.league.weighting == ('variance' if role == 'main_exploiter' else 'hard')
    assert lg.opponents('main-exploiter-0') == [newest_main]
    assert snaps[1]['id'] not in lg.opponents('main-exploiter-0')                   # an exploiter never meets itself
    assert snaps[2]['id'] not in lg.opponents('league-exploiter-0')
    assert snaps[1]['id'] in lg.opponents('league-exploiter-0')
    assert reg.genome(snaps[0]['id'])['parents'] == [dict(id=puffer, relation='finetune')]
    # a kill after a learner's keep, before league.json: the kept snapshot joins at resume
    run = lg.learners['league-exploiter-0'][1]
    run.train_for(256); row = run.keep()
    lg.close()
    assert row['genome'] not in {e['id'] for e in json.loads((tmp_path/'league'/LEAGUE_FILE).read_text())['entries']}
    again = AlphaStarLeague(cfg, tmp_path/'league', reg, resume=True)
    assert again.entries[:len(lg.entries)] == lg.entries and again.entries[-1]['id'] == row['genome']
    assert row['genome'] in again.opponents('main-0') and row['genome'] not in again.opponents('league-exploiter-0')
    again.close()
    with pytest.raises(ValueError, match='other settings'):
        AlphaStarLeague(LeagueConfig(**{**TINY, 'seed': 1}), tmp_path/'league', reg, resume=True)

def test_league_producer_offers_the_main_agent_and_is_idempotent(tmp_path):
    reg = Registry(tmp_path/'registry')
    seed_founders(reg)
    settings = LeagueSettings(league_snapshot_every=256)
    ctx = lambda season: ProducerContext(reg, season, settings, tmp_path/'work', seed=0)
    [first] = produce_league(ctx(1))
    assert produce_league(ctx(1)) == [first]   # the season's share is done: nothing more trains
    [second] = produce_league(ctx(2))
    assert second != first and reg.genome(second)['parents'] == [dict(id=first, relation='self-play')]
    runs = {f.parent.name: read_events(f) for f in (reg.root/'scalars'/'league').glob('*/events.out.tfevents.*')}
    learners = ['main-0', 'main-exploiter-0', 'league-exploiter-0']   # a run per learner and season, one file each
    assert sorted(runs) == sorted(f'season-{s}-{n}' for s in (1, 2) for n in learners)
    assert all({'charts/SPS', 'charts/learning_rate'} <= {t for t, *_ in r} for r in runs.values())
