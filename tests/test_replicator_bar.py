"""bench/replicator_bar.py with tiny settings: rounds of PPO and replicator seeds, every policy read alike, a resume
that finishes where one uninterrupted call ends, and the figures file the chapters read."""
import json, sys
from dataclasses import replace
import pytest, torch
from genome_lab.evolution.hypernetwork import HypernetConfig, PretrainConfig
from genome_lab.evolution.replicator_run import ReplicatorConfig, replicator_bar, BAR_SMOOTHING
from genome_lab.rl.training import PPOHyper

torch.set_num_threads(1)

@pytest.fixture
def bar(bench, monkeypatch): # bench/replicator_bar.py at tiny settings
    b = bench('replicator_bar')
    monkeypatch.setattr(b, 'REPLICATOR', ReplicatorConfig(population=4, agents_each=1, steps=16, eval_interval=1, eval_maps=1, eval_snakes=4,
                                                          eval_max_steps=30, hypernet=HypernetConfig(hidden=4, chunk=64, width=32),
                                                          pretrain=PretrainConfig(pretrain_steps=0)))
    monkeypatch.setattr(b, 'PPO_SETTINGS', dict(num_snakes=16, width=48, height=32, num_food=60, hyper=PPOHyper(minibatch_size=256, bptt_horizon=16)))
    return b

def _run(bar, monkeypatch, tmp_path, *flags):
    monkeypatch.setattr(sys, 'argv', ['replicator_bar.py', '--run-dir', str(tmp_path/'runs'), '--out', str(tmp_path/'bar.json'),
                                      '--seeds', '2', '--ppo-seeds', '2', '--round', '1', '--workers', '1', '--comparison', 'scratch',
                                      '--size', '4x1x16', '--reading', '1x4x30', '--read-every', '1', *flags])
    bar.main()
    return json.loads((tmp_path/'bar.json').read_text())['comparisons']['scratch']

def test_bar_bench_reads_both_methods_alike_resumes_and_writes_the_figures(bar, monkeypatch, tmp_path):
    out = _run(bar, monkeypatch, tmp_path, '--generations', '1')
    assert out['generations'] == 1 and out['reading'] == dict(maps=1, snakes=4, max_steps=30, window=BAR_SMOOTHING)
    out = _run(bar, monkeypatch, tmp_path, '--generations', '2')             # resumed: the seeds go on from their checkpoints
    assert out['generations'] == 2 and [r['generations'] for r in out['rounds']] == [1, 2]
    ppo, rep = out['ppo_curves'], out['replicator_curves']
    assert set(ppo) == set(rep) == {'seed 0', 'seed 1'}
    assert all(c[0]['agent_steps'] == 0 for c in [*ppo.values(), *rep.values()])   # both read where they start
    assert [c['generation'] for c in rep['seed 0']] == [0, 1, 2] and rep['seed 0'][-1]['agent_steps'] == 2 * 2 * 4 * 16
    reading = {'score', 'greedy', 'sampled', 'per_map', 'censored', 'n'}
    assert all(reading <= set(c) for c in [*ppo['seed 0'], *rep['seed 0']])   # one reading for both
    again = replicator_bar(rep, ppo, factor=10, window=BAR_SMOOTHING, generations=out['generations'])
    assert again['mean'] == pytest.approx(out['bar']['mean']) and again['verdict'] == out['bar']['verdict']
    assert out['bar']['verdict'].startswith('not decided')                     # 2 seeds: the bar asks for 3
    d = out['diagnostics']
    assert d['generations'] == 4 and len(d['series']['seed 1']['surrogate/r2']) == 2 and 0 <= d['gate_open_share'] <= 1
    assert d['series']['seed 0']['surrogate/r2'][0] is None                    # no surrogate before the first generation's genomes
    assert set(out['mixtures']['seed 0']) == {'generation', 'weights', 'means', 'vars'}
    fresh = tmp_path/'fresh'; fresh.mkdir()
    one = _run(bar, monkeypatch, fresh, '--generations', '2')                # one call, no stop: the same curves
    untimed = lambda curves: {k: [{f: v for f, v in c.items() if f != 'seconds'} for c in cs] for k, cs in curves.items()}
    assert untimed(one['replicator_curves']) == untimed(rep) and one['diagnostics']['series'] == d['series']

def test_the_size_curve_bench_times_each_size_and_reading_and_the_protocol_they_give(monkeypatch, tmp_path, bench):
    "bench/replicator_sizes.py (issue 55): a generation's seconds per size, a reading's per reading size, the protocol's hours from them."
    sizes = bench('replicator_sizes')
    monkeypatch.setattr(sys, 'argv', ['replicator_sizes.py', '--generations', '2', '--sizes', '4x1x16,4x2x16', '--readings', '1x4x30',
                                      '--bar-generations', '10', '--read-every', '5', '--out', str(tmp_path/'s.json')])
    sizes.main()
    out = json.loads((tmp_path/'s.json').read_text())
    assert [s['agent_steps'] for s in out['sizes']] == [2 * 4 * 1 * 16, 2 * 4 * 2 * 16] and all(s['seconds_per_generation'] > 0 for s in out['sizes'])
    (s, r), h = (out['sizes'][0], out['readings'][0]), out['hours'][0]
    rep = 10 * s['seconds_per_generation'] + 3 * r['seconds']                  # 10 generations, read at 0, 5 and 10
    ppo = 10 * s['agent_steps'] / 10 / out['protocol']['ppo_rate'] + 3 * r['seconds']
    assert h == dict(size='4x1x16', reading='1x4x30', hours=round(3 * (rep + ppo) / 2 / 3600, 2))

def test_the_two_comparisons_start_from_nothing_or_both_from_pufferSnake(bench):
    "Issue 55: 'scratch' pits an untrained decoder against PPO from PufferLib's initialisation; 'pretrained' the decoder pretrained on PufferSnake's lines against PPO fine-tuning PufferSnake."
    b = bench('replicator_bar')
    scratch, pretrained = b.Options(comparison='scratch'), b.Options(comparison='pretrained')
    assert (b.ppo_config(scratch, 0).start, b.replicator_config(scratch, 0, 1).pretrain.pretrain_steps) == ('', 0)
    assert b.ppo_config(pretrained, 0).start == 'PufferSnake' and b.replicator_config(pretrained, 0, 1).pretrain.pretrain_steps > 0
    c = b.replicator_config(scratch, 2, 400)
    assert (c.population, c.agents_each, c.steps, c.eval_interval, c.seed, b.per_generation(scratch)) == (16, 2, 512, 20, 2, 32_768)
