"PPO training with PuffeRL: the `train-ppo` command (registration, lineage, resume), PBT with Ray Tune and the curve bench, at tiny budgets."
import json, math
import pytest, torch
from dataclasses import replace
from genome_lab.registry.store import Registry
from loop_states import same, by_name
from genome_lab.rl.training import checkpoint_meta, CHECKPOINT_FILE, PPOConfig, PPOHyper
from genome_lab.rl.ppo_run import train_ppo_cli
from genome_lab.rl.pbt import run_pbt, record_pbt, pbt_table, evaluation_ladder, reward_hacking_guard

TINY = ['--display', 'none', '--num-snakes', '32', '--width', '48', '--height', '32', '--num-food', '60',
        '--minibatch-size', '256', '--bptt-horizon', '16', '--eval-snakes', '8', '--eval-max-steps', '300']

def test_train_ppo_registers_every_kept_checkpoint_with_lineage_and_resumes(tmp_path, capsys):
    run, reg = tmp_path/'tiny', tmp_path/'registry'
    args = ['--run-dir', str(run), '--registry', str(reg), *TINY]
    assert train_ppo_cli([*args, '--total-timesteps', '1024', '--keep-every', '512']) == 0
    assert train_ppo_cli([*args, '--total-timesteps', '1024']) == 2            # the run exists: --resume it
    assert 'exists' in capsys.readouterr().err
    assert train_ppo_cli([*args, '--resume', '--total-timesteps', '2048']) == 0
    meta = checkpoint_meta(run/CHECKPOINT_FILE)
    assert meta['global_step'] == 2048 and [c['agent_steps'] for c in meta['curve']] == [512, 1024, 1536, 2048]
    registry = Registry(reg)
    genomes = [registry.genome(c['genome']) for c in meta['curve']]
    assert [g['parents'] for g in genomes[1:]] == [[dict(id=a['id'], relation='self-play')] for a in genomes[:-1]]
    assert genomes[0]['parents'] == [] and all(g['type'] == 'rl' and g['source'] == 'ppo' for g in genomes)
    assert [json.loads(g['description'])['agent_steps'] for g in genomes] == [512, 1024, 1536, 2048]
    assert registry.policy(genomes[-1]['id']).config['hidden'] == 128
    assert train_ppo_cli([*args, '--resume', '--num-snakes', '40']) == 2      # a changed setting is refused
    assert 'other settings (num_snakes 32 there, 40 here)' in capsys.readouterr().err

def test_train_ppo_refuses_a_bad_value_before_making_its_run_folder(tmp_path, capsys):
    run = tmp_path/'bad'   # issue 46: the folder was made first, so a corrected command then said "exists: --resume it"
    assert train_ppo_cli(['--run-dir', str(run), '--registry', str(tmp_path/'registry'), *TINY, '--num-snakes', '0']) == 2
    assert '0 learner snakes' in capsys.readouterr().err and not run.exists()

def test_finetune_starts_from_the_registry_genome(tmp_path):
    reg = tmp_path/'registry'
    assert train_ppo_cli(['--run-dir', str(tmp_path/'ft'), '--registry', str(reg), *TINY, '--total-timesteps', '512',
                          '--start', 'PufferSnake']) == 0
    registry = Registry(reg)
    puffer = registry.by_name('PufferSnake')
    [kept] = checkpoint_meta(tmp_path/'ft'/CHECKPOINT_FILE)['curve']
    assert registry.genome(kept['genome'])['parents'] == [dict(id=puffer, relation='finetune')]

