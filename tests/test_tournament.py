"""Tournament backends and benchmark."""
import concurrent.futures, multiprocessing, os, subprocess, sys
from pathlib import Path
import numpy as np, pytest
from genome_lab.policies import load_pufferlib_policy, SnakeHeuristic, RandomPolicy
from genome_lab.tournament import play_games

ROOT = Path(__file__).resolve().parent.parent

def test_ray_backend_matches_local():
    import ray  # a dev dependency (tools/setup.sh installs it)
    pols = [load_pufferlib_policy('snake'), SnakeHeuristic(), RandomPolicy(4)]
    games = [(0, 1, 2), (2, 0, 1)]
    kw = dict(agents_per_genome=4, steps=60, settings=dict(width=40, height=30, num_food=60))
    # the local reference runs in a fresh process, as the ray workers do: PufferLib's snake draws from the C library's
    # process-global rand(), so anything else in this test process that touches it could change a game
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn')) as ex:
        local = ex.submit(play_games, pols, games, 5, progress=False, **kw).result()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try: remote = play_games(pols, games, seed=5, backend='ray', **kw)
    finally: ray.shutdown()
    for a, b in zip(local, remote):
        for f in ('score', 'survival', 'kills', 'deaths', 'team_kills'): np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert sum(r.deaths.sum() for r in local) > 0

def test_tournament_benchmark_runs():
    r = subprocess.run([sys.executable, ROOT/'bench'/'tournament.py', '--ladder-games', '3', '--seeds', '1', '--steps', '30'],
                       capture_output=True, text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'}, timeout=600)
    assert r.returncode == 0, r.stderr
    assert 'agent-steps/s' in r.stdout and 'ladder openskill: final tau' in r.stdout and 'ladder elo: final tau' in r.stdout

def test_server_runs_a_real_tournament_and_selection(tmp_path):
    "`run_tournament` on the server with the tournament job: ratings persist and the selection is logged."
    import time
    from fastapi.testclient import TestClient
    from genome_lab.registry import Registry, seed_founders
    from genome_lab.server import create_app
    from genome_lab.selection import tournament_job
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    auth = {'Authorization': 'Bearer t0k3n-secret'}
    with TestClient(create_app(tmp_path/'reg', token='t0k3n-secret', job=tournament_job)) as http:
        job = http.post('/run_tournament', headers=auth, json=dict(arena='snake', agents=12, max_steps=80, settings=dict(width=40, height=30, num_food=20))).json()
        for _ in range(1200):
            job = http.get(f"/tournament_status/{job['id']}").json()
            if job['status'] not in ('queued', 'running'): break
            time.sleep(0.1)
    assert job['status'] == 'done', job
    res = job['result']['snake']
    assert {r['name'] for r in res['leaderboard']} == {'PufferSnake', 'HeuristicSnake', 'RandomSnake'}
    assert any('behavioral' in v for v in res['violations'])   # no behavioral genome yet: reported, not hidden
    with Registry(tmp_path/'reg') as reg:
        assert reg.db.execute('SELECT COUNT(*) FROM ratings').fetchone()[0] == 3
        assert reg.db.execute('SELECT COUNT(*) FROM replacements').fetchone()[0] >= 1
        assert reg.manifest()['last_tournament'] is not None
