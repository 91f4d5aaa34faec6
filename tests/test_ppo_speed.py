"""PuffeRL's `precision` on the CPU and bench/ppo_speed.py at a tiny budget."""
import json
import pytest, torch
from genome_lab.rl.training import PPOConfig, PPOHyper
from genome_lab.rl.ppo_run import PPORun

TINY = dict(num_snakes=32, width=48, height=32, num_food=60)
BF16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()   # a CPU with native bfloat16 (AVX512-BF16 or AMX)

@pytest.mark.parametrize('precision', ['float32', 'bfloat16'])
def test_precision_autocast_in_both_phases_only(tmp_path, precision):
    "bfloat16 collects and trains under CPU autocast, which is off again after each phase; float32 never enters it."
    if precision == 'bfloat16' and not BF16: pytest.skip("this CPU has no native bfloat16: the run is refused (next test)")
    hyper = PPOHyper(minibatch_size=256, bptt_horizon=16, precision=precision)
    run = PPORun(PPOConfig(total_timesteps=4096, **TINY, hyper=hyper), tmp_path/'run', display=None)
    seen, fwd, step = [], run.model.forward_eval, run.trainer.optimizer.step
    def spy(phase, f): # `f`, noting whether CPU autocast is on when it is called
        return lambda *a, **k: (seen.append((phase, torch.is_autocast_enabled('cpu'))), f(*a, **k))[1]
    run.model.forward_eval, run.trainer.optimizer.step = spy('collect', fwd), spy('train', step)
    run.train_for(1024)
    run.close()
    assert {p for p, _ in seen} == {'collect', 'train'}
    assert all(on == (precision == 'bfloat16') for _, on in seen)
    assert not torch.is_autocast_enabled('cpu')

def test_bfloat16_refused_on_a_cpu_without_it(tmp_path, monkeypatch):
    "On a CPU without native bfloat16 a bfloat16 run is refused, saying what to use, before any map or process is made."
    monkeypatch.setattr(torch.ops.mkldnn, '_is_mkldnn_bf16_supported', lambda: False)
    with pytest.raises(ValueError, match="needs a CPU with native bfloat16.*use precision='float32'"):
        PPORun(PPOConfig(total_timesteps=4096, **TINY, hyper=PPOHyper(minibatch_size=256, bptt_horizon=16, precision='bfloat16')),
               tmp_path/'run', display=None)
    assert not (tmp_path/'run').exists()
    PPORun(PPOConfig(total_timesteps=4096, **TINY, hyper=PPOHyper(minibatch_size=256, bptt_horizon=16)), tmp_path/'f32',
           display=None).close()   # float32 runs there

def test_unknown_precision_refused():
    with pytest.raises(ValueError, match="precision must be one of"): PPOHyper(precision='float16')

def test_bench_ppo_speed_tiny(tmp_path, cli, bench):
    "bench/ppo_speed.py runs one short repeat of both settings and writes trainer and policy-only rates and fractions."
    out = tmp_path/'ppo_speed.json'
    r = cli('--speed-steps', '16384', '--repeats', '1', '--out', out, main=bench('ppo_speed').main)
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads(out.read_text()); med = rec['median']
    assert set(med) == ({'before', 'after'} if BF16 else {'before'}) and ('after' in rec['skipped']) != BF16, rec['skipped']
    for k in med:
        m = med[k]
        assert m['puffer_train'] > 0 and 0 < m['fraction_cpu'] < 1 and m['policy_only'] > m['puffer_train']
