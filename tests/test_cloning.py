"""Behaviour cloning: the sequence forward, training, DAgger labels, lineage, fine-tuning and merging."""
import json
from dataclasses import replace
import numpy as np
import pytest
import torch
from genome_lab.players.cloning import (CLONE_PRESETS, sequence_logits, session_sequences, split_by_session, train_clone, clone,
                                dagger_sessions, register_clone, training_record, finetune, merge_genomes, shared_base,
                                ties_params, average_params, contributions)
from genome_lab.arenas.policies import LinearLSTM, load_pufferlib_policy, pufferlib_config
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.sqlite_store import RegistryError
from genome_lab.arenas.evaluation import evaluate
from genome_lab.players.sessions import load_sessions, record_bot_sessions
from hostile import upload
from genome_lab.core import ProducerContext

torch.set_num_threads(1)
KW = dict(width=48, height=48, num_snakes=12, num_food=120)


@pytest.fixture(scope='module')
def teacher_sessions(tmp_path_factory):
    root = tmp_path_factory.mktemp('teacher')
    return load_sessions(root, record_bot_sessions(root, ['puffer_greedy'], per_style=12, steps=150, seed=0, progress=False, **KW))


@pytest.fixture()
def reg(tmp_path):
    r = Registry(tmp_path/'reg'); r.founders = seed_founders(r); return r


def test_sequence_forward_matches_stepping():
    pol = LinearLSTM(968, 4, hidden=16, encoding='onehot8')
    obs = torch.randint(0, 8, (2, 9, 121), dtype=torch.int8)
    state = (torch.randn(2, 16), torch.randn(2, 16))
    seq, (h, c) = sequence_logits(pol, obs, state)
    st, outs = state, []
    for t in range(9):
        lg, st = pol(obs[:, t], st); outs.append(lg)
    assert torch.allclose(seq, torch.stack(outs, 1), atol=1e-5) and torch.allclose(c, st[1], atol=1e-5)


def test_split_is_by_session(teacher_sessions):
    tr, va = split_by_session(teacher_sessions, 0.25, seed=1)
    assert len(va) == 3 and not {s.id for s in tr} & {s.id for s in va} and len(tr) + len(va) == 12


def test_cloning_learns_the_teacher(teacher_sessions):
    cfg = replace(CLONE_PRESETS['tiny'], epochs=15, hidden=64)
    pol, hist, _ = clone(teacher_sessions, cfg, progress=False)
    assert hist['losses/bc'].iloc[-1] < hist['losses/bc'].iloc[0] - 0.2
    assert hist['val/charts/accuracy'].iloc[-1] > 0.5  # chance is 0.25


def test_dagger_labels_are_the_teachers_actions(tmp_path):
    "Every label is what the teacher, run beside the student on the same views, would have done."
    teacher, student = load_pufferlib_policy('snake'), LinearLSTM(**pufferlib_config('snake'))
    ids = dagger_sessions(student, teacher, tmp_path, steps=40, seed=0, progress=False, **KW)
    sessions = load_sessions(tmp_path, ids)
    obs = np.stack([s.obs() for s in sessions], 1)  # (T, n, 11, 11)
    state, labels = teacher.initial_state(len(sessions)), []
    for t in range(len(obs)):
        a, state = teacher.act(obs[t], state); labels.append(a)
    assert np.array_equal(np.stack([s.frame.label.to_numpy() for s in sessions], 1), np.stack(labels))
    assert all(s.meta['style'] == 'dagger' and s.player == 'bot:puffer_greedy' for s in sessions)
    assert any((s.frame.label != s.frame.action).any() for s in sessions)  # the untrained student acts otherwise


