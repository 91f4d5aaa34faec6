"""Does the loop make the climbers? The continuous ecosystem from the founders, for a wall budget, then each arena's best
producer-made genome checked against every founder it must lead, by the project's one rule (issue 54).

A registry with every arena's founders (`genome_lab.ecosystem.loop.founders`: PufferLib's snake and tetris policies, the
heuristic and random baselines, the reference tetris players, the reference creatures) runs `run_ecosystem`: the
producers of --workers at work at once (each a process of its own, one torch thread, on --device), then a season at
the stable settings that trains nothing and plays their offers, cycle after cycle, until --hours are spent (resumable:
rerun the same command after a kill). Then, per arena, the producer-made genome with the best ordinal in the last
season where producer-made genomes played is the climber's candidate (chosen by the seasons, before any check), and
`climb_check` asks the rule: --check-games head-to-head games at each of the 3 held-out `CHECK_SEEDS` against every
founder that is not a random reference (`bars`), ahead at every seed, pooled one-sided sign test p < 0.01; `reached`
is that rule and nothing else. Beside it, the first season in which a producer-made genome was rated above every such
founder (`rated_above`: the seasons' ladder, not a lead). Per producer: its work rate (its loop's counter per second of
its worker's wall time; agent-steps for PPO) next to the standalone trainer's rate (PPO: PuffeRL alone with the
producer's settings, as bench/producer_speed.py measures it, in this run before the ecosystem starts).
Writes these keys of --out (default nbs/measured/climb.json; its other keys, bench/planner.py's `planner`, are kept):
`arenas` {snake|tetris|creatures: {reached, genome, made_by, season_ordinal, checks: [{founder, seed, games, wins,
losses, draws, score_diff, score_diff_ci95, seconds}], leads: {founder: {wins, losses, p, lead, ...}}, rated_above}},
`producers` {name: {agent_steps_per_s, standalone_per_s, unit, seconds, errors}}, `hours`, `device`, `seasons` (each
season's top ordinals per arena, for 77_ecosystem's plot).
Usage: OMP_NUM_THREADS=1 python bench/climb.py [--hours 2] [--work-s 600] [--workers ppo,programs,creatures,planner]
       [--device cpu|cuda|auto] [--registry runs/climb] [--check creatures,tetris]
"""
import json, os, time
from dataclasses import dataclass, asdict, fields
from pathlib import Path
from typing import Annotated
from genome_lab.core import measured_dir, find_producer
from genome_lab.registry.store import Registry
from genome_lab.ecosystem.seasons import SeasonConfig
from genome_lab.ecosystem.loop import EcosystemConfig, run_ecosystem, founders, climb_check, bars
from genome_lab.tournaments.ranking import LEAD_GAMES
from kit import Memo, parse, write_figures
from producer_speed import standalone   # bench/: the trainer alone, as the producer speed bench measures it

@dataclass
class Climb:
    "The climb bench's settings."
    registry: Annotated[str, 'the registry folder (kept: rerun to resume)'] = 'runs/climb'
    hours: Annotated[float, 'wall-hours of the ecosystem'] = 2.0
    work_s: Annotated[float, "seconds the producers work before each season"] = 600.0
    workers: Annotated[str, 'producers at work between seasons'] = 'ppo,programs,creatures,planner'
    device: Annotated[str, "the producers' device where they have one: 'auto', 'cpu' or 'cuda'"] = 'auto'
    check_games: Annotated[int, 'head-to-head games at each check seed'] = LEAD_GAMES
    standalone_s: Annotated[float, "seconds of each standalone trainer's measurement"] = 60.0
    seed: Annotated[int, "the seasons' and producers' base seed"] = 0
    max_candidates: Annotated[int, "candidates a season's tournament takes per arena besides each producer's newest offer"] = 4
    ppo_steps: Annotated[int, "the ppo producer's agent-steps between offers"] = 1_179_648
    check: Annotated[str, "arenas whose climber is checked, comma-separated (empty: every arena); the others' reached reads 'pending'"] = ''
    out: Annotated[str, 'the figures file (default nbs/measured/climb.json)'] = ''

def worker_settings(c:Climb)->dict: # {producer: its settings dataclass}, the device set where it has one
    out = {}
    for n in EcosystemConfig(workers=c.workers).names():
        cls = find_producer(n).settings
        dev = {f.name: c.device for f in fields(cls) if f.name.endswith('_device')}
        out[n] = cls(**dev, **({'ppo_steps': c.ppo_steps} if n == 'ppo' else {}))
    return out

def standalone_rates(c:Climb, sets:dict, reg:Registry)->dict: # {producer: agent-steps/s of its trainer alone}
    "PPO's trainer alone with the ppo producer's settings (`producer_speed.standalone`), here, before the ecosystem."
    if 'ppo' not in sets: return {}
    r = standalone(sets['ppo'], reg, c.standalone_s)
    return dict(ppo=r['agent_steps'] / r['seconds'])

