"""The creatures arena's gait founder (`GaitCreature`, 04_physics): a seeded CMA-ES search over the 25 numbers of the
central-pattern-generator gait (`gait_genes`), kept as `GAIT`, and the lead rule's check of it against the random
reference creatures.

1. The search: CMA-ES (Hansen and Ostermeier 2001; the `cma` package, seeded) over the gait's numbers, each mapped from
   [0, 1] to its range (`decode`: inside the genes' `RANGES`), `--popsize` gaits a generation for `--generations`
   generations, each gait's fitness its mean score over the same `--courses` races of the season's length (courses
   `pellet_courses(seed, 0, courses, GAIT_STREAM)`: no GA generation, qualifier or check races on them), compiled, on
   one core; `--restarts` such runs (the landscape has weaker optima a run can settle on), each ending in its search
   distribution's mean. The result is the fittest of those, rounded to 3 decimals (what `GAIT` holds).
2. Held out: the rounded gait and the three random reference creatures on `--courses` courses of the seed `seed + 1`.
3. The rule (`lead_check`, 20_tournament): the gait against each random reference creature, 40 races at each of the 3
   held-out check seeds at the arena's season settings, ahead at each, pooled one-sided sign test p < 0.01.
Writes --out (default nbs/measured/creature_gait.json); the search is kept in --root (a rerun with the same settings
goes on to the checks).
Usage: OMP_NUM_THREADS=1 python bench/creature_gait.py [--generations 200] [--restarts 3] [--popsize 16] [--courses 64]
       [--seed 0]
"""
import json, math, os, platform, time
from dataclasses import asdict, dataclass
from pathlib import Path
import numpy as np

@dataclass
class Settings:
    "What the bench runs."
    generations: int = 200 # CMA-ES generations of each run
    restarts: int = 3 # seeded CMA-ES runs from the same start (seeds seed + 1, ...): the fittest is kept
    popsize: int = 16 # gaits a generation
    courses: int = 64 # races of each gait's fitness, and of the held-out score
    seed: int = 0 # the search's seed (CMA-ES and the courses)
    sigma: float = 0.3 # CMA-ES's initial step, on the [0, 1] scale of every number
    seconds: float = 0.0 # seconds of every race (search, held out, the rule's); 0: the season's (`CreatureArena.season`)
    compile: bool = True # compile the search's races (one C++ loop a race)?
    lead_games: int = 0 # races at each check seed of the lead rule; 0: the rule's 40 (fewer never make a lead: smoke tests)
    root: str = 'runs/creature_gait' # the kept folder (the search's result)
    out: str = '' # the figures file; default nbs/measured/creature_gait.json

def decode(x)->dict: # x: 25 numbers in [0, 1] -> a gait (`GAIT`'s keys)
    "A point of the search's unit cube as a gait: every number mapped linearly into a range the GA's genes allow."
    from genome_lab.arenas.physics import GAIT_PAIRS, GAIT_SINGLES, RANGES
    it = iter(np.clip(np.asarray(x, float), 0, 1))
    lin = lambda lo, hi: float(lo + (hi - lo) * next(it))
    p = dict(frequency=lin(*RANGES['muscle_freq']), foot_x=lin(0.2, 1.0), hip_x=lin(0.1, 1.0), hip_y=lin(0.3, 1.4))
    p |= dict(head_y=min(p['hip_y'] + lin(0.1, 1.0), RANGES['node_y'][1]), foot_friction=lin(*RANGES['node_friction']),
              body_friction=lin(*RANGES['node_friction']))
    amp, phase, rest = lambda: lin(*RANGES['muscle_amp']), lambda: lin(0.0, 2*math.pi - 1e-3), lambda: lin(*RANGES['muscle_rest'])
    for k in GAIT_PAIRS: p[k] = [amp(), phase(), lin(-0.999, 0.999), rest()]
    for k in GAIT_SINGLES: p[k] = [amp(), phase(), rest()]
    return p

def rounded(p:dict, digits:int=3)->dict: return {k: [round(v, digits) for v in x] if isinstance(x, list) else round(x, digits)
                                                  for k, x in p.items()}

def scores(gaits:list, courses, seconds:float, compile:bool=True): # (len(courses), len(gaits)) race scores
    import torch
    from genome_lab.arenas.physics import gait_genes, simulate_races, to_torch
    pop = to_torch({k: np.stack([gait_genes(p)[k] for p in gaits]) for k in gait_genes(gaits[0])})
    return simulate_races(pop, courses, seconds, compile=compile).fitness