def test_dagger_round_in_clone(teacher_sessions, tmp_path):
    cfg = replace(CLONE_PRESETS['tiny'], epochs=1, hidden=32, dagger_rounds=1, dagger_steps=30, dagger_epochs=1, select_seeds=(5,))
    pol, hist, extra = clone(teacher_sessions, cfg, teacher=load_pufferlib_policy('snake'), dagger_root=tmp_path, progress=False, **KW)
    assert list(hist.phase) == ['bc', 'dagger 1'] and len(extra) == KW['num_snakes']
    # the iterate kept is the one with the best selection score (greedy evaluation is deterministic)
    kept = evaluate(pol, 'snake', seed=5, progress=False, **KW).episodes.score.mean()
    assert kept == pytest.approx(hist['select/score'].max())
    with pytest.raises(ValueError, match='teacher'): clone(teacher_sessions, cfg, progress=False)


def test_register_lineage_and_contributions(reg, teacher_sessions):
    pol = LinearLSTM(**pufferlib_config('snake'))
    g = register_clone(reg, pol, teacher_sessions[:5], name='C')
    row = reg.genome(g.id)
    assert row['type'] == 'behavioral' and row['parents'] == [dict(id='bot:puffer_greedy', relation='player')]
    assert sorted(training_record(row['description'])['sessions']['bot:puffer_greedy']) == sorted(s.id for s in teacher_sessions[:5])
    assert contributions(reg).loc['bot:puffer_greedy', 'C'] == 5


def test_finetune_is_a_hybrid_of_rl_genome_and_player(reg, teacher_sessions):
    base = reg.founders['PufferSnake']
    g, pol, hist = finetune(reg, base, teacher_sessions[:6], replace(CLONE_PRESETS['tiny'], epochs=1, lr=1e-3), progress=False)
    row = reg.genome(g.id)
    assert row['type'] == 'hybrid'
    assert row['parents'] == [dict(id=base, relation='finetune'), dict(id='bot:puffer_greedy', relation='player')]
    assert not torch.equal(reg.load(g.id)[1]['encoder.weight'], reg.load(base)[1]['encoder.weight'])
    with pytest.raises(RegistryError, match='linear_lstm'): finetune(reg, reg.founders['HeuristicSnake'], teacher_sessions, CLONE_PRESETS['tiny'])


def test_merges_need_a_shared_base(reg, teacher_sessions):
    base = reg.founders['PufferSnake']
    cfg = replace(CLONE_PRESETS['tiny'], epochs=1, lr=1e-3)
    a, *_ = finetune(reg, base, teacher_sessions[:4], cfg, name='A', progress=False)
    b, *_ = finetune(reg, base, teacher_sessions[4:8], replace(cfg, seed=1), name='B', progress=False)
    assert shared_base(reg, [a.id, b.id]) == base
    avg = merge_genomes(reg, [a.id, b.id], 'average', weights=[1, 3])
    pa, pb, pm = reg.load(a.id)[1], reg.load(b.id)[1], reg.load(avg.id)[1]
    assert torch.allclose(pm['actor.weight'], 0.25*pa['actor.weight'] + 0.75*pb['actor.weight'], atol=1e-6)
    ties = merge_genomes(reg, [a.id, b.id], 'ties', density=0.1)
    assert [p['relation'] for p in reg.genome(ties.id)['parents']] == ['merge', 'merge']
    # a merge of merges still finds the base; scratch genomes and other architectures are refused
    assert shared_base(reg, [ties.id, a.id]) == a.id and shared_base(reg, [ties.id, base]) == base
    scratch = register_clone(reg, LinearLSTM(**pufferlib_config('snake')), teacher_sessions[:2], name='S')
    for ids in ([scratch.id, a.id], [base, reg.founders['HeuristicSnake']], [a.id, a.id]):
        with pytest.raises(RegistryError): merge_genomes(reg, ids)
    n = len(reg.ids())
    with pytest.raises(RegistryError, match='share no base'): merge_genomes(reg, [scratch.id, b.id], 'average')
    assert len(reg.ids()) == n