def test_pbt_ranked_by_rated_games_logs_exploits_into_policy_ops_and_ranks_members_on_a_ladder(tmp_path):
    cfg = PPOConfig(num_snakes=32, width=48, height=32, num_food=60, eval_snakes=8, eval_max_steps=2000,
                    hyper=PPOHyper(minibatch_size=256, bptt_horizon=16))
    small = dict(steps=100, meetings=1, agents_per_genome=3, settings=dict(width=48, height=32, num_food=60))
    res = run_pbt(cfg, members=2, iterations=2, steps=6144, storage=tmp_path/'tune', seed=0, rank_by='rating',
                  rating=small)
    assert len(res.rows) == 4 and len(res.events) == len(res.pbt_log) == 1    # 2 members: the worse copies the better once
    first = res.rows[res.rows.version == 1].set_index('member')
    assert first.rating[res.events.parent_member.iloc[0]] > first.rating[res.events.member.iloc[0]]   # by rated games
    assert (res.rows.rating_sigma > 0).all()
    assert res.rows[['train_score', 'c_score', 'train_return']].notna().all(axis=None)   # every iteration reports its own episodes
    ev = res.events.iloc[0]
    assert ev.parent_member != ev.member and ev.parent_version == 1 and ev.version == 2
    registry = Registry(tmp_path/'registry')
    ops = record_pbt(registry, res, 'pbt-test')
    assert len(ops) == 4 and ops.genome.notna().sum() == 2 and set(ops.event) == {'start', 'exploit', 'train'}
    assert len(pbt_table(registry)) == 4
    ladder, tau = evaluation_ladder({g: registry.policy(g) for g in ops.genome.dropna()}, seeds=(101, 102), snakes=8, max_steps=2000)
    tied = ladder.score_a.nunique() == 1 or ladder.score_b.nunique() == 1   # Kendall's tau is undefined on a tie
    assert list(ladder['rank']) == [1, 2] and (-1 <= tau <= 1 or (tied and math.isnan(tau))), (ladder, tau)
    guard = reward_hacking_guard(res.rows)
    assert len(guard) == 2 and (guard.max_log_gap < 1e-3).all()

def test_curve_bench_runs_with_tiny_settings_and_resumes_with_the_runs_own_settings(tmp_path, cli, bench):
    out = tmp_path/'curve.json'
    run = lambda *a: cli('--run-dir', tmp_path/'run', '--registry', tmp_path/'registry', '--speed-steps', '2048', '--out', out, *a,
                         main=bench('ppo_curve').main)
    tiny = [a for a in TINY if a not in ('--display', 'none')]
    r = run(*tiny, '--total-timesteps', '1024', '--keep-every', '512')
    assert r.returncode == 0, r.stderr[-2000:]
    r = run('--resume', '--total-timesteps', '1536')
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(out.read_text())
    assert [c['agent_steps'] for c in got['curve']] == [512, 1024, 1536] and got['config']['num_snakes'] == 32
    assert len(got['ratios']) == 3 and all(r['ratio_matched'] is None for r in got['ratios'])   # below the replicator's first evaluation
    assert all(got['speed'][k] > 0 for k in ('puffer_train', 'puffer_collect', 'policy_only', 'arena_random'))

class Killed(Exception): "Stands for a SIGKILL at one point of a run."

def test_a_kill_while_keeping_leaves_the_registry_and_the_checkpoint_in_agreement(tmp_path, monkeypatch):
    """Issue 30: a kept genome is registered only after the checkpoint holding it is saved (`pending`, then `commit`);
    a resume registers the checkpoint's own weights."""
    import torch
    import genome_lab.core as core, genome_lab.rl.ppo_run as T   # PPORun calls register_kept from there
    from genome_lab.core import load_state
    run, reg = tmp_path/'tiny', tmp_path/'registry'
    args = ['--run-dir', str(run), '--registry', str(reg), *TINY, '--keep-every', '512']
    def agreement():
        st = load_state(run/CHECKPOINT_FILE, 'ppo')
        with Registry(reg) as r: held = {i for i in r.ids() if r.genome(i)['source'] == 'ppo'}
        named = [c['genome'] for c in st['curve']]
        return named, held, st
    def kill_once(module, name, when):   # make module.<name> raise Killed the first time `when(*args)` holds
        real, fired = getattr(module, name), []
        def f(*a, **kw):
            if not fired and when(*a): fired.append(1); raise Killed(name)
            return real(*a, **kw)
        monkeypatch.setattr(module, name, f)
        return real
    # killed while the keep at 1024 agent-steps writes its checkpoint
    real_save = kill_once(core, 'save_state', lambda path, key, state: state['global_step'] == 1024)
    with pytest.raises(Killed): train_ppo_cli([*args, '--total-timesteps', '2048'])
    named, held, _ = agreement()
    assert held == set(named) and len(named) == 1   # the genome of the cut keep is in neither
    monkeypatch.setattr(core, 'save_state', real_save)
    real_register = kill_once(T, 'register_kept', lambda registry, kept: kept['id'].endswith('-1024'))
    with pytest.raises(Killed): train_ppo_cli([*args, '--resume', '--total-timesteps', '2048'])
    named, held, st = agreement()
    assert len(named) == 2 and held == set(named[:1]) and st['pending']   # saved, then killed before registering
    monkeypatch.setattr(T, 'register_kept', real_register)
    assert train_ppo_cli([*args, '--resume', '--total-timesteps', '2048']) == 0
    with Registry(reg) as r:
        _, params = r.load(named[1])
        assert all(torch.equal(params[k], v) for k, v in st['pending']['genomes'][0]['params'].items())
        assert r.genome(named[1])['parents'] == [dict(id=named[0], relation='self-play')]
        assert [r.genome(i)['name'] for i in named] == ['Tiny-ppo1', 'Tiny-ppo2']
    named, held, _ = agreement()
    assert held == set(named) and len(named) == 4

