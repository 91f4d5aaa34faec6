"""The quantised policy forward (`quantise`: bfloat16 matrix products under torch.autocast) against float32, in one run.

1. Policy-only rate (agent-steps/s): PufferLib's trained `LinearLSTM` choosing greedy moves in its arena, the env step
   included (as `arena_throughput.py` and `ppo_curve.py` measure it), float32 and quantised measured alternately
   `repeats` times each in this process (the baseline repeated beside the new figure); the median of each is reported,
   per second of this process's CPU time (the headline: the machine's 2 cores are shared with other processes, and
   wall time moved by 2x between repeats) and per second of wall time (`*_wall`).
2. Score parity: `evaluate` of both on the same `maps` seeds (greedy, first episodes); the difference of the means in
   standard errors, (quantised - fp32) / sqrt(sem_fp32^2 + sem_quantised^2), parity when within 2.
Both arenas (snake: `snake_maps` maps of `num_snakes` snakes on PufferLib's 640x360 map; tetris: `boards` boards);
snake's figures are the headline keys. Writes --out (default nbs/measured/quantised.json): `fp32_rate`,
`quantised_rate`, `speedup` (CPU time), `fp32_rate_wall`, `quantised_rate_wall`, `score_delta_sem`, and each
arena's details under its name.
Usage: OMP_NUM_THREADS=1 python bench/quantised.py [--seconds 3] [--repeats 3] [--maps 4]
"""
import datetime, json, os, statistics
from dataclasses import asdict, dataclass
from typing import Annotated
import numpy as np
import torch
from genome_lab.arenas.arena import SnakeArena, TetrisArena
from genome_lab.arenas.policies import load_pufferlib_policy, quantise
from genome_lab.arenas.evaluation import evaluate
from genome_lab.core import machine
from kit import parse
from genome_lab.core import atomic_write_json, measured_dir
from arena_throughput import rate

@dataclass
class Settings:
    "What the bench measures and how long."
    seconds: Annotated[float, 'seconds of each rate measurement'] = 3.0
    repeats: Annotated[int, 'rate measurements of each precision, alternated'] = 3
    snake_maps: Annotated[int, 'snake maps (640x360) in the rate loop, 256 snakes each'] = 1
    boards: Annotated[int, 'tetris boards in the rate loop and the evaluation'] = 256
    maps: Annotated[int, 'seeds (maps) of each score evaluation'] = 4
    num_snakes: Annotated[int, 'snakes of each evaluation map (640x360, 4096 food)'] = 256
    max_steps: Annotated[int, 'step cap of each evaluation map (episodes running then are censored)'] = 20_000
    threads: Annotated[int, 'torch threads'] = 1
    out: Annotated[str, 'JSON to write (default nbs/measured/quantised.json)'] = ''

def policy_rates(arena, pol, s:Settings)->dict: # {'fp32': [(wall, cpu) rates], 'quantised': [...]}
    "Policy-only agent-steps/s (wall, CPU) of `pol` and `quantise(pol)` in `arena`, alternately `s.repeats` times each."
    out = {'fp32': [], 'quantised': []}
    for _ in range(s.repeats):
        for name, p in (('fp32', pol), ('quantised', quantise(pol))):
            arena.reset(0); st = [p.initial_state(arena.num_agents)]
            def step():
                acts, st[0] = p.act(arena.obs, st[0])
                arena.step(acts)
            out[name].append(rate(arena, step, s.seconds, cpu=True))
    return out

def parity(arena:str, pol, s:Settings, **kw)->dict:
    "Scores of `pol` and `quantise(pol)` on the same maps and their difference in standard errors."
    ev = {q: evaluate(pol, arena, seed=list(range(s.maps)), max_steps=s.max_steps, progress=False, quantised=q, **kw)
          for q in (False, True)}
    f, q = ev[False].stats()['score'], ev[True].stats()['score']
    return dict(fp32_score=f, quantised_score=q,
                score_delta_sem=(q['mean'] - f['mean']) / float(np.hypot(f['sem'], q['sem'])),
                score_delta_map_sem=(q['mean'] - f['mean']) / float(np.hypot(f['map_sem'], q['map_sem'])),
                censored=dict(fp32=ev[False].censored, quantised=ev[True].censored),
                eval_seconds=dict(fp32=ev[False].seconds, quantised=ev[True].seconds))

def main(argv=None):
    s = parse(Settings, doc=__doc__, argv=argv)
    torch.set_num_threads(s.threads)
    load0 = os.getloadavg()
    print(f"machine: {json.dumps(machine())}; torch {torch.__version__}, {s.threads} thread(s), "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; load {load0}", flush=True)
    arenas = {'snake': (lambda: SnakeArena(num_envs=s.snake_maps), dict(num_snakes=s.num_snakes)),
              'tetris': (lambda: TetrisArena(num_envs=s.boards), dict(num_envs=s.boards))}
    res = {}
    for name, (make, kw) in arenas.items():
        pol, arena = load_pufferlib_policy(name), make()
        r = policy_rates(arena, pol, s)
        arena.close()
        med = lambda k, i: statistics.median(x[i] for x in r[k])
        fp, q, fpw, qw = med('fp32', 1), med('quantised', 1), med('fp32', 0), med('quantised', 0)
        res[name] = dict(agents=arena.num_agents, fp32_rate=fp, quantised_rate=q, speedup=q / fp, fp32_rate_wall=fpw,
                         quantised_rate_wall=qw, speedup_wall=qw / fpw, rates=r, **parity(name, pol, s, **kw))
        d = res[name]
        pairs = lambda k: [(round(a), round(b)) for a, b in r[k]]
        print(f"{name}: policy-only agent-steps/s ({arena.num_agents} agents, median of {s.repeats} alternated runs of "
              f"{s.seconds} s) per CPU second: fp32 {fp:,.0f}, quantised {q:,.0f} ({q / fp:.2f}x); per wall second: "
              f"fp32 {fpw:,.0f}, quantised {qw:,.0f} ({qw / fpw:.2f}x); runs (wall, cpu) fp32 {pairs('fp32')}, "
              f"quantised {pairs('quantised')}", flush=True)
        f_, q_ = d['fp32_score'], d['quantised_score']
        print(f"{name}: score fp32 {f_['mean']:.2f} ± {f_['sem']:.2f} (n={f_['n']}), "
              f"quantised {q_['mean']:.2f} ± {q_['sem']:.2f} (n={q_['n']}), "
              f"delta {d['score_delta_sem']:+.2f} SEM ({d['score_delta_map_sem']:+.2f} between-map SEM), "
              f"parity {'yes' if abs(d['score_delta_sem']) <= 2 else 'NO'}", flush=True)
    head = res['snake']
    record = dict(fp32_rate=head['fp32_rate'], quantised_rate=head['quantised_rate'], speedup=head['speedup'],
                  fp32_rate_wall=head['fp32_rate_wall'], quantised_rate_wall=head['quantised_rate_wall'],
                  clock='CPU time of this process',
                  score_delta_sem=head['score_delta_sem'], headline='snake',
                  method='bfloat16 torch.autocast (quantise)',
                  machine=machine(), date=str(datetime.date.today()), settings=asdict(s), load_before=load0,
                  load_after=os.getloadavg(), **res)
    out = s.out or str(measured_dir()/'quantised.json')
    atomic_write_json(out, record)
    print(f"wrote {out}")

if __name__ == '__main__': main()
