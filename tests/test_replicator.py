"""Replicator dynamics: convergence to a known optimum, two equal peaks kept, weights a distribution, state round trips,
bad inputs, the fitness estimator's held-out R^2 and uncertainty, determinism."""
import math
import pytest
import torch
from safetensors.torch import save as st_save, load as st_load
from genome_lab.evolution.replicator import (LatentDistribution, GaussianMixture, ParticleDistribution, FitnessEstimator, make_distribution,
                                   distribution_from_state_dict, evolve, replicate, standardise_fitness, systematic_resample)

torch.set_num_threads(1)
KINDS = {'particles': dict(particles=512), 'mixture': dict(components=12)}
OPT, A, B = torch.tensor([2.0, -1.5]), torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 0.0])
def quadratic(x): return -((x - OPT) ** 2).sum(1)
def bimodal(x): return torch.exp(-((x - A) ** 2).sum(1) / 2) + torch.exp(-((x - B) ** 2).sum(1) / 2)


@pytest.mark.parametrize('kind', KINDS)
def test_converges_on_a_quadratic(kind):
    d = make_distribution(kind, 2, diffusion=0.002, seed=0, **KINDS[kind])
    start = float((d.mean() - OPT).norm())
    r = evolve(d, quadratic, 60, 128, 0.5, seed=0, snapshots=(60,))
    assert start > 2
    assert float((r.means[-1] - OPT).norm()) < 0.25
    assert float((r.snapshots[60] - OPT).norm(dim=1).min()) < 0.25
    assert r.history.mean_fitness.iloc[-5:].mean() > r.history.mean_fitness.iloc[:5].mean() + 3
    assert r.history.entropy.iloc[-1] < r.history.entropy.iloc[0] - 1


@pytest.mark.parametrize('kind', KINDS)
def test_keeps_two_equal_peaks(kind):
    d = make_distribution(kind, 2, init_std=1.5, diffusion=0.002, seed=0, **KINDS[kind])
    r = evolve(d, bimodal, 60, 128, 0.5, seed=0)
    x = d.sample(4000, torch.Generator().manual_seed(7))
    for c in (A, B): assert float(((x - c).norm(dim=1) < 1.2).float().mean()) > 0.15
    assert r.history.entropy.min() > math.log(2) + math.log(2 * math.pi * math.e * 0.05 ** 2)
    assert r.history.mean_fitness.iloc[-1] > 0.9  # both populations sit on a peak (height 1)


@pytest.mark.parametrize('kind', KINDS)
def test_weights_stay_a_distribution(kind):
    d = make_distribution(kind, 3, seed=1, **KINDS[kind])
    g = torch.Generator().manual_seed(0)
    for t in range(30):
        x = d.sample(64, g)
        f = torch.randn(64, generator=g) * 10 ** (t % 7 - 3)
        f[0] = 1e6 * (-1) ** t  # outliers of both signs
        st = d.update(x, f, 2.0)
        assert torch.isfinite(d.weights).all() and (d.weights >= 0).all()
        assert abs(float(d.weights.sum()) - 1) < 1e-5
        assert math.isfinite(st['entropy']) and 1 <= st['ess'] <= len(d.weights) + 1e-3


def test_selection_is_scale_free_and_unreached_types_keep_their_share():
    w = replicate(torch.full((4,), 0.25), torch.tensor([-1., 0., 1., 5.]), torch.tensor([True, True, True, False]), 0.5)
    assert w[3] == pytest.approx(0.25) and w[2] / w[1] == pytest.approx(math.exp(0.5), rel=1e-5)
    for kind in KINDS:
        d1, d2 = make_distribution(kind, 2, seed=3, **KINDS[kind]), make_distribution(kind, 2, seed=3, **KINDS[kind])
        x = d1.sample(50, torch.Generator().manual_seed(0))
        d1.update(x, quadratic(x), 0.5); d2.update(x, 1000 * quadratic(x) - 7, 0.5)
        for k, v in d1.state_dict().items(): assert torch.allclose(v.double(), d2.state_dict()[k].double(), atol=1e-5), k
    assert torch.equal(standardise_fitness(torch.full((3,), 2.0)), torch.zeros(3))


