"""Seasons (genome_lab.ecosystem.seasons): a season killed with SIGKILL resumes to the result of an uninterrupted one, with no
game counted twice; in full arenas a better candidate replaces the worst active genome; a restarted server keeps its
season schedule and runs a missed season once, never twice."""
import json, os, shutil, signal, sqlite3, subprocess, sys, time
from datetime import datetime, timedelta, timezone
from pathlib import Path
import pytest, torch
from fastapi.testclient import TestClient
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome
from genome_lab.tournaments.selection import mutate
from genome_lab.web.server import create_app

BIN = Path(sys.executable).parent
FLAGS = ['--producers', '', '--batch', '1', '--meetings', '2', '--max-meetings', '3', '--arena-settings', 'snake.steps=120',
         'snake.agents=4', 'snake.width=32', 'snake.height=24', 'snake.num_food=20', 'snake.max_active=3', 'tetris.steps=60',
         'creatures.seconds=3', 'creatures.meetings=8']

def registry_with_candidates(root:Path):
    """The founders (three active snake genomes: the arena is full at `snake.max_active=3`) and three snake candidates
    (Gaussian mutants of PufferLib's snake); the creatures arena's four founders (its cap: three random creatures and
    the gait) and a creature candidate, the best of 32 random creatures on four courses of its own."""
    from genome_lab.evolution.creature_store import creature_baselines
    from genome_lab.arenas.physics import random_population, selection_fitness, pellet_course, creature_policy
    with Registry(root) as reg:
        ids = seed_founders(reg)
        g, p = reg.load(ids['PufferSnake'])
        for k, sigma in enumerate((0.01, 0.05, 0.3)):
            reg.add(Genome(name=f'Mutant{k}', type='rl', arena='snake', arch=g.arch, config=g.config, source='test',
                           parents=[dict(id=g.id, relation='mutation')]), mutate(p, sigma, k))
        creature_baselines(reg)
        pop = random_population(32, 1)
        best = creature_policy(pop, int(sum(selection_fitness(pop, pellet_course(99, k), 3.0).fitness
                                            for k in range(4)).argmax()))
        reg.add(Genome(name='BestOf32', type='creature', arena='creatures', arch='creature', config=best.config,
                       source='test'), best.state_dict())

def outcome(root:Path)->dict:
    "Everything a season decides, by genome name: ratings, statuses, the season's row, and the stored game rows."
    with Registry(root) as reg:
        name = lambda i: reg.genome(i)['name']
        row = dict(reg.db.execute('SELECT status, candidates, games, replacements, violations FROM seasons WHERE id=1').fetchone())
        return dict(ratings={name(i): (r['mu'], r['sigma'], r['games']) for i, r in reg.ratings().items()},
                    status={name(i): reg.genome(i)['status'] for i in reg.ids()}, season=row,
                    results=reg.db.execute('SELECT COUNT(*) FROM results').fetchone()[0],
                    history=reg.db.execute('SELECT COUNT(*) FROM rating_history').fetchone()[0])

def games_stored(root:Path)->int:
    with sqlite3.connect(root/'registry.sqlite', timeout=30) as db:
        try: return db.execute('SELECT COUNT(DISTINCT evaluation || "-" || game) FROM rating_history').fetchone()[0]
        except sqlite3.OperationalError: return 0

def season(root:Path)->subprocess.Popen:
    return subprocess.Popen([BIN/'genome-lab', 'season', '--registry', str(root), *FLAGS], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, env={**os.environ, 'OMP_NUM_THREADS': '1'})

def test_schedule_refuses_an_unknown_command_and_a_missing_job(tmp_path, cli):
    "`schedule -- rnu` is refused with the commands there are (nothing stored); removing no job is a clear error, status 1."
    store = tmp_path/'schedule.sqlite'
    run = lambda *a: cli('schedule', '--store', store, *a)
    cli('schedule', '--help')                                     # its usage cached: lines are checked
    r = run('--cron', '0 4 * * 1', '--id', 'typo', '--', 'rnu')   # against it before the import
    assert r.returncode == 2 and "unknown command 'rnu': did you mean 'run'?" in r.stderr, r.stderr
    assert 'typo' not in run('--list').stdout
    r = run('--remove', 'no-such-job')
    assert r.returncode == 1 and "no job 'no-such-job'" in r.stderr and 'Traceback' not in r.stderr, r.stderr

