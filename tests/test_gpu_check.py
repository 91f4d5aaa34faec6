"""The GPU check's pieces that run without a GPU: fresh tournament maps, the training bench on the CPU, the weight files,
the league rating bench."""
import json, subprocess, sys
from pathlib import Path
import numpy as np, pytest, torch
from safetensors.torch import load_file, save_file
from genome_lab.registry.store import founding_genomes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT/'bench'))

def test_tournament_maps_are_rebuilt_fresh(tmp_path, monkeypatch):
    "Every reset_every steps the maps are made anew, as a fresh env reset with the next seed of the stream."
    monkeypatch.chdir(tmp_path)   # importing pufferlib links its resources into the working directory
    from genome_lab.rl.training import TournamentMaps
    kw = dict(num_envs=2, width=48, height=36, num_snakes=18, num_food=60, max_snake_length=512)
    env, ref = TournamentMaps(5, seed=3, **kw), TournamentMaps(5, seed=3, **kw)
    env.reset(3)
    acts = np.random.default_rng(0).integers(0, 4, (5, env.num_agents))
    for a in acts[:-1]: env.step(a)
    before = env.observations.copy()
    env.step(acts[-1])
    assert env.resets == 1 and env.tick == 0
    ref.reset(3*100_000 + 1)
    np.testing.assert_array_equal(env.observations, ref.observations)
    assert not np.array_equal(before, env.observations)
    assert (env.observations == 1).sum() > 0   # food on the fresh maps
    env.close(); ref.close()

def test_gpu_snake_trains_with_the_recipe_and_writes_weights_the_rating_bench_reads(tmp_path):
    "bench/gpu_snake.py (the package's `finetune_recipe`) for a few seconds on the CPU, from PufferSnake's weights."
    from gpu_weights import export_puffersnake, read_trained
    init = export_puffersnake(tmp_path/'init.safetensors')
    r = subprocess.run([sys.executable, ROOT/'bench'/'gpu_snake.py', '--device', 'cpu', '--seconds', '3', '--workers', '1',
                        '--maps-per-worker', '2', '--minibatch-size', '2304', '--init', init, '--out', tmp_path, '--name', 'ft'],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    log = json.loads((tmp_path/'ft.json').read_text())
    assert log['agent_steps'] >= 2304 and log['agents'] == 36 and log['config']['width'] == 80 and log['log']
    pol, meta = read_trained(tmp_path/'ft.safetensors')
    assert meta['agent_steps'] == log['agent_steps'] and meta['config']['init'] == str(init)

def test_weights_round_trip(tmp_path):
    "PufferSnake under PufferLib's names reads back as the same LinearLSTM; a file without run metadata is refused."
    from gpu_weights import export_puffersnake, read_trained
    path = export_puffersnake(tmp_path/'init.safetensors')
    with pytest.raises(ValueError, match='gpu_snake'): read_trained(path)
    meta = {'gpu_snake': json.dumps(dict(agent_steps=0))}
    save_file(load_file(str(path)), str(tmp_path/'run.safetensors'), metadata=meta)
    pol, meta = read_trained(tmp_path/'run.safetensors')
    want = next(p for g, p in founding_genomes() if g.name == 'PufferSnake').state_dict()
    assert meta == dict(agent_steps=0) and set(pol.state_dict()) == set(want)
    for k, v in pol.state_dict().items(): torch.testing.assert_close(v, want[k], rtol=0, atol=0)

def test_league_rating_bench_runs(tmp_path):
    "One season tournament of the committed GPU genome against the founders; its figures and lineage are written."
    out = tmp_path/'rating.json'
    flags = ['--seeds', '5', '--snake-steps', '150', '--max-meetings', '1', '--out', str(out)]
    r = subprocess.run([sys.executable, ROOT/'bench'/'league_rating.py', *flags],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(out.read_text())
    [s] = d['seeds']
    assert set(s) == {'seed', 'genome', 'ordinal', 'mu', 'sigma', 'games', 'puffersnake'} and s['seed'] == 5
    assert s['games'] > 0 and s['puffersnake']['games'] > 0 and s['sigma'] > 0
    assert abs(s['ordinal'] - (s['mu'] - 3*s['sigma'])) < 1e-9
    assert d['lineage']['parents'][0]['relation'] == 'finetune' and d['gpu_agent_steps_per_s'] > 0
    assert 'PufferSnake' in {row['name'] for row in d['leaderboards']['seeds'][0]}
