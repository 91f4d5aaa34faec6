"""The programs producer's climb in tetris (issues 44 and 54): from the founders and the reference tetris players, the
`programs` producer works for a wall budget (`genome-lab produce programs --budget-s S`, one process, as a season's
worker, at its own settings: training games and qualifiers on a season's boards), then its best offer (the winner of
its latest qualifier) is checked by the project's lead rule (`climb_check`: 40+ games at each of the 3 held-out check seeds
against every non-random tetris founder, Dellacherie, El-Tetris and PufferTetris, a pooled sign test) at the season's
tetris settings (1000 ticks, 8 boards a genome, a board that tops out scoring nothing).

Writes: the producer's work (generations, offers with their training and qualifier lines, seconds, how it stopped),
the search's history, the lead rule's checks, leads and `reached`, and what the tetris ranking rewards: lines per
board, pieces, boards lost and ticks per piece of the offer and the reference programs alone on the same held-out
boards (sandboxed, a season's boards), with the pace budget of a program genome (`PROGRAM_LIMITS`) beside the reference
programs' measured seconds per action. Resumable: the registry and `bench_state.json` in `--root` keep what is done.
Usage: nice -n 5 python bench/programs_climb.py --root /work/main/runs/programs_climb [--budget-s 900]
       [--out nbs/measured/programs_climb_v3.json] [producer flags: --program-children 6 ...]
"""
import json, platform, sys, time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated   # a script's dataclass documents its fields here (docments reads no `__main__` comments)
import numpy as np
from genome_lab.arenas.arena import TetrisArena
from genome_lab.core import atomic_write_json, config_from_args, load_state
from genome_lab.programs.program_producer import ProgramSettings
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.programs.sandbox import SandboxedPlayer, SandboxLimits, play_games
from genome_lab.programs.program_policy import PROGRAM_LIMITS
from genome_lab.ecosystem.workers import spawn_worker
from genome_lab.programs.tetris_players import TetrisGame, tetris_baselines
from kit import Memo, parse, lead_record

@dataclass
class BenchOptions:
    "The bench's own options (the producer's are `ProgramSettings`' flags)."
    root: Annotated[str, "the kept folder: registry/, bench_state.json (resumed)"] = 'runs/programs_climb'
    budget_s: Annotated[float, "the producer's wall-seconds"] = 900.0
    seed: Annotated[int, "the producer's seed"] = 0
    heldout: Annotated[int, 'held-out boards per player for lines and pieces (solo, sandboxed)'] = 16
    heldout_seed0: Annotated[int, 'first held-out board seed'] = 200_000
    out: Annotated[str, 'the figures file, e.g. nbs/measured/programs_climb_v3.json'] = ''

def pace(sources:dict, ticks:int, seeds:list)->dict: # {name: {'mean_s', 'p99_s', 'max_s', 'actions'}}
    "Seconds per action of each program in a sandboxed child, on `seeds` games of `ticks` ticks."
    out = {}
    for name, src in sources.items():
        game, ts = TetrisGame(ticks), []
        with SandboxedPlayer(src, SandboxLimits(), 7) as p:
            for s in seeds:
                obs, view = game.reset(s); p.new_game(); done = False
                while not done:
                    t = time.perf_counter(); a = p.act(obs, view); ts.append(time.perf_counter() - t)
                    obs, view, done = game.step(a)
        game.close()
        ts = np.array(ts)
        out[name] = dict(mean_s=float(ts.mean()), p99_s=float(np.percentile(ts, 99)), max_s=float(ts.max()), actions=len(ts))
    return out

def solo(sources:dict, ticks:int, seeds:list)->dict: # {name: {'lines', 'pieces', 'died', 'ticks_per_piece', 'score', 'lines_per_game'}}
    """Each program alone on the same boards (sandboxed, at the pace of a program genome, a season's boards: one that
    tops out scores nothing): lines, pieces placed, the share of boards lost before the cap, ticks per piece."""
    lim, out = SandboxLimits(cpu_s=3600, wall_s=3600, mean_step_s=PROGRAM_LIMITS.mean_step_s, burst_s=PROGRAM_LIMITS.burst_s), {}
    for name, src in sources.items():
        game = TetrisGame(ticks, **TetrisArena.season.settings)
        try: r = play_games(src, game, seeds, lim)
        finally: game.close()
        assert r.ok, (name, r.reason, r.message)
        g = r.games
        out[name] = dict(lines=float(np.mean([x['lines'] for x in g])), pieces=float(np.mean([x['pieces'] for x in g])),
                         died=float(np.mean([not x['truncated'] for x in g])),
                         ticks_per_piece=float(np.mean([x['ticks']/x['pieces'] for x in g])),
                         score=float(np.mean([x['score'] for x in g])), lines_per_game=[x['lines'] for x in g])
    return out

