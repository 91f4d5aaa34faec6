"""How stable is a tournament's ranking in each arena, against game length, map size and number of games?

For every arena (snake, tetris, creatures) a table of 5-7 real genomes of graded but partly close strength plays one
tournament per setting and seed with every pair meeting up to `--max-meetings` times; `split_half` (20_tournament)
of the first games that make 1, 2, 4, ... meetings gives the split-half Kendall tau of the whole ranking (`tau`), of
its top 3 (`top_tau`), the mean OpenSkill sigma and the leader's lead in sigmas. Today's season settings are the
first setting of each arena (the baseline), measured in the same run. A setting is called stable where the mean over
seeds of `tau` is at least 0.85; the cheapest stable setting (wall seconds) is printed. `top_tau` is printed beside:
where the top entrants are near-equal (PufferLib's policy, a 0.02 mutant of it and its 5%-random copy) no number of
games orders them, and a tournament playing until its top is stable runs to its budget.
Jobs run in parallel processes, one torch thread each. Writes nbs/measured/tournament_stability.json.
Usage: python bench/tournament_stability.py [--seeds 3] [--max-meetings 16] [--workers 16] [--quick]
"""
import json, multiprocessing as mp, os, platform, time
from dataclasses import dataclass
from typing import Annotated
from datetime import datetime, timezone
from pathlib import Path
from genome_lab.core import atomic_write_json
from kit import parse
import numpy as np

SNAKE = [  # (label, steps, settings): today's season setting first
    ('150 steps, 48x36', 150, dict(width=48, height=36, num_food=60)),
    ('400 steps, 48x36', 400, dict(width=48, height=36, num_food=60)),
    ('1000 steps, 48x36', 1000, dict(width=48, height=36, num_food=60)),
    ('400 steps, 80x48', 400, dict(width=80, height=48, num_food=200)),
    ('1000 steps, 80x48', 1000, dict(width=80, height=48, num_food=200))]
TETRIS = [('200 ticks, 2 boards', 200, 2), ('1000 ticks, 2 boards', 1000, 2), ('2000 ticks, 2 boards', 2000, 2),
          ('1000 ticks, 8 boards', 1000, 8)]
CREATURES = [('3 s races', 3.0), ('10 s races', 10.0), ('20 s races', 20.0)]
STABLE = dict(tau=0.85)

def entrants(arena:str)->tuple: # (names, policies)
    "The arena's table: PufferLib's policy, epsilon-random and mutated copies of it, hand-written and random players."
    import torch
    from genome_lab.arenas.policies import load_pufferlib_policy, SnakeHeuristic, RandomPolicy, EpsilonGreedy
    from genome_lab.tournaments.selection import mutate
    if arena == 'creatures':
        from genome_lab.arenas.physics import random_population, creature_policy, simulate, pellet_course
        pop = random_population(40, seed=7)
        fit = simulate(pop, pellet_course(999), seconds=10.0).fitness
        best = np.argsort(-fit)[:5]   # the 5 best of 40 random creatures: close rivals, as a GA's survivors are
        return [f'creature{i}' for i in best], [creature_policy(pop, int(i)) for i in best]
    puffer = load_pufferlib_policy(arena)
    def mutant(s, k):
        m = type(puffer)(**puffer.config); m.load_state_dict(mutate(puffer.state_dict(), s, k)); return m
    if arena == 'snake':
        h2 = SnakeHeuristic(); h2.weights.data = torch.tensor([2., 2., 10., 0.])
        return (['PufferSnake', 'eps0.05', 'eps0.2', 'mutant0.02', 'HeuristicSnake', 'Heuristic2', 'RandomSnake'],
                [puffer, EpsilonGreedy(puffer, 0.05), EpsilonGreedy(puffer, 0.2), mutant(0.02, 1), SnakeHeuristic(), h2,
                 RandomPolicy(4)])
    return (['PufferTetris', 'eps0.02', 'eps0.1', 'eps0.3', 'mutant0.01', 'mutant0.03', 'RandomTetris'],
            [puffer, *[EpsilonGreedy(puffer, e) for e in (0.02, 0.1, 0.3)], mutant(0.01, 1), mutant(0.03, 2),
             RandomPolicy(7)])

def job(args)->list: # rows, one per meetings count
    arena, label, kw, seed, max_meetings = args
    import torch; torch.set_num_threads(1)
    from genome_lab.tournaments.tournament import run_tournament
    from genome_lab.tournaments.ranking import split_half, schedule_games, fit_ratings
    names, pols = entrants(arena)
    t0 = time.perf_counter()
    t = run_tournament(None, names, pols, arena=arena, genomes_per_game=3, meetings=max_meetings, seed=seed,
                       progress=False, **kw)
    sec = time.perf_counter() - t0
    rows, m = [], 1
    while m <= max_meetings:
        n = len(schedule_games(len(names), 3, m, seed))
        s = split_half(names, t.games[:n], t.results[:n], seed=seed)
        fit = fit_ratings(names, t.games[:n], t.results[:n])
        order = sorted(names, key=lambda i: -fit[i].ordinal())
        extra = {'puffer_above_heuristic': float(order.index('PufferSnake') < order.index('HeuristicSnake'))} \
            if arena == 'snake' else {}
        rows.append(dict(arena=arena, setting=label, seed=seed, meetings=m, seconds=round(sec * n / len(t.games), 2),
                         order=order, **s, **extra))
        m *= 2
    return rows

