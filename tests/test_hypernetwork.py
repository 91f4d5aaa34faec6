"""Diffusion hypernetwork, replicator training loop (a `Loop`: SIGKILL and resume), `genome-lab train-replicator`
(--resume, registration), the ES control and the replicator benches with tiny settings."""
import json, os, shutil, signal, subprocess, sys, time, warnings
from pathlib import Path
import numpy as np, pytest, torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from genome_lab.evolution.hypernetwork import (DiffusionHypernetwork, HypernetConfig, HypernetworkTrainer, TrainerConfig,
                                     PretrainConfig, evaluate_population)
from genome_lab.evolution.replicator_run import ReplicatorConfig, checkpoint_meta, train_replicator
from genome_lab.registry.store import Registry
from genome_lab.core import run_lock
from genome_lab.arenas.policies import load_pufferlib_policy
from genome_lab.tournaments.tournament import play_game
from genome_lab.arenas.policies import StackedLinearLSTM
from genome_lab.arenas.arena import SnakeArena

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = {**os.environ, 'OMP_NUM_THREADS': '1'}
TINY = ['--population', '4', '--agents-each', '1', '--steps', '16', '--hidden', '4', '--chunk', '64', '--width', '32',
        '--eval-interval', '0', '--pretrain-steps', '0', '--seed', '5', '--every-s', '0']
SMALL = dict(population=4, agents_each=1, steps=16, eval_interval=0, seed=5, hypernet=HypernetConfig(hidden=4, chunk=64, width=32),
             pretrain=PretrainConfig(pretrain_steps=0))

def _meta(run_dir): return checkpoint_meta(Path(run_dir)/'checkpoint.safetensors')

def _raw(run_dir): # the checkpoint's whole metadata (`save_state`'s JSON)
    with safe_open(str(Path(run_dir)/'checkpoint.safetensors'), 'pt') as f: return json.loads(f.metadata()['replicator'])

def untimed(rows): return [{k: v for k, v in row.items() if k != 'seconds'} for row in rows]   # timings differ between runs

def test_population_evaluation_and_stacked_play_match_each_policy():
    hn = DiffusionHypernetwork(HypernetConfig(hidden=4, chunk=64, width=32))
    params = hn.generate_weights(torch.randn(3, 16), torch.Generator().manual_seed(0))
    arena = SnakeArena(width=64, height=48, num_snakes=3, num_food=40)
    ev = evaluate_population(hn.policy_config, params, arena, steps=40, seed=2)
    # each genome alone (one snake) would play another map, so the stacked forward pass is compared instead
    obs = torch.randint(0, 8, (3, 1, 11, 11), dtype=torch.int8)
    net = StackedLinearLSTM(hn.policy_config, params)
    logits, _ = net(obs, net.initial_state(1))
    for i in range(3):
        pol = hn.policy(params, i)
        with torch.no_grad(): torch.testing.assert_close(logits[i], pol(obs[i])[0], atol=1e-5, rtol=1e-5)
    assert ev['fitness'].shape == (3,) and ev['agent_steps'] == 120

