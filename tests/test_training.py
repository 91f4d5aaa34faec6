"PPO training with PuffeRL: the `train-ppo` command (registration, lineage, resume), PBT with Ray Tune and the curve bench, at tiny budgets."
import json, math, os, subprocess, sys
from pathlib import Path
import pytest
from genome_lab.registry import Registry
from genome_lab.training import (train_ppo_cli, checkpoint_meta, CHECKPOINT_FILE, PPOConfig, PPOHyper, run_pbt, record_pbt,
                                 policy_ops, evaluation_ladder, reward_hacking_guard)

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
    assert len(policy_ops(registry)) == 4
    ladder, tau = evaluation_ladder({g: registry.policy(g) for g in ops.genome.dropna()}, seeds=(101, 102), snakes=8, max_steps=2000)
    tied = ladder.score_a.nunique() == 1 or ladder.score_b.nunique() == 1   # Kendall's tau is undefined on a tie
    assert list(ladder['rank']) == [1, 2] and (-1 <= tau <= 1 or (tied and math.isnan(tau))), (ladder, tau)
    guard = reward_hacking_guard(res.rows)
    assert len(guard) == 2 and (guard.max_log_gap < 1e-3).all()

def test_curve_bench_runs_with_tiny_settings_and_resumes_with_the_runs_own_settings(tmp_path):
    out, env = tmp_path/'curve.json', {**os.environ, 'OMP_NUM_THREADS': '1'}
    bench = [sys.executable, Path(__file__).resolve().parent.parent/'bench'/'ppo_curve.py', '--run-dir', tmp_path/'run',
             '--registry', tmp_path/'registry', '--speed-steps', '2048', '--out', out]
    tiny = [a for a in TINY if a not in ('--display', 'none')]
    r = subprocess.run(bench + [*tiny, '--total-timesteps', '1024', '--keep-every', '512'], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run(bench + ['--resume', '--total-timesteps', '1536'], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(out.read_text())
    assert [c['agent_steps'] for c in got['curve']] == [512, 1024, 1536] and got['config']['num_snakes'] == 32
    assert len(got['ratios']) == 3 and all(r['ratio_matched'] is None for r in got['ratios'])   # below the replicator's first evaluation
    assert all(got['speed'][k] > 0 for k in ('puffer_train', 'puffer_collect', 'policy_only', 'arena_random'))

class Killed(Exception): "Stands for a SIGKILL at one point of a run."

def test_a_kill_while_keeping_leaves_the_registry_and_the_checkpoint_in_agreement(tmp_path, monkeypatch):
    """Issue 30: a genome is registered only after the checkpoint naming it is saved; a resume registers the
    checkpoint's own weights."""
    import torch
    from genome_lab.core import load_checkpoint
    from genome_lab.training import PPORun, snake_model, to_linear_lstm
    run, reg = tmp_path/'tiny', tmp_path/'registry'
    args = ['--run-dir', str(run), '--registry', str(reg), *TINY, '--keep-every', '512']
    def agreement():
        meta, tensors = load_checkpoint(run/CHECKPOINT_FILE, 'ppo')
        with Registry(reg) as r: held = {i for i in r.ids() if r.genome(i)['source'] == 'ppo'}
        return [c['genome'] for c in meta['curve']], held, tensors
    def kill_once(name, when):   # make PPORun.<name> raise Killed the first time `when(self, *args)` holds
        real, fired = getattr(PPORun, name), []
        def f(self, *a, **kw):
            if not fired and when(self, *a): fired.append(1); raise Killed(name)
            return real(self, *a, **kw)
        monkeypatch.setattr(PPORun, name, f)
        return real
    # killed while the keep at 1024 agent-steps writes its checkpoint
    real_save = kill_once('save', lambda self, *a: self.curve and self.curve[-1]['agent_steps'] == 1024)
    with pytest.raises(Killed): train_ppo_cli([*args, '--total-timesteps', '2048'])
    named, held, _ = agreement()
    assert held == set(named) and len(named) == 1   # the genome of the cut keep is in neither
    monkeypatch.setattr(PPORun, 'save', real_save)
    real_register = kill_once('_register', lambda self, row, *a: row['agent_steps'] == 1024)
    with pytest.raises(Killed): train_ppo_cli([*args, '--resume', '--total-timesteps', '2048'])
    named, held, tensors = agreement()
    assert len(named) == 2 and held == set(named[:1])   # saved, then killed before registering
    monkeypatch.setattr(PPORun, '_register', real_register)
    assert train_ppo_cli([*args, '--resume', '--total-timesteps', '2048']) == 0
    model = snake_model()
    with torch.no_grad():
        for k, v in model.named_parameters(): v.copy_(tensors[f'model.{k}'])
    expected = to_linear_lstm(model).state_dict()
    with Registry(reg) as r:
        _, params = r.load(named[1])
        assert all(torch.equal(params[k], expected[k]) for k in expected)   # the weights the run continued from
        assert r.genome(named[1])['parents'] == [dict(id=named[0], relation='self-play')]
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