def test_fitness_reaches_the_nearest_particle():
    d = ParticleDistribution(dim=2, particles=4, diffusion=0.0, seed=0, ess_frac=0.0)
    d.x = torch.tensor([[0., 0.], [5., 0.], [0., 5.], [5., 5.]])
    g = torch.tensor([[0.1, 0.], [4.9, 0.2], [0., 0.]])  # not the particles themselves; none near particles 2 and 3
    d.update(g, torch.tensor([3., 1., 3.]), 1.0)
    assert d.w[2] == pytest.approx(0.25) and d.w[3] == pytest.approx(0.25)
    assert d.w[0] > d.w[1] and float(d.w[:2].sum()) == pytest.approx(0.5)
    d.x[1] = d.x[0]  # tied particles share a genome's fitness
    _, informed = d.particle_fitness(torch.tensor([[0., 0.]]), torch.tensor([1.]))
    assert informed.tolist() == [True, True, False, False]
    idx = systematic_resample(torch.tensor([0.5, 0.0, 0.25, 0.25]), torch.Generator().manual_seed(0))
    assert torch.bincount(idx, minlength=4).tolist() == [2, 0, 1, 1]


@pytest.mark.parametrize('kind', KINDS)
def test_state_dict_round_trip(kind):
    d = make_distribution(kind, 5, diffusion=0.01, seed=2, **KINDS[kind])
    for _ in range(3):
        x = d.sample(32); d.update(x, x.sum(1), 0.4)
    sd = st_load(st_save(d.state_dict()))
    assert all(isinstance(v, torch.Tensor) for v in sd.values())
    d2 = distribution_from_state_dict(sd)
    assert isinstance(d2, LatentDistribution) and type(d2) is type(d) and d2.config == d.config
    assert torch.equal(d2.sample(20, torch.Generator().manual_seed(5)), d.sample(20, torch.Generator().manual_seed(5)))
    x = d.sample(32, torch.Generator().manual_seed(6))
    d.update(x, -x.norm(dim=1), 0.4); d2.update(x, -x.norm(dim=1), 0.4)
    assert torch.equal(d.sample(20), d2.sample(20)) and d.entropy() == d2.entropy()
    with pytest.raises(ValueError, match='config.seed'): make_distribution(kind, 5, seed=99, **KINDS[kind]).load_state_dict(sd)


def test_load_refuses_another_configuration():
    sd = GaussianMixture(dim=4, components=3).state_dict()
    with pytest.raises(ValueError, match='config.components'): GaussianMixture(dim=4, components=5).load_state_dict(sd)
    with pytest.raises(ValueError, match='differ'): ParticleDistribution(dim=4).load_state_dict(sd)
    with pytest.raises(ValueError, match='not a distribution state_dict'): distribution_from_state_dict({'w': torch.ones(3)})


@pytest.mark.parametrize('kind', KINDS)
def test_bad_inputs_raise(kind):
    d = make_distribution(kind, 3, **KINDS[kind])
    x = d.sample(8)
    with pytest.raises(ValueError, match='non-finite'): d.update(x, torch.tensor([1., 2, float('nan'), 0, 0, 0, 0, 0]), 0.1)
    with pytest.raises(ValueError, match='non-finite'): d.update(x, torch.full((8,), float('inf')), 0.1)
    with pytest.raises(ValueError, match=r'shape \(8,\)'): d.update(x, torch.zeros(7), 0.1)
    with pytest.raises(ValueError, match=r'shape \(n, 3\)'): d.update(x[:, :2], torch.zeros(8), 0.1)
    with pytest.raises(ValueError, match='dt must'): d.update(x, torch.zeros(8), -1.0)
    with pytest.raises(ValueError, match='dt must'): d.update(x, torch.zeros(8), float('nan'))
    with pytest.raises(ValueError, match='at least one'): d.update(torch.zeros(0, 3), torch.zeros(0), 0.1)
    with pytest.raises(ValueError, match='unknown distribution kind'): make_distribution('gan', 3)
    with pytest.raises(ValueError, match='takes no'): make_distribution(kind, 3, bogus=1)


@pytest.mark.parametrize('kind', KINDS)
def test_determinism_with_seed(kind):
    def run(seed):
        d = make_distribution(kind, 4, diffusion=0.01, seed=seed, **KINDS[kind])
        r = evolve(d, lambda x: -(x ** 2).sum(1), 10, 64, 0.5, seed=seed)
        return d.sample(16, torch.Generator().manual_seed(0)), r.history
    (a, ha), (b, hb), (c, _) = run(0), run(0), run(1)
    assert torch.equal(a, b) and ha.equals(hb)
    assert not torch.equal(a, c)