def test_population_fitness_is_the_window_or_the_first_episode_of_each_snake():
    hn = DiffusionHypernetwork(HypernetConfig(hidden=4, chunk=64, width=32))
    params = hn.generate_weights(torch.randn(3, 16), torch.Generator().manual_seed(0))
    arena = SnakeArena(width=64, height=48, num_snakes=6, num_food=40)
    slot = np.random.default_rng(2).permutation(6)   # policy-major order -> snake index, as evaluate_population assigns them
    per_policy = lambda per_snake: per_snake[slot].reshape(3, 2).mean(1)
    for fitness in ('window', 'first'):
        ev = evaluate_population(hn.policy_config, params, arena, steps=300, seed=2, fitness=fitness)
        eps = arena.pop_episodes()   # the arena's own record of every finished episode since the reset
        assert len(eps) > 6   # snakes died and respawned, so there were later episodes to count or leave out
        window = np.bincount(eps.agent, weights=eps.ret, minlength=6) + arena._ret
        if fitness == 'window':
            per_snake = window
            begun = per_policy(np.bincount(eps.agent, minlength=6) + 1.0)   # the episodes its snakes began (finished ones + the running one)
            np.testing.assert_allclose(ev['episodes'].numpy(), begun, rtol=1e-6)
        else:
            per_snake = arena._ret.copy()   # snakes whose first episode was still running
            for a in range(6):
                if (eps.agent == a).any(): per_snake[a] = eps.ret[np.flatnonzero(eps.agent == a)[0]]
        np.testing.assert_allclose(ev['fitness'].numpy(), per_policy(per_snake), rtol=1e-5, atol=1e-6)
    for gone in ('all', 'episode'):   # 'episode' (the mean episode reward) measured worse and was removed
        with pytest.raises(ValueError, match="one of"): evaluate_population(hn.policy_config, params, arena, fitness=gone)

def test_trainer_rejects_bad_fitness():
    hn = DiffusionHypernetwork(HypernetConfig(hidden=4, chunk=64, width=32))
    tr = HypernetworkTrainer(hn, TrainerConfig())
    z = torch.randn(4, 16); dev = tr.develop(z, torch.Generator().manual_seed(0))
    before = {k: v.clone() for k, v in hn.state_dict().items()}
    with pytest.raises(ValueError, match='finite'): tr.step(z, dev, torch.tensor([1., float('nan'), 0., 0., 0., 0., 0., 0.]))
    with pytest.raises(ValueError, match='one per developed policy'): tr.step(z, dev, torch.zeros(4))
    for k, v in hn.state_dict().items(): assert torch.equal(v, before[k])

def test_each_genome_is_developed_twice_by_mirrored_noise():
    hn = DiffusionHypernetwork(HypernetConfig(hidden=4, chunk=64, width=32, zero_init=False))
    z = torch.randn(3, 16)
    dev = HypernetworkTrainer(hn, TrainerConfig()).develop(z, torch.Generator().manual_seed(5))
    mean = hn.generate_weights(z, torch.Generator().manual_seed(5), final_noise=False)   # the same chain, last noise off
    for k, v in dev['params'].items():
        assert v.shape[0] == 6
        torch.testing.assert_close((v[:3] + v[3:]) / 2, mean[k], atol=1e-6, rtol=1e-5)
        if k.startswith('encoder'): assert not torch.allclose(v[:3], v[3:])

