"""Tournament backends and benchmark."""
import concurrent.futures, multiprocessing, sys, threading
import numpy as np, pytest
from genome_lab.arenas.policies import load_pufferlib_policy, SnakeHeuristic, RandomPolicy, EpsilonGreedy
from genome_lab.tournaments.tournament import play_games, play_maps, play_game, game_seed
from genome_lab.arenas.evaluation import evaluate


SNAKE_GAMES = [(0, 1, 2), (2, 0, 1), (1, 2, 0)]
SNAKE_KW = dict(agents_per_genome=4, steps=100, settings=dict(width=40, height=30, num_food=60))
TETRIS_KW = dict(seed=[3, 4], greedy=False, max_steps=3000, progress=False, num_envs=8)

def play_reference(backend:str='local')->dict: # {name: array}
    "Snake tournament games (`play_games`) and a sampled Tetris evaluation on two seeds, here or in Ray."
    pols = [load_pufferlib_policy('snake'), SnakeHeuristic(), RandomPolicy(4)]
    snake = play_games(pols, SNAKE_GAMES, 5, progress=False, backend=backend, **SNAKE_KW)
    tetris_pol = load_pufferlib_policy('tetris')
    if backend == 'ray':
        import ray
        tetris = ray.get(ray.remote(evaluate).remote(tetris_pol, 'tetris', **TETRIS_KW))
    else: tetris = evaluate(tetris_pol, 'tetris', **TETRIS_KW)
    out = {f'game {k} {f}': getattr(r, f) for k, r in enumerate(snake) for f in ('score', 'survival', 'kills', 'deaths', 'team_kills')}
    return out | {f'tetris {f}': getattr(tetris.episodes, f) for f in ('agent', 'score', 'lines', 'length')} | {'tetris map': tetris.map_index}

def draw_rand_forever(threads:int=2)->threading.Event: # set it to stop the threads
    "Start daemon threads that reseed and draw from libc's process-global `rand()` in a loop, as foreign code might."
    import ctypes, threading
    libc, stop = ctypes.CDLL(None), threading.Event()
    def loop(k):
        while not stop.wait(0.0002):   # the wait lets the game's thread hold the GIL most of the time
            libc.srand(k); k += 1
            for _ in range(10): libc.rand()
    for k in range(threads): threading.Thread(target=loop, args=(1000*k,), daemon=True).start()
    return stop

def play_beside_rand()->dict:
    "`play_reference` while other threads of this process call `rand()`."
    stop = draw_rand_forever()
    try: return play_reference()
    finally: stop.set()

def test_a_game_is_a_function_of_its_seed():
    """The same games give the same results in this process, in a spawned process and in Ray workers, each with other
    threads calling libc's `rand()` throughout (PufferLib's envs draw from their own streams, genome_lab's patch)."""
    import ray
    here = play_beside_rand()
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn')) as ex:
        spawned = ex.submit(play_beside_rand).result()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])   # Ray workers cannot import this test module
    if ray.is_initialized(): ray.shutdown()   # another test file's cluster, in this worker process
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env=dict(worker_process_setup_hook=draw_rand_forever))   # every worker draws rand() while it plays
    try: in_ray = play_reference('ray')
    finally: ray.shutdown()
    assert here.keys() == spawned.keys() == in_ray.keys()
    for k in here:
        np.testing.assert_array_equal(here[k], spawned[k], err_msg=f'{k}: spawned process'); np.testing.assert_array_equal(here[k], in_ray[k], err_msg=f'{k}: ray')
    assert sum(here[f'game {k} deaths'].sum() for k in range(len(SNAKE_GAMES))) > 0
    assert set(here['tetris map']) == {0, 1} and len(here['tetris score']) >= 8

def test_a_game_alone_is_the_same_game_in_a_batch_of_64():
    """A batch's games are maps of one `SnakeArena`, each seeded with its game's seed (issue 59): a game plays the same
    alone (`play_game`, or a batch of one), in a batch of 64 and in a batch of two beside another game."""
    puffer = load_pufferlib_policy('snake')
    pols, rng = [puffer, SnakeHeuristic(), RandomPolicy(4), EpsilonGreedy(puffer, 0.3)], np.random.default_rng(0)
    games, seeds = [[pols[i] for i in rng.choice(4, 2, replace=False)] for _ in range(64)], [game_seed(5, k) for k in range(64)]
    kw = dict(snakes_per_genome=3, steps=40, width=40, height=30, num_food=30)
    batch = play_maps(games, seeds, **kw)
    for k in (0, 17, 63):
        for alone in (play_game(games[k], seeds[k], **kw), play_maps([games[k]], [seeds[k]], **kw)[0],
                      play_maps([games[k - 1], games[k]], [seeds[k - 1], seeds[k]], **kw)[1]):
            for f in ('score', 'survival', 'kills', 'deaths', 'team_kills'): np.testing.assert_array_equal(getattr(alone, f), getattr(batch[k], f), err_msg=f)
    assert sum(r.deaths.sum() for r in batch) > 0 and len({tuple(r.score) for r in batch}) > 1   # games die, and differ