def test_mixture_entropy_matches_a_gaussian():
    g = GaussianMixture(dim=4, components=1, init_std=0.7, seed=0)
    exact = float(0.5 * torch.log(2 * math.pi * math.e * g.vars).sum())
    assert g.entropy() == pytest.approx(exact, abs=0.06)
    p = ParticleDistribution(dim=2, particles=1024, init_std=1.0, seed=0)
    assert p.entropy() == pytest.approx(math.log(2 * math.pi * math.e), abs=0.3)  # KDE widens it a little
    assert p.entropy() == p.entropy()  # a fixed seed: a function of the state


C16 = torch.linspace(-1, 1, 16)
def smooth16(x): return -((x - C16) ** 2).sum(1) / 8 + torch.sin(2 * x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]


@pytest.fixture(scope='module')
def toy16():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2500, 16, generator=g)
    return X, smooth16(X) + 0.3 * torch.randn(2500, generator=g)


def test_estimator_r2_and_uncertainty(toy16):
    X, y = toy16
    est = FitnessEstimator(16, seed=0)
    est.add(X[:2200], y[:2200])
    st = est.fit(epochs=60)
    assert st['r2_holdout'] > 0.7 and st['n_holdout'] == 440
    assert est.r2(X[2200:], y[2200:]) > 0.7
    g = torch.Generator().manual_seed(1)
    near, far = est.predict(torch.randn(400, 16, generator=g))[1].mean(), est.predict(3 * torch.randn(400, 16, generator=g))[1].mean()
    assert far > 2 * near
    m, s = est.predict(X[:5])
    assert m.shape == (5,) and s.shape == (5,) and (s >= 0).all()
    # determinism and the safetensors round trip
    est2 = FitnessEstimator(16, seed=0); est2.add(X[:2200], y[:2200]); est2.fit(epochs=60)
    assert torch.equal(est2.predict(X[2200:])[0], est.predict(X[2200:])[0])
    est3 = FitnessEstimator.from_state_dict(st_load(st_save(est.state_dict())))
    assert torch.equal(est3.predict(X[2200:])[1], est.predict(X[2200:])[1])


def test_estimator_buffer_and_bad_inputs(toy16):
    X, y = toy16
    est = FitnessEstimator(16, capacity=100, seed=0)
    with pytest.raises(ValueError, match='at least 10'): est.fit()
    with pytest.raises(ValueError, match=r'fit\(\) first'): est.predict(X[:2])
    est.add(X[:70], y[:70]); est.add(X[70:150], y[70:150])
    assert len(est) == 100 and torch.equal(est.data()[1], y[50:150])
    est.add(X[:300], y[:300])  # more than the capacity at once: the last 100 stay
    assert torch.equal(est.data()[1], y[200:300]) and est.count == 450
    with pytest.raises(ValueError, match='non-finite'): est.add(X[:2], torch.tensor([0., float('nan')]))
    with pytest.raises(ValueError, match=r'shape \(n, 16\)'): est.add(X[:2, :4], y[:2])
    st = est.fit(epochs=2, holdout=0.0)
    assert math.isnan(st['r2_holdout']) and st['n_train'] == 100
    with pytest.raises(ValueError, match='config.hidden'): FitnessEstimator(16, hidden=8, capacity=100).load_state_dict(est.state_dict())


def test_bench_runs_with_tiny_settings(cli, bench):
    out = cli('--seeds', '1', '--generations', '3', main=bench('replicator').main)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count('quadratic distance') == 4 and 'flow (NSF' in out.stdout and 'n = 1 seeds' in out.stdout


def test_flow_round_trips_and_selection_moves_it_yet_keeps_two_peaks():
    d = make_distribution('flow', 3, seed=2, diffusion=0.01)
    x = d.sample(32, torch.Generator().manual_seed(0)); d.update(x, x[:, 0], 0.5)
    d2 = distribution_from_state_dict({k: v.clone() for k, v in d.state_dict().items()})
    assert type(d2) is type(d) and d2.config == d.config
    assert torch.equal(d2.sample(8, torch.Generator().manual_seed(1)), d.sample(8, torch.Generator().manual_seed(1)))
    with pytest.raises(ValueError, match='config.hidden'): make_distribution('flow', 3, seed=2, hidden=8).load_state_dict(d.state_dict())
    d = make_distribution('flow', 2, init_std=1.5, diffusion=0.002, seed=0)
    r = evolve(d, bimodal, 60, 128, 0.5, seed=0)
    x = d.sample(4000, torch.Generator().manual_seed(7))
    for c in (A, B): assert float(((x - c).norm(dim=1) < 1.2).float().mean()) > 0.15
    assert r.history.mean_fitness.iloc[-1] > r.history.mean_fitness.iloc[0]
