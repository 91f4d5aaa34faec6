"""Creature-steps/s of the batched creature simulator next to the same physics stepped one creature at a time, and
the wall time of a long turbo run.

1. For each batch size (64, 1024, 8192 by default) and each mode (eager, torch.compile): creature-steps/s of
   `stepper` (controller + muscles + gravity + ground + pellets + disqualification; `--chunk` steps per call, default
   all measured steps in one call as a turbo episode does, 4 as a recorded one does) on random
   creatures with 3-8 nodes (padded to 8 nodes, 16 muscles), and the same physics stepped one creature at a time
   (the original plan's sequential design: batch size 1, `--seq-creatures` creatures in turn); the ratio
   batched/sequential.
   Rates are given by wall clock and by this process's CPU time (the machine is shared: CPU time is less
   sensitive to other jobs). Compile time is reported separately.
2. Wall and CPU time of `--generations` generations at `--ga-population` creatures, 20 s episodes, turbo mode,
   compiled (compile time included: the first generation's time is given too), in a temporary run store; the ratio
   against the original plan's projected 50 s for its fastest design (Node CLI + Rapier + 8 workers; docs/design.md,
   Creature physics).
Usage: python bench/physics.py [--steps 240] [--populations 64,1024,8192] [--generations 1000] [--no-compile]
       [--skip-run | --skip-rates] [--chunk 4]
"""
import tempfile, time
from dataclasses import dataclass
from typing import Annotated
from pathlib import Path
import torch
from genome_lab.arenas.physics import random_population, prepare, pellet_course, physics_steps, stepper, STEPS_PER_FRAME
from genome_lab.evolution.creature_store import CreatureStore, evolve_run
from kit import parse

def initial_state(c):
    P = c['nm'].shape[0]
    return (c['x0'].clone(), c['y0'].clone(), torch.zeros_like(c['x0']), torch.zeros_like(c['y0']), torch.zeros(()),
            torch.zeros(P, dtype=torch.int64), torch.ones(P), torch.zeros(P, dtype=torch.int64))

def rate(fn, pop, course, steps, chunk=0):
    "(wall creature-steps/s, cpu creature-steps/s, first-call seconds) of `steps` steps of the whole batch, `chunk` per call (0: all)."
    chunk = chunk or steps
    with torch.inference_mode():   # as in `simulate`: all inference tensors, so a compiled graph is built once
        c = prepare(pop); P = len(pop['node_mask'])
        st = initial_state(c)
        t0 = time.perf_counter()
        st = fn(st, c, course, STEPS_PER_FRAME)
        first = time.perf_counter() - t0
        st = fn(st, c, course, STEPS_PER_FRAME)
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps // chunk): st = fn(st, c, course, chunk)
        w, cp = time.perf_counter() - w0, time.process_time() - c0
    n = P * (steps // chunk) * chunk
    return n / w, n / cp, first

def sequential(fn, pop, course, steps, k, chunk=0):
    "The same physics, one creature at a time (batch size 1), over the first `k` creatures."
    ws, cs, n = 0.0, 0.0, 0
    for i in range(k):
        w, c, _ = rate(fn, {key: v[i:i+1] for key, v in pop.items()}, course, steps, chunk)
        ws += steps / w; cs += steps / c; n += steps
    return n / ws, n / cs

@dataclass
class PhysicsBench:
    "The physics bench's settings."
    populations: Annotated[str, 'batch sizes, comma separated'] = '64,1024,8192'
    steps: Annotated[int, 'physics steps measured per batch size'] = 240
    seq_creatures: Annotated[int, 'creatures stepped one at a time for the baseline'] = 16
    generations: Annotated[int, 'generations of the turbo run'] = 1000
    ga_population: Annotated[int, 'population of the turbo run'] = 20
    seconds: Annotated[float, 'episode length of the turbo run'] = 20.0
    threads: Annotated[int, 'torch threads'] = 1
    compile: Annotated[bool, 'also the compiled physics (--no-compile: eager only)?'] = True
    skip_run: Annotated[bool, 'skip the turbo run?'] = False
    skip_rates: Annotated[bool, 'only the turbo run?'] = False
    chunk: Annotated[int, 'physics steps per call in the rates (0: all --steps in one call)'] = 0

def main(argv=None):
    a = parse(PhysicsBench, doc=__doc__, argv=argv)
    torch.set_num_threads(a.threads)
    course = pellet_course(0)
    modes = ['eager'] + ([] if not a.compile else ['compiled'])
    print(f"torch {torch.__version__}, {a.threads} thread(s), {a.steps} steps per measurement "
          f"({a.chunk or a.steps} per call), dt = 1/60 s")
    for mode in ([] if a.skip_rates else modes):
        fn = stepper(mode == 'compiled')
        seq_pop = random_population(a.seq_creatures, 1)
        sw, sc = sequential(fn, seq_pop, course, a.steps, a.seq_creatures, a.chunk)
        print(f"{mode:8s} sequential (1 creature at a time): {sw:12,.0f} creature-steps/s wall, {sc:12,.0f} cpu")
        for P in map(int, a.populations.split(',')):
            w, c, first = rate(fn, random_population(P, 0), course, a.steps, a.chunk)
            print(f"{mode:8s} batched P={P:5d}: {w:12,.0f} creature-steps/s wall, {c:12,.0f} cpu; "
                  f"ratio batched/sequential {w/sw:7.1f}x wall, {c/sc:7.1f}x cpu; first call {first:.1f} s")
    if not a.skip_run:
        store = CreatureStore(Path(tempfile.mkdtemp())/'bench.sqlite')
        w0, c0 = time.perf_counter(), time.process_time()
        rid = evolve_run(store, a.generations, a.ga_population, seed=0, turbo=True, compile=not not a.compile,
                         seconds=a.seconds, checkpoint_every=50, progress=False)
        w, c = time.perf_counter() - w0, time.process_time() - c0
        last = store.generation(rid, a.generations - 1)
        first = store.generation(rid, 0)['seconds']
        per = (w - first) / max(a.generations - 1, 1) * 1e3
        print(f"turbo run: {a.generations} generations x {a.ga_population} creatures x {a.seconds:g} s episodes "
              f"({'eager' if not a.compile else 'compiled'}): {w:.1f} s wall, {c:.1f} s cpu (compile included; "
              f"first generation {first:.1f} s wall, then {per:.1f} ms wall per generation); "
              + (f"the original plan's projected 50 s / this run's wall time = {50/w:.2f}x; "
                 if (a.generations, a.ga_population, a.seconds) == (1000, 20, 20.0) else "")
              + f"last generation best {last['best']:.3f}, mean {last['mean']:.3f}, worst {last['worst']:.3f}")

if __name__ == '__main__': main()