def test_cli_sigkill_then_resume_reaches_the_uninterrupted_result(tmp_path):
    run = lambda *a, **kw: subprocess.run([BIN/'genome-lab', 'train-replicator', *a], capture_output=True, text=True, env=ENV, timeout=300, **kw)
    r = run('--run-dir', str(tmp_path/'A'), '--generations', '6', *TINY)
    assert r.returncode == 0, r.stderr
    assert 'replicator' in r.stderr and 'fit=' in r.stderr             # the progress bar
    p = subprocess.Popen([BIN/'genome-lab', 'train-replicator', '--run-dir', str(tmp_path/'B'), '--generations', '6',
                          '--no-progress', *TINY], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    t0 = time.time()
    while time.time() - t0 < 240:
        time.sleep(0.05)
        try:
            if _meta(tmp_path/'B')['generation'] >= 2: break
        except Exception: pass
    os.kill(p.pid, signal.SIGKILL); p.wait()
    assert p.returncode == -signal.SIGKILL
    got = _meta(tmp_path/'B')['generation']
    assert 2 <= got < 6, got
    r = run('--run-dir', str(tmp_path/'B'), '--resume', '--no-progress')   # the settings come from the checkpoint
    assert r.returncode == 0, r.stderr
    a, b = _meta(tmp_path/'A'), _meta(tmp_path/'B')
    assert b['generation'] == 6 and untimed(a['history']) == untimed(b['history'])
    ta, tb = load_file(tmp_path/'A'/'checkpoint.safetensors'), load_file(tmp_path/'B'/'checkpoint.safetensors')
    assert ta.keys() == tb.keys() and any(k.startswith('state/hn/') for k in ta)
    for k in ta: torch.testing.assert_close(tb[k], ta[k], rtol=0, atol=0)

def test_cli_refuses_and_keeps_the_checkpoint(tmp_path, cli):
    run = lambda *a: cli('train-replicator', *a)
    assert run('--run-dir', str(tmp_path), '--generations', '1', '--no-progress', *TINY).returncode == 0
    ck = (tmp_path/'checkpoint.safetensors').read_bytes()
    r = run('--run-dir', str(tmp_path), '--generations', '2', '--no-progress', *TINY)
    assert r.returncode == 2 and 'resume it' in r.stderr
    r = run('--run-dir', str(tmp_path), '--generations', '2', '--resume', '--no-progress', *TINY[:-4], '--seed', '6')
    assert r.returncode == 2 and 'other settings' in r.stderr
    r = run('--run-dir', str(tmp_path/'new'), '--resume', '--no-progress', *TINY)
    assert r.returncode == 2 and 'nothing to resume' in r.stderr
    with run_lock(tmp_path/'.lock'):                                   # another process is training this run
        r = run('--run-dir', str(tmp_path), '--generations', '2', '--resume', '--no-progress')
    assert r.returncode == 2 and f'in use by another process (pid {os.getpid()})' in r.stderr and 'Traceback' not in r.stderr, r.stderr
    assert (tmp_path/'checkpoint.safetensors').read_bytes() == ck
    meta = _raw(tmp_path); meta['state']['format'] = 2                # a checkpoint of an earlier version
    old = tmp_path/'old'; old.mkdir()
    save_file(load_file(tmp_path/'checkpoint.safetensors'), old/'checkpoint.safetensors', metadata={'replicator': json.dumps(meta)})
    before = (old/'checkpoint.safetensors').read_bytes()
    r = run('--run-dir', str(old), '--generations', '2', '--resume', '--no-progress', *TINY)
    assert r.returncode == 2 and 'earlier genome_lab' in r.stderr, r.stderr
    assert (old/'checkpoint.safetensors').read_bytes() == before

def test_registered_genomes_play_in_a_tournament_game(tmp_path, cli):
    reg = tmp_path/'reg'
    r = cli('train-replicator', '--run-dir', tmp_path/'run', '--generations', '2', '--no-progress', '--registry', reg, '--register', '2', *TINY)
    assert r.returncode == 0, r.stderr
    registry = Registry(reg)
    found = registry.db.execute("SELECT id FROM genomes WHERE source='replicator'").fetchall()
    assert len(found) == 2
    pols = [registry.policy(g['id']) for g in found]
    assert all(p.config.get('learned_state') and p.config['hidden'] == 4 for p in pols)
    res = play_game(pols + [load_pufferlib_policy('snake')], seed=1, snakes_per_genome=2, steps=20, width=40, height=30, num_food=20)
    assert res.score.shape == (3,) and np.isfinite(res.score).all()
    desc = json.loads(registry.genome(found[0]['id'])['description'])
    assert desc['generation'] == 2 and len(desc['latent']) == 16

def test_bench_flags_are_the_config_fields_and_its_defaults_the_configs_but_for_its_preset(bench):
    from genome_lab.core import config_fields
    bench = bench('hypernetwork')
    ap = bench.parser()
    dests = {a.dest for a in ap._actions}
    assert set(config_fields(ReplicatorConfig)) <= dests                      # every field, nested ones included, is a flag
    assert bench.settings(ap.parse_args([])) == ReplicatorConfig(**bench.PRESET)
    assert all(getattr(ReplicatorConfig(), k) != v for k, v in bench.PRESET.items())   # a preset entry differs, or it would not be one
    assert bench.PRESET_WHY in ' '.join(ap.format_help().split())               # and says why in --help
    a = ap.parse_args(['--no-zero-init', '--no-use-estimator', '--no-last-step', '--lr-drop-at', '5', '--hidden', '8', '--pretrain-steps', '0'])
    cfg = bench.settings(a)
    assert (cfg.hypernet.zero_init, cfg.use_estimator, cfg.trainer.last_step) == (False, False, False)   # no inverted booleans
    assert (cfg.trainer.lr_drop_at, cfg.hypernet.hidden, cfg.eval_interval) == (5, 8, bench.PRESET['eval_interval'])

# numpy's warnings on a tiny run's empty readings, which the bench in a process of its own printed unseen
@pytest.mark.filterwarnings('ignore:Mean of empty slice', 'ignore:invalid value encountered')
def test_bench_runs_with_tiny_settings_and_resumes_with_the_runs_own_settings(tmp_path, cli, bench):
    flags = ['--run-dir', tmp_path, '--eval-snakes', '4', '--final-snakes', '4', '--new-genomes', '2', '--max-steps', '30', '--report', '1']
    run = lambda *a: cli(*flags, *a, main=bench('hypernetwork').main)
    r = run('--generations', '2', '--population', '4', '--agents-each', '1', '--steps', '16', '--hidden', '4', '--chunk', '64',
              '--width', '32', '--pretrain-steps', '0', '--eval-maps', '1', '--eval-max-steps', '30', '--eval-interval', '1',
              '--no-zero-init', '--out', tmp_path/'final.json')
    assert r.returncode == 0, r.stderr
    for s in ('1. fitness', 'score versus evaluations', 'ratio', 'randomly initialised', 'control ES', 'takes adjacent food', 'ran into wall',
              'moved from where evolution started (init_policy)', '| food |', 'control ES mean   max | food', 'machine: {"cpu": '): assert s in r.stdout, r.stdout
    final = json.loads((tmp_path/'final.json').read_text())              # the figures the bench printed, as JSON
    assert final['config'] == json.loads(r.stdout.split('config: ', 1)[1].split(' (PRESET')[0]) and final['generations'] == 2
    assert final['config']['hypernet']['zero_init'] is False and final['agent_steps'] == 2 * 8 * 16 and len(final['curve']) == 3   # the start and each generation
    assert f"{final['pufferlib']['play']['adjacent_food']:.3f}" in r.stdout and final['pufferlib']['n'] + final['pufferlib']['censored'] == 4
    assert len(final['new_genomes']['scores']) == 2 and set(final['generation_seconds']) == {'replicator', 'control'}
    r = run('--generations', '3', '--control-only')
    assert r.returncode == 2 and 'control.safetensors exists' in r.stderr, r.stderr   # refused before any training
    with run_lock(tmp_path/'.lock'):                                    # another process is training in the folder
        r = run('--generations', '3', '--resume')
    assert r.returncode == 2 and 'in use by another process' in r.stderr and _meta(tmp_path)['generation'] == 2, r.stderr
    r = run('--generations', '3', '--resume')
    assert r.returncode == 0, r.stderr                                # the training flags come from the checkpoint
    assert '"zero_init": false' in r.stdout and "the checkpoint's, with the flags given" in r.stdout, r.stdout
    ran = [l for l in r.stdout.splitlines() if l.startswith(('replicator run:', 'control ES:'))]
    assert len(ran) == 2 and all('for generations 2-3' in l for l in ran), ran   # both runs resumed from their checkpoints
    curves = lambda *a: cli('--out', tmp_path/'runs.json', '--block', '2', *a, main=bench('hypernetwork_curves').main)
    r = curves(f'tiny={tmp_path}')
    assert r.returncode == 0, r.stderr
    tiny = json.loads((tmp_path/'runs.json').read_text())['tiny']
    assert tiny['generations'] == 3 and [b['generation'] for b in tiny['blocks']] == [0, 2] and len(tiny['curve']) == 4
    assert tiny['config']['hypernet']['zero_init'] is False and all(c['n'] == 2 * 4 and c['censored'] <= 8 for c in tiny['curve'])   # every snake scored, censored ones at their length
    from genome_lab.core import machine
    assert tiny['machine'] == machine()                                    # the kind of CPU the run was on
    r = curves(tmp_path)
    assert r.returncode == 2 and 'LABEL=RUN_DIR' in r.stderr, r.stderr

def test_replicator_step_is_scaled_by_the_estimators_held_out_r2(tmp_path):
    from genome_lab.evolution.replicator_run import ReplicatorTrainingLoop
    loop = ReplicatorTrainingLoop(ReplicatorConfig(trust_window=3, **SMALL))
    loop.history = [{'surrogate/r2': v} for v in (0.9, float('nan'), 0.5)]
    assert loop.trust(0.1) == pytest.approx(0.3)            # the last 3 generations, the missing one skipped
    assert loop.trust(-2.0) == 0 and loop.trust(float('nan')) == pytest.approx(0.5)
    loop.cfg.trust_window = 1
    assert loop.trust(0.2) == pytest.approx(0.2)              # this generation's alone
    loop.cfg.trust_window = 3
    with pytest.raises(ValueError, match='trust_window'): ReplicatorConfig(trust_window=-1)
    loop.history = []
    assert loop.trust(float('nan')) == 0                     # no evidence yet: no step
    before = {k: v.clone() for k, v in loop.pm.dist.state_dict().items()}
    row = loop.step()                                        # first generation: the estimator is not fitted, so no step
    assert row['surrogate/trust'] == 0 and row['replicator/kl'] == 0 and np.isfinite(row['replicator/entropy'])
    for k, v in loop.pm.dist.state_dict().items(): assert torch.equal(v, before[k]), k
    raw = ReplicatorTrainingLoop(ReplicatorConfig(use_estimator=False, **SMALL))
    row = raw.step()
    assert row['surrogate/trust'] == 1 and row['replicator/step'] == raw.cfg.dt and row['replicator/kl'] > 0   # measured fitness: the plain step dt
    assert not torch.equal(raw.pm.dist.state_dict()['vars'], before['vars'])   # stepped: mutation at least (16 steps may give every genome one fitness)

def test_the_surrogate_option_chooses_what_the_estimator_reads(tmp_path):
    from dataclasses import asdict
    from genome_lab.evolution.hypernetwork import probe_actions, PROBE_VIEWS
    from genome_lab.evolution.replicator_run import ReplicatorTrainingLoop, current_config
    from genome_lab.evolution.replicator import GPSurrogate, FitnessEstimator
    probe = train_replicator(ReplicatorConfig(generations=4, surrogate='probe', **SMALL), tmp_path/'probe', progress=False)
    assert isinstance(probe.est, GPSurrogate) and probe.est.fitted and np.isfinite(probe.history[-1]['surrogate/r2'])
    X, y = probe.est.data()
    assert X.shape == (16, 4 * PROBE_VIEWS) and torch.allclose(X.view(16, -1, 4).sum(-1), torch.ones(16, PROBE_VIEWS))
    z = torch.stack(probe.genomes)[-1]   # each genome's input: its two mirrored policies' probe actions, averaged
    mean = probe_actions(probe.pm.hn, probe.pm.develop_mean(z), probe.views)
    assert torch.allclose(probe.features(z), mean) and (X[-4:] - mean).abs().max() < 0.01   # the mirrored noise cancels to first order
    genome = ReplicatorTrainingLoop(ReplicatorConfig(generations=1, surrogate='genome', **SMALL))
    assert isinstance(genome.est, FitnessEstimator) and torch.equal(genome.features(z), z)
    stored = {k: v for k, v in asdict(probe.cfg).items() if k != 'surrogate'}   # a run from before the option
    assert current_config(stored)['surrogate'] == 'genome'
    with pytest.raises(ValueError, match='surrogate must be one of'): ReplicatorConfig(surrogate='gp')

def test_resume_takes_the_stored_settings(tmp_path, cli):
    run = lambda *a: cli('train-replicator', '--run-dir', tmp_path, '--no-progress', *a)
    assert run('--generations', '1', '--base-lr', '0.05', '--fitness', 'first', '--no-last-step', *TINY).returncode == 0
    r = run('--generations', '2', '--resume', '--base-lr', '0.2')
    assert r.returncode == 2 and 'other settings' in r.stderr   # a setting given must match the stored one
    r = run('--generations', '2', '--resume')                  # settings not given come from the checkpoint, not the defaults
    assert r.returncode == 0, r.stderr
    meta = _meta(tmp_path)
    assert meta['generation'] == 2 and meta['config']['trainer']['base_lr'] == 0.05 and meta['config']['fitness'] == 'first'
    assert meta['config']['trainer']['last_step'] is False

def _with_config(src, dst, **changes): # a copy of the checkpoint in `src` whose stored config has `changes` ({group: {name: value}} or {name: value})
    meta = _raw(src)
    for k, v in changes.items():
        if isinstance(v, dict): meta['state']['config'][k].update(v)
        else: meta['state']['config'][k] = v
    dst.mkdir()
    save_file(load_file(src/'checkpoint.safetensors'), dst/'checkpoint.safetensors', metadata={'replicator': json.dumps(meta)})
    return (dst/'checkpoint.safetensors').read_bytes()

def test_checkpoints_with_removed_settings_resume_at_todays_behaviour_else_refuse_and_keep_the_file(tmp_path, cli):
    run = lambda d, *a: cli('train-replicator', '--run-dir', d, '--no-progress', *a)
    assert run(tmp_path/'now', '--generations', '1', *TINY).returncode == 0
    _with_config(tmp_path/'now', tmp_path/'same', trainer=dict(base_decay=0.0), hypernet=dict(tied_codes=False), checkpoint_every=5)   # as an older version wrote them
    r = run(tmp_path/'same', '--generations', '2', '--resume')
    assert r.returncode == 0, r.stderr                                   # removed settings at the value that ran as today's code: dropped
    assert _meta(tmp_path/'same')['generation'] == 2 and 'base_decay' not in _meta(tmp_path/'same')['config']['trainer']
    for name, changes in (('base_decay', dict(trainer=dict(base_decay=0.05))), ('tied_codes', dict(hypernet=dict(tied_codes=True))),
                          ('fitness', dict(fitness='episode'))):
        before = _with_config(tmp_path/'now', tmp_path/name, **changes)
        r = run(tmp_path/name, '--generations', '2', '--resume')
        assert r.returncode == 2 and f'made with {name}=' in r.stderr and 'no longer has' in r.stderr and 'new --run-dir' in r.stderr, r.stderr
        assert (tmp_path/name/'checkpoint.safetensors').read_bytes() == before   # nothing stored is lost

def test_lr_drop_divides_both_learning_rates_once_at_its_generation_across_a_resume(tmp_path):
    from genome_lab.evolution.replicator_run import run_policy_es
    small = dict(SMALL, trainer=TrainerConfig(lr_drop_at=2, lr_drop=4.0, lr=3e-4, base_lr=0.1))
    lrs = lambda opt: [g['lr'] for g in opt.param_groups]
    loop = train_replicator(ReplicatorConfig(generations=2, **small), tmp_path, progress=False)
    assert lrs(loop.pm.trainer.opt) == [3e-4, 0.1]                          # generations 0 and 1: the full step
    for end in (4, 5):                                                      # resumed across the drop, then past it
        with warnings.catch_warnings():
            warnings.simplefilter('error', RuntimeWarning)                  # the same machine: no warning
            loop = train_replicator(ReplicatorConfig(generations=end, **small), tmp_path, resume=True, progress=False)
        assert lrs(loop.pm.trainer.opt) == pytest.approx([3e-4 / 4, 0.1 / 4])   # divided once, kept by the checkpoint
    _, es = run_policy_es(ReplicatorConfig(generations=3, **small), progress=False)
    assert lrs(es.opt) == pytest.approx([0.1 / 4])                          # the control gets the same schedule
    with pytest.raises(ValueError, match='lr_drop'): HypernetworkTrainer(loop.pm.hn, TrainerConfig(lr_drop=0))

def test_control_killed_mid_run_resumes_from_its_checkpoint_to_the_uninterrupted_result(tmp_path, monkeypatch):
    import genome_lab.evolution.replicator_run as H
    small = dict(SMALL, seed=3, trainer=TrainerConfig(lr_drop_at=3, lr_drop=4.0, lr=3e-4, base_lr=0.1))
    cfg = ReplicatorConfig(generations=5, **small)
    full, es_full = H.run_policy_es(cfg, progress=False)                   # uninterrupted, nothing stored
    calls, real = [], H.evaluate_population
    def dies_at_the_fourth(*args, **kw):
        calls.append(1)
        if len(calls) == 4: raise KeyboardInterrupt                         # killed during generation 3
        return real(*args, **kw)
    monkeypatch.setattr(H, 'evaluate_population', dies_at_the_fourth)
    with pytest.raises(KeyboardInterrupt): H.run_policy_es(cfg, tmp_path, every_s=0, progress=False)
    monkeypatch.setattr(H, 'evaluate_population', real)
    assert H.checkpoint_meta(tmp_path/H.CONTROL_FILE)['generation'] == 3    # the last checkpoint: generation 3 is lost
    assert H.stored_config(tmp_path) == cfg                                # a control-only folder gives its settings
    with pytest.raises(FileExistsError): H.run_policy_es(cfg, tmp_path, progress=False)
    with pytest.raises(ValueError, match='other settings'): H.run_policy_es(ReplicatorConfig(generations=5, **{**small, 'seed': 4}), tmp_path, resume=True)
    assert H.checkpoint_meta(tmp_path/H.CONTROL_FILE)['machine'] == H.machine()
    monkeypatch.setattr(H, 'machine', lambda: dict(cpu='another CPU', kernels='DEFAULT'))
    with pytest.warns(RuntimeWarning, match='will not repeat the uninterrupted run'):
        hist, es = H.run_policy_es(cfg, tmp_path, resume=True, progress=False)
    assert untimed(hist.to_dict('records')) == untimed(full.to_dict('records')) and len(hist) == 5
    assert {'charts/food', 'charts/died', 'seconds'} <= set(hist.columns) and (hist['charts/food'] >= 0).all() and hist['charts/died'].between(0, 1).all()
    assert torch.equal(es.theta, es_full.theta) and [g['lr'] for g in es.opt.param_groups] == pytest.approx([0.1 / 4])

def test_within_generation_bench_mode_adds_its_key(tmp_path):
    "bench/hypernetwork_decoder.py --within-only keeps --out's figures and adds the loop fitness's within-generation reliability."
    out = tmp_path/'decoder.json'; shutil.copy(ROOT/'nbs'/'measured'/'hypernetwork_decoder.json', out)
    before = json.loads(out.read_text())
    subprocess.run([sys.executable, ROOT/'bench'/'hypernetwork_decoder.py', '--within-only', '--loop-generations', '2', '--out', str(out)],
                   check=True, capture_output=True, text=True, timeout=600)
    after = json.loads(out.read_text())
    assert {k: v for k, v in after.items() if k != 'within_generation'} == {k: v for k, v in before.items() if k != 'within_generation'}
    rows = after['within_generation']['rows']
    assert [r['generation'] for r in rows] == [0, 1, 2] and all(-1 <= r['r'] <= 1 and r['probe_between_over_within'] > 0 for r in rows)
    assert len(after['within_generation']['loop_r2']) == 2
