"""Creature physics on CUDA against the CPU over a whole episode, its speed, and a generation of the creatures
producer's GA on each device: the physics half of bench/gpu_check.sh.

Issue 35: CPU and CUDA diverged after 16 frames (2 of 64 creatures collected another pellet count; fitness off by up
to 2.99). This plays the same --creatures random creatures (seed --seed) for one 20 s episode (`simulate`, eager,
frames recorded) on both devices and reports, per device pair: the first frame where any node position differs by
more than 1e-3 m, the largest position difference in each tenth of the episode, creatures whose pellet count or
disqualification differs, and the largest fitness difference. Then the CUDA rate of a turbo episode of --big creatures
(eager; with --compile also compiled, timed on the second call, after compiling).
Issue 44: one generation of the creatures producer's GA (`simulate_races` of each population of --ga-populations in
--ga-races races of --ga-seconds, `beaten_share`, `next_generation`) on each of --ga-devices (eager; with
--ga-compile the CPU's also compiled, its compile time apart), played twice: the second call's seconds, creature-steps/s, and whether the two
gave the same race scores (a run resumed on one device repeats itself only if they do). Writes --out (JSON).
Usage: python bench/gpu_physics.py --out nbs/measured/gpu_physics.json [--creatures 64] [--big 65536] [--compile]
       [--ga-populations 64,1024] [--ga-devices cpu,cuda] [--ga-compile] [--ga-only]
"""
import json, time
from dataclasses import dataclass
from typing import Annotated
import numpy as np
import torch
from genome_lab.arenas.physics import (random_population, pellet_course, pellet_courses, simulate, simulate_races,
                                beaten_share, next_generation, EPISODE_SECONDS, FPS)
from genome_lab.core import atomic_write_json
from kit import parse

def parity(pop, course, a:str, b:str)->dict:
    ra, rb = (simulate(pop, course, device=d, record=True) for d in (a, b))
    gap = np.abs(ra.frames.astype(np.float64) - rb.frames).max(axis=(1, 2, 3))   # (F,) metres
    over = np.flatnonzero(gap > 1e-3)
    return dict(devices=[a, b], frames=len(gap), first_frame_over_1mm=int(over[0]) if len(over) else None,
                max_gap_m_by_tenth=[float(g.max()) for g in np.array_split(gap, 10)],
                pellets_differ=int((ra.pellets != rb.pellets).sum()), dq_differ=int((ra.dq != rb.dq).sum()),
                max_fitness_diff=float(np.abs(ra.fitness - rb.fitness).max()))

def cuda_rate(pop, course, compile:bool)->dict:
    for k in range(1 + compile):   # compiled: the first call compiles, the second is timed
        torch.cuda.synchronize(); t0 = time.perf_counter()
        simulate(pop, course, device='cuda', compile=compile); torch.cuda.synchronize()
        s = time.perf_counter() - t0
    P = len(next(iter(pop.values())))
    return dict(compile=compile, creatures=P, seconds=s, creature_steps_per_s=P*round(EPISODE_SECONDS*60)/s)

def ga_generation(device:str, population:int, races:int, seconds:float, compile:bool=False, seed:int=0)->dict:
    "One GA generation (races, ranks, breeding) played twice on `device`: the second call timed, and both compared."
    pop, courses, runs = random_population(population, seed), pellet_courses(seed, 0, races), []
    sync = torch.cuda.synchronize if device == 'cuda' else (lambda: None)
    for _ in range(2):
        sync(); t0 = time.perf_counter()
        res = simulate_races(pop, courses, seconds, compile=compile, device=device)
        next_generation(pop, beaten_share(res.fitness), seed, 0)
        sync(); runs.append((time.perf_counter() - t0, res.fitness))
    s = runs[1][0]
    return dict(device=device, compile=compile, population=population, races=races, race_seconds=seconds,
                first_call_s=round(runs[0][0], 3), seconds_per_generation=round(s, 4),
                creature_steps_per_s=round(population*races*round(seconds*60)/s), repeat_equal=bool(np.array_equal(*[r for _, r in runs])))

@dataclass
class GpuPhysicsBench:
    "The GPU physics bench's settings."
    out: Annotated[str, 'the figures file (required)'] = ''
    creatures: Annotated[int, 'creatures of the small batch'] = 64
    big: Annotated[int, 'creatures of the big batch'] = 65536
    seed: Annotated[int, 'the seed'] = 0
    compile: Annotated[bool, 'also time the compiled physics (compiling takes a while)?'] = False
    ga_populations: Annotated[str, 'populations of the GA generations, comma separated'] = '64,1024'
    ga_races: Annotated[int, 'races of each GA generation'] = 16
    ga_seconds: Annotated[float, 'seconds of each race'] = 10.0
    ga_devices: Annotated[str, 'devices of the GA generations, comma separated'] = 'cpu,cuda'
    ga_compile: Annotated[bool, "also the CPU's compiled GA generations (compiling takes a while)?"] = False
    ga_only: Annotated[bool, 'only the GA generations (no CUDA needed with --ga-devices cpu)?'] = False

def main(argv=None):
    a = parse(GpuPhysicsBench, doc=__doc__, argv=argv, required=('out',))
    torch.set_num_threads(1)
    out = dict(device=torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu', torch=torch.__version__,
               seed=a.seed)
    if not a.ga_only:
        pop, course = random_population(a.creatures, a.seed), pellet_course(a.seed)
        out |= dict(creatures=a.creatures, episode_seconds=EPISODE_SECONDS, fps=FPS,
                    cpu_vs_cuda=parity(pop, course, 'cpu', 'cuda'), cpu_vs_cpu=parity(pop, course, 'cpu', 'cpu'))
        big = random_population(a.big, a.seed)
        out['cuda_rates'] = [cuda_rate(big, course, c) for c in (False, True)[:1 + a.compile]]
    out['ga_generations'] = [ga_generation(d, int(p), a.ga_races, a.ga_seconds, c, a.seed)
                             for d in a.ga_devices.split(',') for c in ((False, True) if d == 'cpu' and a.ga_compile else (False,))
                             for p in a.ga_populations.split(',')]
    atomic_write_json(a.out, out)
    print(json.dumps(out, indent=1))

if __name__ == '__main__': main()