def test_train_ppo_refuses_a_run_another_process_holds(tmp_path, capsys):
    "Issue 30: two `train-ppo` on one run (a `--resume` beside a running one) fail clearly instead of losing results."
    from genome_lab.core import run_lock
    args = ['--run-dir', str(tmp_path/'run'), '--registry', str(tmp_path/'registry'), *TINY, '--total-timesteps', '512']
    with run_lock(tmp_path/'run'/'.lock'):   # the other process
        assert train_ppo_cli(args) == 2 and train_ppo_cli([*args, '--resume']) == 2
    assert capsys.readouterr().err.count('in use by another process') == 2
    assert not (tmp_path/'run'/CHECKPOINT_FILE).exists()

def test_a_run_resumed_from_its_checkpoint_goes_on_exactly_as_an_uninterrupted_one(tmp_path):
    """Issue 48: `PPORun` on the loop protocol, in self-play on fresh tournament maps (the recipe's) and in league play:
    4 steps at once, and 2 steps, a checkpoint, a new run from it and 2 more (or 3 more, the first of them killed after
    its checkpoint, before its genome was registered), end in the same state to the bit (weights, Adam, the schedule,
    counters, torch's random state, the maps' game, the league's records, the kept genomes)."""
    from genome_lab.core import advance, load_state, save_state
    from genome_lab.rl.training import finetune_recipe
    from genome_lab.rl.ppo_run import PPORun
    maps = dict(maps=2, eval_snakes=4, eval_max_steps=100, reset_every=100, device='cpu')
    league = replace(finetune_recipe('PufferSnake', **maps, keep_every=1152), mode='league', learner_share=0.5,
                     opponents='PufferSnake,HeuristicSnake', swap_every=32, hyper=PPOHyper(learning_rate=1e-4,
                     clip_coef=0.2, minibatch_size=576))
    for name, cfg in (('self-play', finetune_recipe('PufferSnake', **maps, keep_every=2304)), ('league', league)):
        states = {}
        for how, cuts in (('whole', [4]), ('cut', [2, 2]), ('killed', [2, 'kill', 1])):
            reg, d = Registry(tmp_path/name/how/'registry'), tmp_path/name/how/'run'
            for k in cuts:
                run = PPORun(cfg, d, reg, display=None, resume=(d/CHECKPOINT_FILE).exists())
                if k == 'kill':   # a step keeps, its checkpoint is saved, and the run dies before registering the genome
                    run.step(); save_state(run.path, 'ppo', run.state_dict()); assert run.pending
                else: advance(run, run.path, 'ppo', steps=k, every_s=1e9)
                run.close()
            states[how] = by_name(load_state(run.path, 'ppo'), reg)
            assert [c['genome'] for c in states[how]['curve']] == ['PufferSnake-ppo1', 'PufferSnake-ppo2',
                                                                   'PufferSnake-ppo3', 'PufferSnake-ppo4']
        same(states['whole'], states['cut'])
        assert states['whole']['env']['step_count'] == 4 * 64 and states['whole']['pending'] is None

def test_the_season_game_and_map_the_recipe_reads_are_the_seasons():
    "The recipe trains on a season's snake game: its snakes, steps and map are the snake arena's and SeasonConfig's."
    from genome_lab.arenas.arena import SnakeArena
    from genome_lab.ecosystem.seasons import SeasonConfig
    from genome_lab.rl.training import finetune_recipe
    s, cfg = SeasonConfig(), finetune_recipe(device='cpu')
    own, game = SnakeArena.season, SnakeArena.game_settings   # the season plays the arena's own map
    assert (cfg.num_snakes, cfg.reset_every) == (s.genomes_per_game * own.agents, own.steps) == (18, 1000) and not own.settings
    assert (cfg.width, cfg.height, cfg.num_food) == (game['width'], game['height'], game['num_food'])
    assert cfg.max_snake_length == game['max_snake_length']