def search(s:Settings, seconds:float)->dict:
    """`restarts` seeded CMA-ES runs over `decode`'s cube on the same courses, each from the cube's centre: the final
    mean of each as a gait and that gait's fitness (eager, as the arena races), the curves (best and mean of each
    generation); the fittest run's gait is the result."""
    import cma
    from genome_lab.arenas.physics import pellet_courses, GAIT_STREAM
    courses = pellet_courses(s.seed, 0, s.courses, stream=GAIT_STREAM)
    runs, t0 = [], time.perf_counter()
    for r in range(s.restarts):
        es = cma.CMAEvolutionStrategy(np.full(25, 0.5), s.sigma, dict(seed=s.seed + 1 + r, popsize=s.popsize, bounds=[0, 1],
                                                                      verbose=-9))
        curve = []
        for g in range(s.generations):
            xs = es.ask()
            f = scores([decode(x) for x in xs], courses, seconds, s.compile).mean(0)
            es.tell(xs, list(-f))
            curve.append([g + 1, round(float(f.max()), 4), round(float(f.mean()), 4)])
            if g % 25 == 0: print(f"restart {r}, generation {g + 1}: best {f.max():.3f}, mean {f.mean():.3f}", flush=True)
        gait = decode(es.result.xfavorite)   # the search distribution's mean: CMA-ES's estimate of the optimum
        runs.append(dict(fitness=round(float(scores([gait], courses, seconds, compile=False).mean()), 4), gait=gait, curve=curve))
        print(f"restart {r}: fitness {runs[-1]['fitness']}", flush=True)
    best = max(range(len(runs)), key=lambda r: runs[r]['fitness'])
    return dict(runs=runs, best=best, fitness=runs[best]['fitness'], gait=runs[best]['gait'],
                seconds=round(time.perf_counter() - t0, 1), evaluations=s.restarts * s.generations * s.popsize,
                races=s.restarts * s.generations * s.popsize * s.courses)

def main(argv=None):
    from genome_lab.core import atomic_write_json, measured_dir, machine
    from kit import Memo, parse
    from genome_lab.arenas.physics import (CreatureArena, pellet_courses, simulate_races, GAIT_STREAM, gait_creature,
                                           creature_policy, random_population)
    from genome_lab.tournaments.tournament import lead_check
    s = parse(Settings, doc=__doc__, argv=argv)
    import torch; torch.set_num_threads(1)
    seconds = s.seconds or CreatureArena.season.settings['seconds']
    memo = Memo(Path(s.root)/'bench_state.json', {k: v for k, v in asdict(s).items() if k not in ('root', 'out')})
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}; races of {seconds:g} s", flush=True)
    found = memo.step('search', lambda: search(s, seconds))
    gait = rounded(found['gait'])
    print(f"search: fitness {found['fitness']} (restart {found['best']}) in {found['seconds']} s: {json.dumps(gait)}", flush=True)
    refs = random_population(3, 0)   # the random reference creatures (`reference_creatures`, 43_creature_store)
    held = pellet_courses(s.seed + 1, 0, s.courses, stream=GAIT_STREAM)
    gait_held = scores([gait], held, seconds, compile=False)[:, 0]
    ref_held = simulate_races(refs, held, seconds).fitness
    names = [f'RandomCreature{k}' for k in range(3)]
    t0 = time.perf_counter()
    rule = lead_check(gait_creature(gait), {n: creature_policy(refs, k) for k, n in enumerate(names)}, 'creatures',
                      **({'games': s.lead_games} if s.lead_games else {}), given=dict(seconds=seconds))
    print(f"the rule: {json.dumps(rule['leads'])} ({time.perf_counter() - t0:.0f} s)", flush=True)
    record = dict(machine=machine(), host=platform.node(), date=time.strftime('%Y-%m-%d'), settings=asdict(s),
                  race_seconds=seconds, command='python bench/creature_gait.py ' + ' '.join(
                      f'--{k.replace("_", "-")}={v}' for k, v in asdict(s).items() if v != getattr(Settings, k)),
                  gait=gait, search={k: found[k] for k in ('fitness', 'best', 'seconds', 'evaluations', 'races')} |
                  dict(runs=[{k: r[k] for k in ('fitness', 'curve')} for r in found['runs']]),
                  held_out=dict(courses=s.courses, seed=s.seed + 1, gait=round(float(gait_held.mean()), 4),
                                references={n: round(float(ref_held[:, k].mean()), 4) for k, n in enumerate(names)}),
                  checks=rule['checks'], leads=rule['leads'], reached=rule['reached'])
    path = s.out or str(measured_dir()/'creature_gait.json')
    atomic_write_json(path, record)
    print(f"leads every random reference (the rule): {record['reached']}; wrote {path}")

if __name__ == '__main__': main()