def summarise(rows:list)->list: # mean over seeds per (arena, setting, meetings)
    out = {}
    for r in rows: out.setdefault((r['arena'], r['setting'], r['meetings']), []).append(r)
    res = []
    for (a, s, m), rs in out.items():
        rs = sorted(rs, key=lambda r: r['seed'])
        mean = lambda k: round(float(np.mean([r[k] for r in rs])), 3)
        extra = {'puffer_above_heuristic': mean('puffer_above_heuristic')} if 'puffer_above_heuristic' in rs[0] else {}
        res.append(dict(arena=a, setting=s, meetings=m, seeds=len(rs), games=int(np.mean([r['games'] for r in rs])),
                        tau=mean('tau'), top_tau=mean('top_tau'), sigma=mean('sigma'), lead=mean('lead'),
                        seconds=mean('seconds'),
                        leaders=[r['leader'] for r in rs], stable=bool(mean('tau') >= STABLE['tau']), **extra))
    return res

@dataclass
class StabilityBench:
    "The tournament stability bench's settings."
    seeds: Annotated[int, 'tournaments of each setting'] = 3
    max_meetings: Annotated[int, 'meetings per pair at the most'] = 16
    workers: Annotated[int, 'processes at once'] = max(1, (os.cpu_count() or 2) - 1)
    arenas: Annotated[str, 'arenas, comma separated'] = 'snake,tetris,creatures'
    quick: Annotated[bool, 'first two settings of each arena, 1 seed, 2 meetings (writes nothing)?'] = False
    out: Annotated[str, 'the figures file'] = 'nbs/measured/tournament_stability.json'

def main():
    a = parse(StabilityBench, doc=__doc__)
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    seeds, mm = (1, 2) if a.quick else (a.seeds, a.max_meetings)
    grid = dict(snake=[(l, dict(agents_per_genome=6, steps=st, settings=s)) for l, st, s in SNAKE],
                tetris=[(l, dict(agents_per_genome=b, steps=st)) for l, st, b in TETRIS],
                creatures=[(l, dict(agents_per_genome=1, steps=0, settings=dict(seconds=s))) for l, s in CREATURES])
    jobs = [(ar, l, kw, 100 + s, mm) for ar in a.arenas.split(',') for l, kw in grid[ar][:2 if a.quick else None]
            for s in range(seeds)]
    t0 = time.perf_counter()
    with mp.get_context('spawn').Pool(min(a.workers, len(jobs))) as pool:
        rows = [r for rs in pool.imap_unordered(job, sorted(jobs, key=lambda j: -j[2].get('steps', 0))) for r in rs]
    summary = summarise(rows)
    print(f"{'arena':9} {'setting':22} {'meet':>4} {'games':>5} {'tau':>6} {'top_tau':>7} {'sigma':>6} {'lead':>6} "
          f"{'sec':>7}  leaders")
    place = lambda r: (r['arena'], [g[0] for g in grid[r['arena']]].index(r['setting']), r['meetings'])
    for r in sorted(summary, key=place):
        print(f"{r['arena']:9} {r['setting']:22} {r['meetings']:4d} {r['games']:5d} {r['tau']:6.3f} "
              f"{r['top_tau']:7.3f} {r['sigma']:6.3f} {r['lead']:6.2f} {r['seconds']:7.1f}  {','.join(r['leaders'])}"
              f"{'  stable' if r['stable'] else ''}"
              f"{'  puffer>heuristic %.2f' % r['puffer_above_heuristic'] if 'puffer_above_heuristic' in r else ''}")
    choice = {}
    for ar in a.arenas.split(','):
        ok = [r for r in summary if r['arena'] == ar and r['stable']]
        base = [r for r in summary if r['arena'] == ar and r['setting'] == grid[ar][0][0]]
        choice[ar] = dict(baseline=grid[ar][0][0], baseline_rows=base,
                          cheapest_stable=min(ok, key=lambda r: r['seconds']) if ok else None)
        best = choice[ar]['cheapest_stable'] or {}
        print(f"{ar}: baseline {grid[ar][0][0]!r}; cheapest stable: {best.get('setting')} x {best.get('meetings')} "
              "meetings")
    flags = [f'--{k.replace("_", "-")}' + ('' if v is True else f' {v}') for k, v in vars(a).items()
             if k != 'out' and v is not False]
    out = dict(date=datetime.now(timezone.utc).isoformat(timespec='seconds'), machine=platform.node(),
               cpus=os.cpu_count(),
               command='python bench/tournament_stability.py ' + ' '.join(flags), stable_when=STABLE,
               seconds=round(time.perf_counter() - t0, 1), settings={k: [g[0] for g in v] for k, v in grid.items()},
               summary=summary, choice=choice, rows=rows)
    if not a.quick:
        atomic_write_json(a.out, out)
        print(f"wrote {a.out}")

if __name__ == '__main__': main()
