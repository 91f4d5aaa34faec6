"""Creature physics, GA (on the loop protocol), run store, the `genome-lab evolve-creatures` command (with a SIGKILL and
--resume), the creatures producer and its climb bench."""
import json, os, signal, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np, pytest, torch
from genome_lab.arenas.physics import (random_population, simulate, pellet_course, physics_steps, prepare, next_generation,
                                creature_policy, stack_policies, CreaturePolicy, DQ_REASONS)
from genome_lab.arenas.policies import ARCHITECTURES
from genome_lab.registry.store import Registry
from genome_lab.registry.genomes import Genome
from genome_lab.evolution.creature_store import (CreatureStore, CreatureGA, CreatureSettings, evolve_run, export_run, import_run,
                                       evolve_creatures_cli, creature_baselines, REFERENCE_NAMES)

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = {**os.environ, 'OMP_NUM_THREADS': '1'}

def test_deterministic_and_batch_independent():
    pop, course = random_population(6, 11), pellet_course(11, 2)
    a, b = simulate(pop, course, seconds=6), simulate(pop, course, seconds=6)
    np.testing.assert_array_equal(a.fitness, b.fitness)
    for i in (0, 5):
        one = simulate({k: v[i:i+1] for k, v in pop.items()}, course, seconds=6)
        np.testing.assert_allclose(one.fitness[0], a.fitness[i], atol=1e-4)
    assert a.fitness.dtype == np.float32 and (a.fitness >= 0).any()

def test_compiled_matches_eager():
    pop, course = random_population(4, 2), pellet_course(2)
    e, c = simulate(pop, course, seconds=4, record=True), simulate(pop, course, seconds=4, record=True, compile=True)
    # contact with friction is chaotic: float-level differences (fused kernels, vectorised sin/tanh) grow over an
    # episode, so the trajectories agree closely at first and the outcomes only roughly
    np.testing.assert_allclose(c.frames[:16], e.frames[:16], atol=1e-3)
    c2 = simulate(pop, course, seconds=4, compile=True)
    np.testing.assert_array_equal(c2.fitness, c.fitness)    # compiled is deterministic too

def test_turbo_matches_recorded():
    # turbo plays the episode in one call (compiled: one `while_loop`), recording in 4-step calls: same results, bit for bit
    pop, course = random_population(4, 2), pellet_course(2)
    for comp in (False, True):
        a, b = simulate(pop, course, seconds=4, compile=comp), simulate(pop, course, seconds=4, record=True, compile=comp)
        assert a.frames is None and b.frames.shape == (61, 4, 8, 2)
        for k in ('fitness', 'pellets', 'progress', 'dq'): np.testing.assert_array_equal(getattr(a, k), getattr(b, k))

def test_muscle_gathers_equal_incidence_products():
    pop = random_population(16, 9); c = prepare(pop)
    x = torch.randn(16, 8) * c['nm']
    torch.testing.assert_close((x.gather(1, c['ib']) - x.gather(1, c['ia']))*c['mm'], (c['D']*x.unsqueeze(1)).sum(-1), rtol=0, atol=0)

def test_compiled_run_resumes_to_the_same_result(tmp_path):
    s = CreatureStore(tmp_path/'s.sqlite')
    kw = dict(generations=5, population=4, seed=1, turbo=True, compile=True, seconds=2, checkpoint_every=2, progress=False,
              races=2)   # compiled with a course per creature
    evolve_run(s, run_id='A', **kw)
    evolve_run(s, run_id='B', stop_after=3, **kw)              # killed after generation 2; checkpoint at generation 2
    assert s.checkpoint('B')[0] == 2 and len(_gens(tmp_path/'s.sqlite', 'B')) == 3
    evolve_run(s, resume='B', progress=False)
    a, b = _gens(tmp_path/'s.sqlite', 'A'), _gens(tmp_path/'s.sqlite', 'B')
    assert len(a) == 5 and [json.loads(x[1]) for x in a] == [json.loads(x[1]) for x in b]

def test_disqualification_reasons():
    pop = random_population(3, 4)
    c = prepare(pop); P = 3
    x = c['x0'].clone(); x[1] += 500.0                   # creature 1 is outside the world
    y = c['y0'].clone(); vx = torch.zeros_like(x); vx[2] = 1e3 * c['nm'][2]   # creature 2 moves far too fast
    st = (x, y, vx, torch.zeros_like(y), torch.zeros(()), torch.zeros(P, dtype=torch.int64), torch.ones(P), torch.zeros(P, dtype=torch.int64))
    out = physics_steps(st, c, pellet_course(0), 4)
    assert [DQ_REASONS[d] for d in out[-1].tolist()] == ['', 'left the world', 'exploding energy']
    torch.testing.assert_close(out[0][1], x[1])           # a disqualified creature is frozen