def test_ties_steps():
    base = {'w': torch.zeros(6)}
    t1 = {'w': torch.tensor([4., -1., 0.5, 3., 0., -2.])}
    t2 = {'w': torch.tensor([2., 2., -0.1, -1., 0., -4.])}
    # density 0.5: t1 keeps 4, 3, -2; t2 keeps 2, 2, -4 -> signs +, +, 0, +, 0, - -> disjoint means
    out = ties_params(base, [t1, t2], density=0.5)['w']
    assert torch.allclose(out, torch.tensor([3., 2., 0., 3., 0., -3.]))
    assert torch.allclose(ties_params(base, [t1, t2], density=0.5, lam=0.5)['w'], out * 0.5)
    assert torch.allclose(average_params([t1, t2], [1, 1])['w'], (t1['w'] + t2['w']) / 2)
    with pytest.raises(ValueError): ties_params(base, [t1], density=0)


@pytest.fixture
def run_bench(cli, bench):
    return lambda *flags: cli('--preset', 'tiny', '--width', '48', '--height', '48', '--snakes', '12', '--food', '120', '--steps', '80',
                              '--epochs', '1', '--max-steps', '300', *flags, main=bench('cloning').main)


def test_bench_runs_tiny(tmp_path, run_bench):
    r = run_bench('--record-seeds', '1', '--eval-seeds', '2', '3', '--window', '40', '120', '--json', str(tmp_path/'c.json'))
    assert r.returncode == 0, r.stderr
    for protocol in ('first episodes', 'continuous'):
        assert f'ratio clone/teacher ({protocol}):' in r.stdout and f'{protocol:15s} teacher  score' in r.stdout
    m = json.loads((tmp_path/'c.json').read_text())
    assert m['eval_seeds'] == [2, 3] and m['record_seeds'] == [1] and m['window'] == [40, 120]
    first = {s['policy']: s for s in m['scores'] if s['protocol'] == 'first episodes'}
    assert len(first['clone']['per_map']) == 2 and first['clone']['n'] + first['clone']['censored'] == 24
    assert m['ratio']['first episodes'] == pytest.approx(first['clone']['mean'] / first['teacher']['mean'])


def test_bench_refuses_to_evaluate_on_training_maps(run_bench):
    r = run_bench('--record-seeds', '1', '2', '--eval-seeds', '2', '5')
    assert r.returncode == 2 and 'evaluation seeds [2] are maps the clone trains on' in r.stderr


def test_hybrids_producer_guards_each_player(reg, monkeypatch):
    """The newest player left after one step (no training sequence) and the next newest's fine-tune fails: both are
    skipped and reported, and the hybrid is made from the player before them."""
    import genome_lab.players.cloning as cl
    ivy = upload(reg.root, 'ivy', 40, '2030-01-01T00:00:00')
    upload(reg.root, 'zed', 40, '2030-01-02T00:00:00')
    quit = upload(reg.root, 'quitter', 1, '2030-01-03T00:00:00')
    real = cl.finetune
    def finetune(reg_, base, sessions, *a, **kw):
        if sessions[0].player == 'zed': raise RuntimeError("zed's fine-tune failed")
        return real(reg_, base, sessions, *a, **kw)
    monkeypatch.setattr(cl, 'finetune', finetune)
    ctx = ProducerContext(reg, 1, cl.HybridSettings(hybrid_epochs=1), reg.root/'work')
    with pytest.warns(UserWarning, match='hybrids: skipped 2'): ids = cl.produce_hybrids(ctx)
    assert len(ids) == 1 and reg.genome(ids[0])['type'] == 'hybrid'
    assert training_record(reg.genome(ids[0])['description'])['sessions'] == {'ivy': [ivy]}
    report = json.loads((reg.root/'work'/'hybrids.skipped.json').read_text())
    assert [s['input'] for s in report['skipped']] == [quit, 'zed'], report
    assert 'too short' in report['skipped'][0]['reason'] and "zed's fine-tune failed" in report['skipped'][1]['reason']