@pytest.fixture(scope='module')
def whole_season(tmp_path_factory)->Path:
    "`registry_with_candidates` before (`before/`) and after (`after/`) one uninterrupted season."
    root = tmp_path_factory.mktemp('season')
    registry_with_candidates(root/'before')
    shutil.copytree(root/'before', root/'after')   # the same registry twice: the same ids
    whole = season(root/'after')
    assert whole.wait(600) == 0, whole.stdout.read()
    return root

def test_killed_season_resumes_to_the_uninterrupted_result(whole_season, tmp_path):
    shutil.copytree(whole_season/'before', tmp_path/'a')
    killed = season(tmp_path/'a')
    t0 = time.time()
    while games_stored(tmp_path/'a') < 2:
        assert killed.poll() is None, f"the season ended before it could be killed:\n{killed.stdout.read()}"
        assert time.time() - t0 < 300; time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL); killed.wait(30)
    with Registry(tmp_path/'a') as reg:
        assert reg.db.execute('SELECT status FROM seasons WHERE id=1').fetchone()[0] == 'running'
        stored = games_stored(tmp_path/'a')
    assert 2 <= stored < games_stored(whole_season/'after'), "the kill fell inside the season's games"
    again = season(tmp_path/'a')
    assert again.wait(600) == 0, again.stdout.read()
    a, b = outcome(tmp_path/'a'), outcome(whole_season/'after')
    assert a == b
    assert a['season']['status'] == 'done' and a['season']['games'] == games_stored(whole_season/'after')