def test_the_multiprocessing_backend_trains_and_resumes_on_fresh_maps(tmp_path):
    "PufferLib's Multiprocessing backend (the recipe's on CUDA), on the CPU with 2 worker processes of `TournamentMaps`."
    from genome_lab.core import save_state, load_state
    from genome_lab.rl.training import finetune_recipe
    from genome_lab.rl.ppo_run import PPORun
    cfg = finetune_recipe('', device='cpu', maps=2, backend='multiprocessing', workers=2, reset_every=100, keep_every=10**9)
    run = PPORun(cfg, display=None)
    try:
        assert type(run.vecenv).__name__ == 'Multiprocessing' and run.vecenv.num_agents == 36
        run.step(); run.step()
        save_state(tmp_path/'mp.safetensors', 'ppo', run.state_dict())
        weights = {k: v.clone() for k, v in run.model.named_parameters()}
    finally: run.close()
    again = PPORun(cfg, display=None)
    try:
        again.load_state_dict(load_state(tmp_path/'mp.safetensors', 'ppo'))
        assert all(torch.equal(v, weights[k]) for k, v in again.model.named_parameters())
        assert again.step()['agent_steps'] == 3 * 2304
    finally: again.close()

def test_best_snake_is_the_best_rated_active_snake_puffer_rl_can_train(tmp_path):
    from genome_lab.arenas.arena import arena_version
    from genome_lab.registry.store import seed_founders
    from genome_lab.registry.sqlite_store import utcnow
    from genome_lab.rl.ppo_producer import best_snake
    reg = Registry(tmp_path/'registry')
    f = seed_founders(reg)
    assert best_snake(reg) == f['PufferSnake']   # no ratings yet
    with reg.transaction() as db:   # HeuristicSnake rated first: not a network PuffeRL trains
        db.executemany('INSERT INTO ratings VALUES (?,?,?,?,?,?)',
                       [(f['HeuristicSnake'], arena_version('snake'), 60.0, 2.0, 30, utcnow()),
                        (f['PufferSnake'], arena_version('snake'), 40.0, 2.0, 30, utcnow())])
    assert best_snake(reg) == f['PufferSnake']

def test_the_ppo_producer_fine_tunes_the_best_snake_and_offers_on_schedule(tmp_path):
    """The `ppo` loop producer: the fine-tune of PufferSnake offers every `ppo_steps` of its agent-steps (names
    `PufferSnake-ppoK`, a self-play chain), the learner from scratch takes every k-th step and offers too."""
    from genome_lab.registry.store import seed_founders
    from genome_lab.ecosystem.seasons import work
    from genome_lab.rl.ppo_producer import PPOSettings
    reg = Registry(tmp_path/'registry')
    puffer = seed_founders(reg)['PufferSnake']
    s = PPOSettings(ppo_maps=2, ppo_steps=4608, ppo_scratch_every=3, ppo_device='cpu', ppo_mode='self-play',
                    ppo_qualifier_games=0)   # the schedule: league play and the qualifier are 51_ppo_producer's
    first = work(reg, 'ppo', s, offers=1)
    assert first['steps'] == 2 and [reg.genome(i)['name'] for i in first['offered']] == ['PufferSnake-ppo1']
    out = work(reg, 'ppo', s, offers=2)   # steps 3 (scratch), 4, 5, 6 (scratch): the fine-tune's second offer, the scratch's first
    names = [reg.genome(i)['name'] for i in out['offered']]
    assert out['steps'] == 4 and names == ['PufferSnake-ppo2', 'PPOScratch-ppo1'], names
    assert reg.genome(first['offered'][0])['parents'] == [dict(id=puffer, relation='finetune')]
    assert reg.genome(out['offered'][0])['parents'] == [dict(id=first['offered'][0], relation='self-play')]
    assert out['metrics']['agent_steps'] == 6 * 2304 and 'scratch/charts/SPS' in out['metrics']
