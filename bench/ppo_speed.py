"""PuffeRL's trainer on this CPU as a fraction of its bound, the policy-only rate: today's settings and the new ones.

Each setting is measured `repeats` times, alternately, by `ppo_curve.rates` in this process: PuffeRL training
(collect + train) for `speed_steps` agent-steps from PufferLib's initialisation, then collecting alone, then the
policy-only rate on the same map (PufferLib's trained `LinearLSTM`, float32, greedy, the env step included) and the
map with random moves: the bound is re-measured beside every trainer figure. Rates are agent-steps/s per second of
wall time and per second of this process's CPU time (`*_cpu`), with one torch thread. The fraction is the trainer's
rate over the policy-only rate of the same repeat; figures are medians over the repeats.
Settings: 'before' is `PPOConfig()` (float32, today's and still the default), 'after' is `PPOConfig()` with
`precision='bfloat16'` (collect and train under torch.autocast): faster, but not the default, since in three 1.5M
agent-step runs from scratch its greedy policies scored 7.03, 7.03, 6.77 against float32's 19.78, 11.34, 19.75
(50_training, Speed); on a CPU without native bfloat16 (`check_precision`) it is skipped and `skipped` says why. Profiled and left (CPU time, one run each, against today's ~44-49k/s): 4 maps of 256 snakes
~50k, bptt 32 ~49k, minibatch 16384 ~41k, torch.compile of the policy ~44k.
Writes --out (default nbs/measured/ppo_speed_DATE.json).
Usage: OMP_NUM_THREADS=1 python bench/ppo_speed.py [--speed-steps 327680] [--repeats 2]
"""
import datetime, json, os, statistics
from dataclasses import asdict, dataclass
from typing import Annotated
import torch
from genome_lab.arenas.policies import load_pufferlib_policy
from genome_lab.rl.training import PPOConfig, PPOHyper, check_precision
from genome_lab.core import machine
from kit import parse
from genome_lab.core import atomic_write_json, measured_dir
from ppo_curve import rates

@dataclass
class Settings:
    "How long the bench measures."
    speed_steps: Annotated[int, 'agent-steps of each measurement'] = 327_680
    repeats: Annotated[int, 'measurements of each setting, alternated'] = 2
    out: Annotated[str, 'JSON to write (default nbs/measured/ppo_speed_DATE.json)'] = ''

SETTINGS = {'before': PPOConfig(hyper=PPOHyper(precision='float32')),
            'after': PPOConfig(hyper=PPOHyper(precision='bfloat16'))}
KEYS = ('puffer_train', 'puffer_collect', 'policy_only', 'arena_random')

def main(argv=None):
    s = parse(Settings, doc=__doc__, argv=argv)
    torch.set_num_threads(1)
    load0 = os.getloadavg()
    print(f"machine: {json.dumps(machine())}; torch {torch.__version__}, 1 thread, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}; load {load0} (2 cores shared with other processes)", flush=True)
    settings, skipped = {}, {}
    for name, cfg in SETTINGS.items():
        try: check_precision(cfg.hyper.precision, 'cpu'); settings[name] = cfg
        except ValueError as e: skipped[name] = str(e); print(f"{name}: skipped: {e}", flush=True)
    policy, runs = load_pufferlib_policy('snake'), {k: [] for k in settings}
    for rep in range(s.repeats):
        for name, cfg in settings.items():
            r = rates(policy, s.speed_steps, cfg=cfg)
            r['fraction'] = r['puffer_train'] / r['policy_only']
            r['fraction_cpu'] = r['puffer_train_cpu'] / r['policy_only_cpu']
            runs[name].append(r)
            print(f"{name} #{rep}: " + ', '.join(f"{k} {r[k]:,.0f} (cpu {r[k + '_cpu']:,.0f})" for k in KEYS)
                  + f"; fraction {r['fraction']:.3f} (cpu {r['fraction_cpu']:.3f})", flush=True)
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    for name, m in med.items():
        print(f"{name} (median of {s.repeats}): trainer {m['puffer_train']:,.0f} agent-steps/s "
              f"(cpu {m['puffer_train_cpu']:,.0f}), policy-only {m['policy_only']:,.0f} "
              f"(cpu {m['policy_only_cpu']:,.0f}), "
              f"fraction {m['fraction']:.3f} (cpu {m['fraction_cpu']:.3f})")
    record = dict(machine=machine(), date=str(datetime.date.today()), settings=asdict(s), load_before=load0,
                  load_after=os.getloadavg(), configs={k: asdict(v) for k, v in SETTINGS.items()}, runs=runs,
                  median=med, skipped=skipped)
    out = s.out or str(measured_dir()/f'ppo_speed_{datetime.date.today()}.json')
    atomic_write_json(out, record)
    print(f"wrote {out}")

if __name__ == '__main__': main()