def season_tops(reg:Registry, eco_history:list, made:dict)->list: # per season: wall-seconds, per arena the ordinals
    "Each season of the ecosystem: its wall-seconds and, per arena, the top producer-made genome and every founder."
    rh, out = reg.ratings_by_season(), []
    for h in eco_history:
        r, arenas = rh[rh.season == h['season']], {}
        for arena, g in r.groupby('arena'):
            mine = g[g.genome.isin(made)]
            top = mine.loc[mine.ordinal.idxmax()] if len(mine) else None
            arenas[arena] = dict(top=None if top is None else dict(genome=top.genome, name=top['name'],
                                                                      ordinal=float(top.ordinal)),
                                 founders={row['name']: float(row.ordinal) for _, row in g[~g.genome.isin(made)].iterrows()})
        out.append(dict(season=h['season'], seconds=h['seconds'], arenas=arenas))
    return out

def main():
    c = parse(Climb, doc=__doc__)
    root = Path(c.registry); root.mkdir(parents=True, exist_ok=True)
    sets = worker_settings(c)
    state = Memo(root/'climb_state.json', {k: getattr(c, k) for k in ('workers', 'device', 'standalone_s', 'ppo_steps')})
    with Registry(root) as reg:
        first = founders(reg)
        if 'standalone' not in state:   # before the ecosystem, on the machine as it is
            state['standalone'] = standalone_rates(c, sets, reg)
        t0 = time.time()
        eco = run_ecosystem(reg, EcosystemConfig(hours=c.hours, work_s=c.work_s, workers=c.workers, threads=1),
                            SeasonConfig(producers='', seed=c.seed, max_candidates=c.max_candidates), sets, seed=c.seed, log=lambda m: print(m, flush=True))
        spent = eco.history[-1]['seconds'] if eco.history else 0.0   # its wall-seconds, every call's, to its last season
        print(f"ecosystem: {eco.cycle} cycles, {spent:.0f} s ({time.time() - t0:.0f} s in this call)", flush=True)
        made = {i for i in reg.ids() if i not in first.values()}
        by = {o['genome']: o['producer'] for o in reg.offers()}
        tops = season_tops(reg, eco.history, made)
        arenas = {}
        for arena in sorted({a for s in tops for a in s['arenas']}):
            seen = [s for s in tops if arena in s['arenas']]
            must = bars(reg, arena)   # the founders a climber must lead
            above = lambda a: a['top'] and all(a['top']['ordinal'] > o for n, o in a['founders'].items() if n in must)
            first_above = next((s for s in seen if above(s['arenas'][arena])), None)
            played = [s['arenas'][arena]['top'] for s in seen if s['arenas'][arena]['top']]
            if not played: arenas[arena] = dict(reached=False, why='no producer-made genome played a season'); continue
            best = played[-1]   # the candidate: the seasons' pick, before any check
            picked = dict(genome=best['name'], made_by=by.get(best['genome'], 'submitted'), season_ordinal=best['ordinal'],
                          rated_above=first_above and dict(season=first_above['season'], seconds=first_above['seconds']))
            if c.check and arena not in c.check.split(','):
                arenas[arena] = dict(reached='pending', why='its check was not run (--check)', **picked); continue
            check = state.step(f'check:{arena}', lambda: climb_check(reg, best['genome'], games=c.check_games))
            arenas[arena] = dict(reached=check['reached'], checks=check['checks'], leads=check['leads'], **picked)
            print(f"{arena}: {best['name']} reached {check['reached']}: " + '; '.join(
                f"{f} {v['wins']}-{v['losses']} p {v['p']:.3g}" for f, v in check['leads'].items()), flush=True)
        producers = {}
        for n in EcosystemConfig(workers=c.workers).names():
            runs = [h['workers'][n] for h in eco.history if n in h['workers'] and 'error' not in h['workers'][n]]
            key = next((k for r in runs for k in r['metrics'] if '/' not in k), None)
            done = max((r['metrics'][key] for r in runs if key in r['metrics']), default=0)
            secs = sum(r['seconds'] for r in runs)
            producers[n] = dict(unit=key, agent_steps_per_s=done / secs if secs else None,
                                standalone_per_s=state['standalone'].get(n), seconds=round(secs, 1),
                                errors=sum('error' in h['workers'].get(n, {}) for h in eco.history))
        out = dict(hours=c.hours, device=c.device, settings=asdict(c), cycles=eco.cycle, seconds=round(spent, 1),
                   cpus=os.cpu_count(), arenas=arenas, producers=producers, seasons=tops)
    path = Path(c.out or measured_dir()/'climb.json')
    write_figures(path, out)
    print(json.dumps(dict(file=str(path), reached={a: v['reached'] for a, v in arenas.items()})))

if __name__ == '__main__': main()
