"""70_dreaming: the dream envs against gymnasium's checker and its vector API, and a smoke run of bench/dreaming.py
that writes the figures file's keys (the notebook covers training, accuracy and the planner's search)."""
import json
import numpy as np
import torch
from gymnasium.utils.env_checker import check_env
from genome_lab.imagination.dreaming import WorldModel, DreamEnv, DreamBridgeEnv


def _dreams():
    torch.manual_seed(0)
    starts = np.random.default_rng(0).integers(0, 8, (5, 11, 11)).astype(np.int8)
    m = WorldModel(hidden=16, embed=16)
    with torch.no_grad(): m.heads.weight[1] = 0.0; m.heads.bias[1] = -30.0   # P(death) 1e-13: dreams run to max_steps
    return m, starts

def test_dream_env_passes_gymnasium_checker():
    m, starts = _dreams()
    env = DreamEnv(m, starts, max_steps=6)
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=1)
    assert any((obs == s).all() for s in starts)   # a dream starts from a real frame

def test_dream_bridge_env_autoresets_same_step():
    m, starts = _dreams()
    env = DreamBridgeEnv(m, starts, num_envs=4, max_steps=3)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and env.single_action_space.n == 4
    for t in range(1, 4):
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        assert r.shape == (4,) and not term.any() and env.observation_space.contains(obs)
    assert trunc.all() and info['_final_observation'].all()   # all truncated at step 3 ...
    assert all(any((o == s).all() for s in starts) for o in obs)   # ... and already restarted from real frames
    assert not (env.step(env.action_space.sample())[3]).any()

def test_dreams_end_with_the_death_heads_probability_drawn_from_the_seed():
    "A death head that says 0.2 everywhere ends a fifth of the dream steps (none would end at a 0.5 threshold)."
    m, starts = _dreams()
    with torch.no_grad(): m.heads.weight[1] = 0.0; m.heads.bias[1] = float(np.log(0.2 / 0.8))
    def ends(seed, n=64, steps=50):
        env = DreamBridgeEnv(m, starts, num_envs=n, max_steps=10**6)
        env.reset(seed=seed); rng = np.random.default_rng(seed)
        return np.stack([env.step(rng.integers(0, 4, n))[2] for _ in range(steps)])
    a, b, c = ends(1), ends(1), ends(2)
    assert abs(a.mean() - 0.2) < 0.03 and (a == b).all() and (a != c).any()   # 3,200 draws: s.d. 0.007
    env = DreamEnv(m, starts, max_steps=10**6); env.reset(seed=3)
    one = [env.step(0)[2] for _ in range(1000)]
    assert abs(np.mean(one) - 0.2) < 0.05

def test_bench_writes_the_issue_keys(tmp_path, cli, bench):
    out = tmp_path/'dreaming.json'
    args = ['--styles', 'random,farmer', '--per-style', '1', '--steps', '30', '--train-seeds', '1', '--updates', '2',
            '--context', '2', '--horizon', '3', '--hidden', '16', '--embed', '16', '--roi-beams', '1',
            '--roi-horizons', '1', '--roi-gates', '0.5', '--roi-steps', '2', '--plan-beam', '1', '--plan-horizon', '1',
            '--snake-steps', '5', '--check-seeds', '4', '--max-meetings', '1', '--rounds', '1', '--snakes', '3',
            '--game-steps', '3', '--epochs', '1', '--bptt', '2', '--out', str(out)]
    ran = cli(*args, main=bench('dreaming').main)
    assert ran.returncode == 0, ran.stderr
    r = json.loads(out.read_text())
    assert set(r['world_model']) == {'1', '5', '15'}
    assert all(0 <= v[k] <= 1 for v in r['world_model'].values() for k in ('model', 'baseline'))
    assert {'ordinal', 'puffersnake_ordinal', 'distilled_ordinal'} <= set(r['planner'])
    assert {row['name'] for row in r['planner']['leaderboard']} >= {'PufferSnake-plan1', 'PufferSnake', 'PufferSnake-distil1'}
    assert set(r['planner']['compute']) == {'puffersnake', 'planner', 'distilled'}
    assert [d['round'] for d in r['distillation']['rounds']] == [0, 1] and r['significance']['tournaments'] == 2
    assert [c['seed'] for c in r['planner_checks']] == [4] and r['planner']['seed'] == 0
    assert [(q['beam'], q['horizon'], q['gate']) for q in r['roi']] == [(0, 0, 0), (1, 1, 0), (1, 1, 0.5)]
    assert r['roi'][1]['searched'] == 1 and 0 <= r['roi'][2]['searched'] <= 1
