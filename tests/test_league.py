"""AlphaStar's league (52_league): PFSP weighting, each role's opponents, the snapshot schedule, resume and the
producer, at tiny budgets."""
import re, json, sys
from pathlib import Path
import numpy as np
import pytest, torch
from genome_lab.core import advance, load_state
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.ecosystem.seasons import work
from genome_lab.rl.training import PPOConfig
from genome_lab.rl.ppo_run import League
from genome_lab.rl.league import AlphaStarLeague, LeagueConfig, LeagueSettings, ROLES, role_opponents
from loop_states import same, by_name

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

def test_snapshots_join_on_schedule_each_role_gets_its_opponents_and_the_league_resumes_exactly(tmp_path):
    """The league on the loop protocol: snapshots on schedule, each role's opponents; and 6 steps at once against 3, a
    checkpoint, a new league from it and 3 more: the same state to the bit (every learner's weights, Adam, maps, PFSP
    records; the members with their genome names)."""
    cfg = LeagueConfig(opponents='PufferSnake,HeuristicSnake', **TINY)
    runs = {}
    for how, cuts in (('whole', [6]), ('cut', [3, 3])):
        reg = Registry(tmp_path/how/'registry')
        puffer = seed_founders(reg)['PufferSnake']
        for k in cuts:
            lg = AlphaStarLeague(cfg, reg)
            advance(lg, tmp_path/how/'league.safetensors', 'league', steps=k, every_s=1e9)
        st, name = load_state(tmp_path/how/'league.safetensors', 'league'), lambda i: reg.genome(i)['name']
        st['entries'] = [{**e, 'id': name(e['id']), 'seconds': None} for e in st['entries']]
        st['start'] = name(st['start'])
        st['learners'] = {n: by_name(l, reg) for n, l in st['learners'].items()}
        runs[how] = st
        snaps = [e for e in lg.entries if e['role'] != 'registry']
        assert [(e['learner'], e['agent_steps']) for e in snaps] == [
            ('main-0', 512), ('main-exploiter-0', 256), ('league-exploiter-0', 256), ('main-exploiter-0', 512),
            ('league-exploiter-0', 512), ('main-0', 1024)]   # the learner furthest behind steps; a step ends with its draw
        for n, (role, run) in lg.learners.items():
            assert set(np.array(run.league.ids)[run.league.open]) == set(lg.opponents(n))
            assert run.league.weighting == ('variance' if role == 'main_exploiter' else 'hard')
        assert lg.opponents('main-exploiter-0') == [snaps[-1]['id']]                    # the newest main agent only
        assert snaps[1]['id'] not in lg.opponents('main-exploiter-0')                    # an exploiter never meets itself
        assert snaps[2]['id'] not in lg.opponents('league-exploiter-0') and snaps[1]['id'] in lg.opponents('league-exploiter-0')
        assert reg.genome(snaps[0]['id'])['parents'] == [dict(id=puffer, relation='finetune')]
        assert [reg.genome(e['id'])['name'] for e in snaps[:3]] == ['PufferSnake-league1', 'PufferSnake-league2', 'PufferSnake-league3']
        lg.close()
    same(runs['whole'], runs['cut'])
    with pytest.raises(ValueError, match='other settings'):
        AlphaStarLeague(LeagueConfig(**{**TINY, 'seed': 1}), reg).load_state_dict(load_state(tmp_path/'cut'/'league.safetensors', 'league'))

class Killed(Exception): "Stands for a SIGKILL in the middle of a step."

def test_a_league_producer_killed_mid_round_offers_what_an_uninterrupted_one_offers(tmp_path, monkeypatch):
    """Issue 45: the league producer (`work`, checkpointing after every step) killed in the middle of its fifth step, then
    started again, offers the same second genome (to the bit) as an uninterrupted producer; offers are the main agent's
    snapshots."""
    settings = LeagueSettings(league_snapshot_every=1536, league_device='cpu')
    offered = {}
    for how in ('whole', 'killed'):
        reg = Registry(tmp_path/how)
        seed_founders(reg)
        if how == 'killed':
            real, calls = AlphaStarLeague.step, []
            def step(self):
                calls.append(1)
                if len(calls) == 5: self.learners['main-0'][1].step(); raise Killed()   # work done, never saved
                return real(self)
            monkeypatch.setattr(AlphaStarLeague, 'step', step)
            with pytest.raises(Killed): work(reg, 'league', settings, offers=2, every_s=0)
            monkeypatch.setattr(AlphaStarLeague, 'step', real)
            first = work(reg, 'league', settings, offers=1)['offered']
        else: first = work(reg, 'league', settings, offers=2)['offered'][1:]
        assert [re.sub(r'\d+$', '', reg.genome(i)['name']) for i in first] == ['PufferSnake-league']   # after the first snapshots
        offered[how] = reg.load(first[0])[1]
    assert all(torch.equal(offered['whole'][k], v) for k, v in offered['killed'].items())