def test_tournament_benchmark_runs(cli, bench):
    r = cli('--ladder-games', '3', '--seeds', '1', '--steps', '30', main=bench('tournament').main)
    assert r.returncode == 0, r.stderr
    assert 'agent-steps/s' in r.stdout and 'ladder openskill: final tau' in r.stdout and 'ladder elo: final tau' in r.stdout

def test_server_runs_a_real_tournament_and_selection(tmp_path):
    "`run_tournament` on the server with the tournament job: ratings persist and the selection is logged."
    import time
    from fastapi.testclient import TestClient
    from genome_lab.registry.store import Registry, seed_founders
    from genome_lab.web.server import create_app
    from genome_lab.tournaments.selection import tournament_job
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

def test_sampled_games_of_networks_and_the_heuristic_are_valid_and_seeded():
    "greedy=False: PufferLib's snake and the heuristic sample too (they were left with uninitialised actions), and a seed fixes the game."
    from genome_lab.tournaments.tournament import play_game
    pols = [load_pufferlib_policy('snake'), SnakeHeuristic(), RandomPolicy(4)]
    play = lambda: play_game(pols, seed=3, snakes_per_genome=2, steps=60, greedy=False, width=32, height=24, num_food=16)
    a, b = play(), play()
    for f in ('score', 'survival', 'kills', 'deaths'): np.testing.assert_array_equal(getattr(a, f), getattr(b, f))

def test_the_server_job_a_season_and_a_lead_check_play_one_game_alike(tmp_path):
    """Issue 59, one tournament path: PufferSnake and HeuristicSnake alone in a registry. The server's tournament job, a
    season (no producers) and a lead check each play the arena's season game (`arena_plan`, `season_game`: 6 snakes a
    genome, its map) with their own way of cutting it to 40 steps, at the same seed: the first game gives each genome the
    same score in all three."""
    from genome_lab.registry.store import Registry, founding_genomes
    from genome_lab.tournaments.selection import tournament_job
    from genome_lab.tournaments.tournament import check_pair, run_tournament
    from genome_lab.tournaments.ranking import schedule_games
    from genome_lab.ecosystem.seasons import SeasonConfig, run_season
    from genome_lab.web.server_jobs import TournamentRequest
    with Registry(tmp_path/'reg') as reg:
        for g, pol in founding_genomes():
            if g.name in ('PufferSnake', 'HeuristicSnake'): reg.add(g, pol.state_dict(), status='active')
        seed = 1   # a season's games are seeded with cfg.seed * 1000 + its number: season 1 of seed 0
        job = tournament_job(reg, TournamentRequest(arena='snake', seed=seed, max_steps=40), lambda *a: None)['snake']
        run_season(reg, SeasonConfig(producers='', arena_settings=dict(snake=dict(steps=40))))
        season_eval = reg.tagged_evaluation('tournament', 'snake', 'season', 1)
        first = {}   # {path: {genome id: its score in game 0}}
        for path, eid in (('job', job['evaluation']), ('season', season_eval)):
            ids = reg.tournament(eid)[0]['ids']
            t = run_tournament(reg, evaluation=eid, progress=False)
            first[path] = {ids[i]: float(t.results[0].score[j]) for j, i in enumerate(t.games[0])}
            assert reg.tournament(eid)[0]['steps'] == 40 and reg.tournament(eid)[0]['agents_per_genome'] == 6
        ids = reg.tournament(job['evaluation'])[0]['ids']
        a, b = (ids[i] for i in run_tournament(reg, evaluation=job['evaluation'], progress=False).games[0])   # the job's first game, in its order
        c0, _ = schedule_games(2, 2, 1, seed)[0]   # the lead check's first game seats its entrants in this order
        pols = [reg.policy(a), reg.policy(b)] if c0 == 0 else [reg.policy(b), reg.policy(a)]
        check = check_pair(pols, 'snake', seed, games=1, given=dict(steps=40))
    assert first['job'] == first['season'], first
    challenger, founder = (a, b) if c0 == 0 else (b, a)
    assert check['score_diff'] == first['job'][challenger] - first['job'][founder], (check, first)
    assert any(v > 0 for v in first['job'].values()), first   # a game was played: snakes ate