def main(argv=None):
    (o, _), a = parse(BenchOptions, ProgramSettings, doc=__doc__, argv=argv, ns=True)
    s = config_from_args(ProgramSettings, a)
    root = Path(o.root); root.mkdir(parents=True, exist_ok=True)
    state = Memo(root/'bench_state.json', dict({k: v for k, v in asdict(o).items() if k not in ('root', 'out')},
                                               producer=asdict(s)))   # a rerun resumes; other settings are refused
    tetris = TetrisArena.season
    with Registry(root/'registry') as reg:
        seed_founders(reg); refs = tetris_baselines(reg)
        srcs = {n: reg.genome(refs[n])['config']['source'] for n in ('Dellacherie', 'ElTetris')}
    state.step('pace', lambda: dict(budget_mean_s=PROGRAM_LIMITS.mean_step_s, burst_s=PROGRAM_LIMITS.burst_s,
                                    references=pace(srcs, tetris.steps, [o.heldout_seed0, o.heldout_seed0 + 1])))
    print(json.dumps(state['pace']), flush=True)
    def produce():   # one process for its whole budget, as `genome-lab produce programs --budget-s S`
        t = time.perf_counter()   # its step running when the budget ends finishes first
        res = spawn_worker(root/'registry', 'programs', o.budget_s, o.seed, settings=s, timeout_s=o.budget_s + 3600)
        return dict(res, wall_s=round(time.perf_counter() - t, 1), settings=asdict(s))
    producer = state.step('producer', produce)
    print(json.dumps(producer), flush=True)
    assert 'error' not in producer, producer['error']
    st = load_state(root/'registry'/'season_work'/'programs.safetensors', 'producer')
    run, offered = st['run'], st['offered']   # offered: program id -> genome id, in the order first offered
    rows = {p['id']: p for p in run['programs']}
    with Registry(root/'registry') as reg:
        offers = [dict(program=pid, genome=gid, name=reg.genome(gid)['name'], generation=rows[pid]['generation'],
                       strategy=rows[pid]['strategy'], train_lines=rows[pid]['metrics']['avg_lines'],
                       train_lost=rows[pid]['metrics']['lost'], qualified_lines=st['qualified'][pid]['lines'],
                       qualified_lost=st['qualified'][pid]['lost'])
                  for pid, gid in offered.items()]
        best = next(o for o in offers if o['program'] == st['last'])   # the latest qualifier's winner, an offer
        progs = {n: reg.genome(i)['config']['source'] for n, i in
                 (('offer ' + best['name'], best['genome']), ('Dellacherie', refs['Dellacherie']), ('ElTetris', refs['ElTetris']))}
        best['code'] = progs['offer ' + best['name']]
    seeds = list(range(o.heldout_seed0, o.heldout_seed0 + o.heldout))
    alone = state.step('solo', lambda: solo(progs, tetris.steps, seeds))
    print(json.dumps(alone), flush=True)
    t = time.perf_counter()
    rule = state.step('lead', lambda: dict(lead_record(root/'registry', best['genome']), seconds=round(time.perf_counter() - t, 1)))
    print(json.dumps(rule['leads']), flush=True)
    res = dict(command='python bench/programs_climb.py ' + ' '.join(sys.argv[1:] if argv is None else argv),
               machine=f"{platform.node()}: 2 CPU cores, shared with other jobs while measured", budget_s=o.budget_s,
               season=dict(tetris_steps=tetris.steps, tetris_agents=tetris.agents, tetris_settings=tetris.settings),
               producer=producer, offers=offers, best_offer=best, pace=state['pace'], solo=alone,
               history=[dict(generation=h['generation'], best_so_far=h['best_so_far'], n=h['n'], failed=h['failed'],
                             islands=len(h['island_sizes']), archive_coverage=h['archive_coverage']) for h in run['history']],
               strategies={k: sum(p['strategy'] == k for p in rows.values()) for k in sorted({p['strategy'] for p in rows.values()})},
               check_seconds=rule['seconds'], **{k: rule[k] for k in ('checks', 'leads', 'reached')})
    if o.out: atomic_write_json(o.out, res); print(f"figures written to {o.out}")
    return res

if __name__ == '__main__': main()