def test_sigterm_stops_a_season_in_its_producer_round_within_seconds_and_it_resumes(tmp_path):
    """Issue 53: SIGTERM in a producer's round (in this process) stopped the producer, recorded its round as done and
    played the rest of the season; now the season ends within seconds, the round unrecorded, and the same command
    finishes it, the round included."""
    from genome_lab.core import run_lock
    from genome_lab.ecosystem.seasons import SEASON_LOCK
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    flags = ['--producers', 'ppo', '--ppo-device', 'cpu', '--ppo-maps', '64', '--ppo-steps', '8192', '--ppo-mode', 'self-play',
             '--ppo-qualifier-games', '0']   # one quick offer: no league step of 32 epochs, no qualifier
    proc = subprocess.Popen([BIN/'genome-lab', 'season', '--registry', str(tmp_path/'reg'), *FLAGS, *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert 'season 1: producer ppo' in proc.stdout.readline()
    time.sleep(3); t0 = time.monotonic(); proc.send_signal(signal.SIGTERM)   # in the round: importing, loading or training
    out = proc.communicate(timeout=60)[0]; took = time.monotonic() - t0
    assert proc.returncode == 130 and 'stopped; the same command finishes the season' in out and took < 10, (took, out)
    with Registry(tmp_path/'reg') as reg:
        assert [r['status'] for r in reg.seasons()] == ['running'] and reg.season_steps(1) == {}
    with run_lock(tmp_path/'reg'/SEASON_LOCK): pass   # nothing holds the registry
    again = subprocess.run([BIN/'genome-lab', 'season', '--registry', str(tmp_path/'reg'), *FLAGS, *flags], capture_output=True,
                           text=True, timeout=600, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert again.returncode == 0, again.stdout + again.stderr
    with Registry(tmp_path/'reg') as reg:
        assert [r['status'] for r in reg.seasons()] == ['done'] and reg.season_steps(1)['produce:ppo']['ids'], reg.season_steps(1)

def test_a_better_candidate_replaces_the_worst_active_genome_in_a_full_arena(whole_season):
    """Issue 29: the snake and creature arenas are full; a candidate that rates above an active genome replaces it
    (the worst replaceable one first), in both arenas; every creature ran every one of the 8 races."""
    with Registry(whole_season/'after') as reg:
        row = reg.seasons()[0]
        rt = {reg.genome(i)['name']: r for i, r in reg.ratings().items()}
        swaps = {(s['arena'], s['removed'], s['added']) for s in row['replacements']}
        assert ('snake', 'RandomSnake') in {s[:2] for s in swaps}, swaps
        assert ('creatures', 'BestOf32') in {(s[0], s[2]) for s in swaps}, swaps
        assert all(r and rt[a]['ordinal'] > rt[r]['ordinal'] for _, r, a in swaps), swaps   # an active one, rated below
        races = reg.season_steps(1)['tournament:creatures']['stability']['games']
        assert races == 8 and all(rt[n]['games'] == 8 for n in ('BestOf32', 'RandomCreature0')), (races, rt)

def fire_once_at(t:datetime)->str: return f"{t.second} {t.minute} {t.hour} {t.day} {t.month} *"   # 6 fields: once a year

def test_restarted_server_keeps_its_schedule_and_runs_a_missed_season_once(tmp_path):
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    auth = {'Authorization': 'Bearer schedule-token'}
    config = dict(producers='', max_meetings=2, arena_settings=dict(snake=dict(steps=30, agents=2, width=24, height=24, num_food=10),
                                                                    tetris=dict(steps=30, agents=2)))
    with TestClient(create_app(tmp_path/'reg', token='schedule-token')) as http:
        assert http.get('/schedule').json()['cron'] == '0 3 * * 1'   # weekly by default
        for lead in (3, 10, 30):   # the schedule must be set before it fires: on a loaded host (a load of 7 on 2 cores) the
            # PUT took over 3 s, and the cron's next match was a year on (2027-12-07)
            fire = datetime.now(timezone.utc) + timedelta(seconds=lead)
            set_to = http.put('/schedule', headers=auth, json=dict(cron=fire_once_at(fire), config=config)).json()
            if datetime.now(timezone.utc) < fire: break
    assert datetime.fromisoformat(set_to['next_run']) == fire.replace(microsecond=0)
    time.sleep(max(0.0, (fire - datetime.now(timezone.utc)).total_seconds()) + 1.5)   # the server is down when the season is due
    seasons = lambda: sqlite3.connect(tmp_path/'reg'/'registry.sqlite').execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE name='seasons'").fetchone()[0] and sqlite3.connect(tmp_path/'reg'/'registry.sqlite').execute(
        "SELECT status FROM seasons").fetchall()
    with TestClient(create_app(tmp_path/'reg', token='schedule-token')) as http:
        got = http.get('/schedule').json()
        assert (got['cron'], got['config']['arena_settings']['snake']['steps']) == (set_to['cron'], 30)   # the store kept the schedule, not the default
        t0 = time.time()
        while seasons() != [('done',)]:
            assert time.time() - t0 < 300, seasons(); time.sleep(0.2)   # the missed season runs once the server is back
    with TestClient(create_app(tmp_path/'reg', token='schedule-token')) as http:
        time.sleep(3)
        assert seasons() == [('done',)]   # a second restart does not run it again
        assert http.get('/schedule').json()['cron'] == set_to['cron']

def test_ppo_producer_continues_its_run_each_season_the_same_in_any_registry(tmp_path):
    """The ppo loop producer in seasons: each season's round goes on from its checkpoint to its next offer (the fine-tune
    of PufferSnake: `PufferSnake-ppo1`, then `-ppo2`, a self-play chain), its scalars on the dashboard as it steps, and
    its genomes a function of seed and settings: the same weights in another registry."""
    from genome_lab.ecosystem.seasons import SeasonConfig, run_season
    from genome_lab.web.dashboard import read_scalars
    ppo = dict(ppo_maps=2, ppo_steps=4608, ppo_scratch_every=0, ppo_device='cpu', ppo_mode='self-play', ppo_qualifier_games=0)
    cfg = SeasonConfig(producers='ppo', batch=16, producer_settings=dict(ppo=ppo), arena_settings=dict(
        snake=dict(steps=60, agents=2, width=32, height=24, num_food=20), tetris=dict(steps=30)))
    made = {}
    for name in ('a', 'b'):
        with Registry(tmp_path/name) as reg:
            seed_founders(reg)
            rows = [run_season(reg, cfg) for _ in range(2)]
            made[name] = [c['id'] for r in rows for c in r['candidates'] if c['producer'] == 'ppo']
            assert [reg.genome(i)['name'] for i in made[name]] == ['PufferSnake-ppo1', 'PufferSnake-ppo2']
            assert all(reg.genome(i)['type'] == 'rl' and reg.genome(i)['arena'] == 'snake' for i in made[name])
            assert reg.genome(made[name][1])['parents'] == [dict(id=made[name][0], relation='self-play')]
            sc = read_scalars(reg.root)['ppo']   # one run of the producer's steps, as they ended
            assert sorted(sc) == ['main'] and {'losses/policy_loss', 'charts/SPS'} <= set(sc['main'])
            assert [s for s, *_ in sc['main']['charts/length_at_death']] == [4608, 9216]
            made[name] = [reg.load(i)[1] for i in made[name]]
    assert all(torch.equal(pa[k], pb[k]) for pa, pb in zip(made['a'], made['b']) for k in pa)   # a function of seed and settings

def test_a_stored_bad_running_season_does_not_wedge_later_seasons(tmp_path, capsys):
    """Issue 30: a season row left 'running' with settings that do not read is closed, saying why, and the next
    season plays; so is one an older genome_lab stored with its per-arena fields (issue 48: now `arena_settings`)."""
    from genome_lab.ecosystem.seasons import season_cli
    with Registry(tmp_path/'reg') as reg:
        seed_founders(reg)
        reg.open_season(dict(arena_settings=dict(snake=dict(steps='abc'))))   # as a PUT /schedule of old code stored it
    assert season_cli(['--registry', str(tmp_path/'reg'), *FLAGS]) == 0
    with Registry(tmp_path/'reg') as reg:
        reg.open_season(dict(snake_steps=1000, tetris_agents=8))   # a season an older genome_lab left running
    assert season_cli(['--registry', str(tmp_path/'reg'), *FLAGS]) == 0
    with Registry(tmp_path/'reg') as reg: rows = reg.seasons()
    assert [(r['id'], r['status']) for r in rows] == [(1, 'done'), (2, 'done'), (3, 'done'), (4, 'done')]
    assert rows[1]['games'] > 0 and rows[3]['games'] > 0
    assert "steps='abc' is not an int" in rows[0]['violations'][0]
    assert "unknown season settings ['snake_steps', 'tetris_agents']" in rows[2]['violations'][0]
    assert "an arena's own go in arena_settings" in rows[2]['violations'][0]

def test_season_refuses_a_registry_that_does_not_exist(tmp_path, capsys):
    "Issue 30: `season --registry <typo>` creates nothing and says how to make a new registry."
    from genome_lab.ecosystem.seasons import season_cli
    with pytest.raises(SystemExit) as e: season_cli(['--registry', str(tmp_path/'regsitry'), *FLAGS])   # a usage error
    assert e.value.code == 2
    assert not (tmp_path/'regsitry').exists() and '--create' in capsys.readouterr().err

def test_two_seasons_at_once_fail_clearly(tmp_path, capsys):
    "Issue 30: a season while another holds the registry exits 2 naming the holder, and changes nothing."
    from genome_lab.core import run_lock
    from genome_lab.ecosystem.seasons import season_cli, SEASON_LOCK
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    with run_lock(tmp_path/'reg'/SEASON_LOCK):   # the other season
        assert season_cli(['--registry', str(tmp_path/'reg'), *FLAGS]) == 2
    assert f'pid {os.getpid()}' in capsys.readouterr().err
    with Registry(tmp_path/'reg') as reg:
        assert not reg.db.execute("SELECT 1 FROM sqlite_master WHERE name='seasons'").fetchone()   # nothing changed

def test_a_producer_between_seasons_stops_at_its_budget_or_when_it_has_nothing_new(tmp_path):
    """`spawn_worker`: a worker that outlives its budget is asked to stop, then killed with its process group (its
    lock freed, nothing counted); a producer with nothing new to offer (clones, no sessions uploaded) stops after
    `idle` commits that offered nothing."""
    from genome_lab.core import run_lock
    from genome_lab.ecosystem.workers import spawn_worker
    from genome_lab.rl.ppo_producer import PPOSettings
    root = tmp_path/'reg'
    with Registry(root) as reg: seed_founders(reg)
    t0 = time.monotonic()
    out = spawn_worker(root, 'ppo', 3.0, settings=PPOSettings(ppo_maps=512, ppo_device='cpu'), grace_s=2.0)   # a step far longer than 5 s
    # SIGTERM at 5 s finds the worker in its step (its handler waits for the step: killed 2 s later) or, on a busy
    # machine, still importing (no handler yet: it ends at once, having started nothing); either way it ends in time
    assert ('killed after' in out.get('error', '') or (out.get('stopped'), out.get('steps')) == ('stop', 0)), out
    assert time.monotonic() - t0 < 15, out
    with run_lock(root/'season_work'/'ppo.lock'): pass   # the killed worker's process group is gone with its lock
    with Registry(root, read_only=True) as reg: assert reg.waiting_offers() == {}
    out = spawn_worker(root, 'clones', 120.0)
    assert (out['stopped'], out['steps'], out['offered']) == ('nothing new', 2, []), out

def test_serve_runs_its_producers_and_stops_them_with_the_app(tmp_path, capsys, monkeypatch):
    """Issue 29: a writable server given producers (`ProducerWorkers`, `genome-lab serve --producers ...`) runs them in
    the background: the creature producer's offer reaches the served registry's queue; the app's shutdown stops it
    (the round running is killed, its lock freed)."""
    from dataclasses import replace
    from genome_lab.core import run_lock, find_producer, PRODUCERS
    from genome_lab.ecosystem.schedule import ProducerWorkers
    from genome_lab.evolution.creature_store import CreatureSettings
    from genome_lab.web.server import serve_cli, serve_options
    assert ProducerWorkers in serve_options()
    small = CreatureSettings(creature_population=6, creature_ga_races=2, creature_offer_every=2, creature_finalists=2,
                             creature_qualifier_races=4, creature_race_seconds=1.0, creature_compile=False, creature_device='cpu')
    # the worker's flags (`spawn_worker`): an offer within seconds, where the defaults' first (generation 20) took half a minute
    monkeypatch.setitem(PRODUCERS, 'creatures', replace(find_producer('creatures'), settings=lambda: small))
    assert serve_cli(['--registry', str(tmp_path/'none'), '--read-only', '--producers', 'nope']) == 2
    assert 'unknown producer' in capsys.readouterr().err and not (tmp_path/'none').exists()   # refused before serving
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    app = create_app(tmp_path/'reg', token='serve-token-1')
    app.state.options[ProducerWorkers] = ProducerWorkers(producers='creatures', producer_budget_s=600)
    def offers():
        with Registry(tmp_path/'reg', read_only=True) as reg: return reg.waiting_offers()
    with TestClient(app):
        t0 = time.time()
        while not offers():
            assert time.time() - t0 < 300 and 'creatures' not in app.state.producers, app.state.producers
            time.sleep(0.5)
    assert set(offers().values()) == {'creatures'}
    ended = app.state.producers['creatures']
    assert ended['stopped'] == 'stop', ended   # by the shutdown (its round may be cut after its offer), not its budget
    with run_lock(tmp_path/'reg'/'season_work'/'creatures.lock'): pass

SMALL = dict(producers='clones', batch=1, meetings=1, max_meetings=1, max_candidates=1, arena_settings=dict(
             snake=dict(steps=30, agents=2, width=24, height=24, num_food=10), tetris=dict(steps=30, agents=2)))

@pytest.fixture(scope='module')
def two_small_seasons(tmp_path_factory):
    """Two seasons on the founders and two snake candidates that producer `mutants` offered (`max_candidates=1`: the
    first season plays the newer one, the older waits), while producer `clones` is at work elsewhere (its lock held)
    and the after-season hooks are one that raises and one that notes the season it follows. Returns the registry
    folder, the season rows, the noted (season, status) pairs and the warnings."""
    import warnings
    from unittest import mock
    from genome_lab.core import run_lock
    from genome_lab.ecosystem.seasons import SeasonConfig, run_season
    root, noted = tmp_path_factory.mktemp('small')/'reg', []
    def broken(reg, season): raise ValueError('no clips today')
    def note(reg, season): noted.append((season, reg.seasons()[season - 1]['status']))
    with Registry(root) as reg:
        g, p = reg.load(seed_founders(reg)['PufferSnake'])
        for k in range(2):
            gid = reg.add(Genome(name=f'Offered{k}', type='rl', arena='snake', arch=g.arch, config=g.config, source='test'),
                          mutate(p, 0.01, k)).id
            reg.offer(gid, 'mutants')
        with run_lock(root/'season_work'/'clones.lock'), warnings.catch_warnings(record=True) as said, \
             mock.patch('genome_lab.ecosystem.seasons.after_season_hooks', return_value=[broken, note]):
            warnings.simplefilter('always')
            rows = [run_season(reg, SeasonConfig(**SMALL)) for _ in range(2)]
    return root, rows, noted, [str(w.message) for w in said]

def test_an_after_season_hook_that_raises_is_recorded_and_the_season_closes(two_small_seasons):
    """Before: the hook's exception left `run_season` (the season closed, its row lost to the caller: `genome-lab
    season` failed, the scheduled job errored), and a season killed before its hooks never ran them."""
    root, rows, noted, said = two_small_seasons
    assert [r['id'] for r in rows] == [1, 2] and all(r['status'] == 'done' for r in rows)
    assert noted == [(1, 'running'), (2, 'running')]   # each hook once per season, before its row is written
    with Registry(root, read_only=True) as reg:
        steps = reg.season_steps(1)
    hooks = {k.rsplit('.', 1)[-1]: v for k, v in steps.items() if k.startswith('after:')}   # after:<module>:<function>
    assert hooks['broken']['error'] == 'ValueError: no clips today' and 'error' not in hooks['note'], hooks
    assert sum('no clips today' in w for w in said) == 2, said   # reported (a warning) for each season

def test_a_producer_at_work_elsewhere_is_passed_over(two_small_seasons):
    "Before: a season naming a producer whose round a server's worker was running failed with `RunLocked`."
    root, rows, _, _ = two_small_seasons
    with Registry(root, read_only=True) as reg: step = reg.season_steps(1)['produce:clones']
    assert step['ids'] == [] and f'pid {os.getpid()}' in step['passed_over'] and 'clones' in step['passed_over'], step

def test_a_candidate_left_waiting_is_counted_by_the_season_that_plays_it(two_small_seasons):
    """Before: season 1's row listed both offers though it played one; season 2 played the other and listed it again,
    as 'submitted'."""
    _, rows, _, _ = two_small_seasons
    listed = [[(c['name'], c['producer']) for c in r['candidates']] for r in rows]
    assert listed == [[('Offered1', 'mutants')], [('Offered0', 'mutants')]], listed

def test_a_read_only_server_refuses_producers(tmp_path):
    "Before: `genome-lab serve --producers ...` without a token ran no producer and said nothing."
    from genome_lab.ecosystem.schedule import ProducerWorkers
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    app = create_app(tmp_path/'reg')
    app.state.options[ProducerWorkers] = ProducerWorkers(producers='clones')
    with pytest.raises(ValueError, match='producers run on a writable server only'):
        with TestClient(app): pass

def test_a_producer_whose_rounds_cannot_start_ends_with_its_error(tmp_path):
    "Before: an error other than a failed round (here: no `genome-lab` command) ended the worker thread unrecorded."
    from unittest import mock
    from genome_lab.ecosystem.schedule import ProducerWorkers, producer_workers
    with mock.patch('genome_lab.ecosystem.workers.console_script', return_value=tmp_path/'no-genome-lab'):
        with producer_workers(tmp_path, ProducerWorkers(producers='clones')) as ended:
            for _ in range(100):
                if 'clones' in ended: break
                time.sleep(0.05)
    assert ended['clones']['producer'] == 'clones' and 'FileNotFoundError' in ended['clones']['error'], ended

def test_a_workers_command_line_passes_the_usage_checked_before_import(tmp_path, capsys):
    """`genome-lab` checks a command line against the usage `produce --help` cached before importing the command: every
    producer's worker line (`spawn_worker`: NAME and its settings' flags) must pass it (stop 49: on a machine with the
    help cached, each was refused with exit 2 and every worker failed)."""
    from genome_lab.core import config_argv, find_producer, producer_names
    from genome_lab.pipeline import command_help, cached_usage, check_usage
    command_help('produce', tmp_path); capsys.readouterr()
    spec, reg = cached_usage('produce', tmp_path), tmp_path/'r'
    Registry(reg).close()   # an existing registry: the line is checked for its flags
    for n in producer_names():
        assert check_usage(spec, [n, f'--registry={reg}', *config_argv(find_producer(n).settings())]) is None, n

def test_a_schedule_stored_before_the_layout_by_topic_still_loads(tmp_path):
    """A job store written when the job functions lived in `genome_lab.seasons` keeps its jobs: APScheduler would drop a
    job whose textual reference no longer imports; `scheduler` points it at the function's present home first."""
    import pickle
    from genome_lab.ecosystem.schedule import scheduler, cron_trigger, run_command, migrate_job_refs
    store = tmp_path/'schedule.sqlite'
    sch = scheduler(store); sch.add_job(run_command, cron_trigger('0 4 * * 1'), id='nightly', args=[['season', '--help']]); sch.start(paused=True); sch.shutdown()
    with sqlite3.connect(store) as db:   # as the version before wrote it
        state = pickle.loads(db.execute("SELECT job_state FROM apscheduler_jobs WHERE id='nightly'").fetchone()[0])
        assert state['func'] == 'genome_lab.ecosystem.schedule:run_command'
        state['func'] = 'genome_lab.seasons:run_command'
        db.execute("UPDATE apscheduler_jobs SET job_state=? WHERE id='nightly'", (pickle.dumps(state),))
    sch = scheduler(store); sch.start(paused=True)
    try: job = sch.get_job('nightly')
    finally: sch.shutdown()
    assert job is not None and job.func is run_command and job.args == (['season', '--help'],)
    assert migrate_job_refs(store) == 0   # nothing left to point elsewhere