def test_creature_genome_in_registry(tmp_path):
    assert ARCHITECTURES['creature'] is CreaturePolicy
    pop = random_population(2, 5); pol = creature_policy(pop, 1)
    reg = Registry(tmp_path)
    g = reg.add(Genome(name='c', type='creature', arena='creatures', arch='creature', config=pol.config, source='test'), pol.state_dict())
    back = stack_policies([reg.policy(g.id)])
    for k, v in back.items(): torch.testing.assert_close(v[0], pop[k][1])

def test_ga_keeps_population_size_and_elite():
    pop = random_population(10, 0); fit = np.arange(10, dtype=np.float32)
    kids = next_generation(pop, fit, 0, 0)
    assert all(len(v) == 10 for v in kids.values())
    torch.testing.assert_close(kids['muscle_stiffness'][0], pop['muscle_stiffness'][9])

def _gens(db, rid):
    con = sqlite3.connect(db)
    try: return con.execute('SELECT generation, results FROM generations WHERE run_id=? ORDER BY generation', (rid,)).fetchall()
    finally: con.close()

def test_cli_sigkill_then_resume_reaches_the_uninterrupted_result(tmp_path):
    db = tmp_path/'s.sqlite'
    base = [BIN/'genome-lab', 'evolve-creatures', '--generations', '8', '--population', '6', '--seed', '3', '--no-compile',
            '--checkpoint-every', '2', '--store', str(db)]
    r = subprocess.run(base + ['--run-id', 'A'], capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    assert 'best=' in r.stderr and 'mean=' in r.stderr and 'worst=' in r.stderr     # the progress bar
    p = subprocess.Popen(base + ['--run-id', 'B', '--quiet'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    t0 = time.time()
    while time.time() - t0 < 240:
        time.sleep(0.2)
        if db.exists() and len(_gens(db, 'B')) >= 3: break
    os.kill(p.pid, signal.SIGKILL); p.wait()
    assert p.returncode == -signal.SIGKILL
    got = len(_gens(db, 'B'))
    assert 3 <= got < 8, got
    con = sqlite3.connect(db); status = con.execute("SELECT status FROM runs WHERE id='B'").fetchone()[0]; con.close()
    assert status == 'running'
    r = subprocess.run([BIN/'genome-lab', 'evolve-creatures', '--resume', 'B', '--store', str(db), '--no-compile', '--quiet'],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    a, b = _gens(db, 'A'), _gens(db, 'B')
    assert len(a) == 8 and [json.loads(x[1]) for x in a] == [json.loads(x[1]) for x in b]
    s = CreatureStore(db)
    for k, v in s.checkpoint('A')[1].items(): torch.testing.assert_close(s.checkpoint('B')[1][k], v, rtol=0, atol=0)

def test_cli_export_import_and_errors(tmp_path, cli):
    s = CreatureStore(tmp_path/'s.sqlite')
    evolve_run(s, generations=2, population=4, seconds=2, run_id='r', progress=False)
    run = lambda *a: cli('evolve-creatures', *a)
    r = run('--export', 'r', '--store', str(tmp_path/'s.sqlite'))
    assert r.returncode == 0
    doc = json.loads(r.stdout); assert doc['run']['id'] == 'r' and len(doc['generations']) == 2
    (tmp_path/'r.json').write_text(r.stdout)
    assert run('--import', str(tmp_path/'r.json'), '--store', str(tmp_path/'t.sqlite'), '--run-id', 'r2').returncode == 0
    strip = lambda gs: [{k: v for k, v in g.items() if k != 'run_id'} for g in gs]
    back = export_run(CreatureStore(tmp_path/'t.sqlite'), 'r2')
    assert back['run']['id'] == 'r2' and strip(back['generations']) == strip(doc['generations']) and back['frames'] == doc['frames']
    r = run('--resume', 'nope', '--store', str(tmp_path/'s.sqlite'))
    assert r.returncode == 1 and "no run 'nope'" in r.stderr

def test_bench_runs_tiny(cli, bench):
    r = cli('--populations', '8,32', '--steps', '8', '--seq-creatures', '2', '--no-compile', '--generations', '2',
            '--ga-population', '4', '--seconds', '1', main=bench('physics').main)
    assert r.returncode == 0, r.stderr
    assert 'ratio batched/sequential' in r.stdout and 'turbo run: 2 generations' in r.stdout

# --- the command's refusals (issue 26)

@pytest.mark.parametrize('args,why', [(['--checkpoint-every', '0'], 'checkpoint-every'),
                                      (['--seconds', '-1'], 'seconds'),
                                      (['--generations', '0'], 'generations'), (['--population', '1'], 'population')])
def test_evolve_creatures_refuses_bad_settings_before_starting(tmp_path, capsys, args, why):
    "Before: --checkpoint-every 0 died with ZeroDivisionError after the run was stored, leaving it 'running' for ever."
    store = tmp_path/'s.sqlite'
    with pytest.raises(SystemExit) as e: evolve_creatures_cli([*args, '--store', str(store), '--quiet', '--no-compile'])
    assert e.value.code == 2 and why in capsys.readouterr().err
    assert not store.exists()

def test_evolve_creatures_refuses_odd_paths_and_a_second_process(tmp_path, capsys):
    from genome_lab.core import run_lock
    with pytest.raises(SystemExit): evolve_creatures_cli(['--store', str(tmp_path), '--quiet'])
    assert 'is a folder' in capsys.readouterr().err
    (tmp_path/'junk.sqlite').write_bytes(b'not a database at all' * 100)
    assert evolve_creatures_cli(['--store', str(tmp_path/'junk.sqlite'), '--quiet']) == 1 and 'not a run store' in capsys.readouterr().err
    store = tmp_path/'s.sqlite'
    with run_lock(f"{store}.r1.lock"):
        assert evolve_creatures_cli(['--store', str(store), '--run-id', 'r1', '--generations', '1', '--population', '2', '--seconds', '1',
                                     '--no-compile', '--quiet']) == 1
    assert 'in use' in capsys.readouterr().err

# --- the GA on the loop protocol, and the creatures producer (issues 44, 48)

def _state(run): # a loop's state with its tensors as lists (comparable with ==)
    return json.loads(json.dumps(run.state_dict(), default=lambda t: t.tolist()))

def test_ga_resumed_mid_run_reaches_the_uninterrupted_state(tmp_path):
    "Advanced 2 generations, then resumed from its checkpoint for 3 more: the state and rows of 5 uninterrupted ones."
    from genome_lab.core import advance
    def ga(name): # a GA of 3 races a generation, its rows in a store
        s = CreatureStore(tmp_path/f'{name}.sqlite')
        s.db.execute("INSERT OR IGNORE INTO runs VALUES (?, '', 4, 5, 5, 1.0, 1, '{}', 'running')", (name,))
        return CreatureGA(5, 4, 1.0, 3, store=s, run_id=name)
    whole = ga('whole'); advance(whole, tmp_path/'whole.safetensors', 'creatures', steps=5)
    cut = ga('cut'); advance(cut, tmp_path/'cut.safetensors', 'creatures', steps=2)
    cut.step()   # a generation raced after the checkpoint (its row written), then a kill
    resumed = ga('cut'); out = advance(resumed, tmp_path/'cut.safetensors', 'creatures', until=lambda r: r.generation >= 5)
    assert out['steps'] == 3 and _state(resumed) == _state(whole)
    assert _gens(tmp_path/'cut.sqlite', 'cut') == _gens(tmp_path/'whole.sqlite', 'whole')
    assert json.loads(_gens(tmp_path/'whole.sqlite', 'whole')[0][1])[0]['pellets'] >= 0   # means over the 3 races
    with pytest.raises(ValueError, match='population 5 there, 6 here'):
        CreatureGA(6, 4, 1.0, 3).load_state_dict(whole.state_dict())

def test_the_qualifier_rates_as_the_creature_tournament_does():
    """What a season measures: a tournament's races (every creature in each) rated by `race_ordinals` give its
    leaderboard's ordinals; the GA's cheaper `beaten_share` of the same races orders the creatures alike."""
    from scipy.stats import kendalltau
    from genome_lab.arenas.physics import beaten_share
    from genome_lab.evolution.creature_store import race_ordinals
    from genome_lab.tournaments.tournament import run_tournament
    pop = random_population(6, 21)
    names = [f'c{i}' for i in range(6)]
    t = run_tournament(ids=names, policies=[creature_policy(pop, i) for i in range(6)], arena='creatures',
                       genomes_per_game=6, agents_per_genome=1, steps=0, meetings=12, seed=5, settings=dict(seconds=2.0),
                       progress=False)
    scores = np.zeros((len(t.games), 6))   # (race, creature), each race's entrants in their schedule's order
    for k, (g, r) in enumerate(zip(t.games, t.results)): scores[k, list(g)] = r.score
    lb = t.leaderboard.set_index('id')
    np.testing.assert_allclose(race_ordinals(scores), [lb.ordinal[n] for n in names], rtol=0, atol=1e-9)
    assert kendalltau(beaten_share(scores), [lb.ordinal[n] for n in names]).statistic > 0.7

def test_the_producer_races_at_the_seasons_settings_and_continues_across_rounds(tmp_path):
    """Its races last a season's (the creatures arena's own `season`: seconds, meetings) unless set; two
    seasons' rounds (`work(offers=1)`) continue one run, each offering the qualifier's winner; the checkpoint of the
    rounds it made before it was a loop starts a new run."""
    from genome_lab.core import ProducerContext, find_producer, save_state
    from genome_lab.ecosystem.seasons import work
    from genome_lab.arenas.physics import CreatureArena
    reg = Registry(tmp_path/'reg'); creature_baselines(reg)
    run = find_producer('creatures').start(ProducerContext(reg, 1, CreatureSettings(creature_device='cpu'), tmp_path))
    own = CreatureArena.season
    assert (run.ga.config['seconds'], run.qualifier_races, run.ga.device) == (own.settings['seconds'], own.meetings, 'cpu')
    small = CreatureSettings(creature_population=4, creature_ga_races=2, creature_offer_every=2, creature_finalists=2,
                             creature_qualifier_races=3, creature_race_seconds=1.0, creature_compile=False,
                             creature_patience=1)   # every qualifier commits: a round ends at its first
    save_state(reg.root/'season_work'/'creatures.safetensors', 'producer', dict(round=3, pending=None))   # of the rounds before
    first, second = (work(reg, 'creatures', small, offers=1) for _ in range(2))
    assert first['steps'] == second['steps'] == 2 and first['offered'] and first['stopped'] == 'offers'
    assert reg.genome(first['offered'][0])['name'] == 'Creature-ga1'
    assert second['metrics']['generation'] == 4   # the second round went on from the first's checkpoint
    assert all(reg.genome(i)['type'] == 'creature' for i in reg.waiting_offers())

def test_gpu_physics_ga_generations_run_on_the_cpu(tmp_path, cli, bench):
    "bench/gpu_physics.py's GA generations (the GPU check's part for the creatures producer) on the CPU alone."
    r = cli('--out', tmp_path/'g.json', '--ga-only', '--ga-devices', 'cpu', '--ga-populations', '4,8', '--ga-races', '2',
            '--ga-seconds', '1', main=bench('gpu_physics').main)
    assert r.returncode == 0, r.stderr[-3000:]
    gens = json.loads((tmp_path/'g.json').read_text())['ga_generations']
    assert [(g['device'], g['population'], g['repeat_equal']) for g in gens] == [('cpu', 4, True), ('cpu', 8, True)]

def test_creatures_climb_bench_runs_tiny(tmp_path):
    out = tmp_path/'climb.json'
    r = subprocess.run([sys.executable, ROOT/'bench'/'creatures_climb.py', '--root', str(tmp_path/'root'), '--budget-s', '6',
                        '--races', '4', '--seconds', '1', '--creature-population', '4', '--creature-ga-races', '2',
                        '--creature-offer-every', '2', '--creature-finalists', '2', '--creature-race-seconds', '1',
                        '--no-creature-compile', '--lead-games', '2', '--out', str(out)], capture_output=True, text=True,
                       env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc['check']['games'] == 4 and doc['check']['against'] in REFERENCE_NAMES
    assert set(doc['leads']) == {'GaitCreature'} and [c['games'] for c in doc['checks']] == [2, 2, 2]   # the rule's bar: the gait
    assert doc['reached'] is False   # 2 games a seed never make a lead
    assert doc['check']['wins'] + doc['check']['losses'] + doc['check']['ties'] == 4
    assert doc['baseline']['genome'] == 'old_round' and doc['producer']['offers'][0] == 'Creature-ga1'
    assert doc['agreement']['of'] == 3 and 'charts/fitness_best' in doc['curve']

def test_creature_gait_bench_runs_tiny(tmp_path, cli, bench):
    "bench/creature_gait.py at a smoke test's size: its gait lies inside the genes' ranges, and its rule's record is the rule's."
    from genome_lab.arenas.physics import gait_creature, RANGES
    out = tmp_path/'gait.json'
    r = cli('--generations', '2', '--restarts', '2', '--popsize', '4', '--courses', '2', '--seconds', '1', '--no-compile',
            '--lead-games', '2', '--root', tmp_path/'root', '--out', out, main=bench('creature_gait').main)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert len(doc['search']['runs']) == 2 and doc['search']['races'] == 2 * 2 * 4 * 2
    assert doc['search']['fitness'] == max(run['fitness'] for run in doc['search']['runs'])
    lo, hi = RANGES['muscle_freq']; assert lo <= doc['gait']['frequency'] <= hi
    assert gait_creature(doc['gait']).state_dict()['node_mask'].sum() == 5
    assert set(doc['leads']) == {f'RandomCreature{k}' for k in range(3)} and len(doc['checks']) == 9
    assert doc['reached'] is False and all(c['games'] == 2 for c in doc['checks'])   # 2 races a seed never make a lead
