"""The programs producer's climb in tetris (issue 44): from the founders and the reference tetris players, the
`programs` producer works for a wall budget (`genome-lab produce programs --budget-s S`, one process, as a season's
worker), then its best offer plays a check tournament at the season's tetris settings (the tetris arena's `season` steps and
agents, `SeasonConfig.genomes_per_game`) against the non-random tetris founders (Dellacherie, El-Tetris, PufferTetris), the
baseline measured in the same run.

Writes: the producer's work (generations, offers with their training lines, seconds), each entrant's rating (mu, sigma,
ordinal, games), mean lines and boards lost per game, the gap in combined sigma (mu_a - mu_b)/sqrt(sigma_a^2 + sigma_b^2) between
the offer and the best founder, their head-to-head record, and what the tetris tournament's ranking rewards at the
season's tick count: lines per game, pieces placed, boards lost and ticks per piece of each player on the same boards
(sandboxed solo games). Also the pace budget of a program genome (`PROGRAM_LIMITS`) beside the reference programs'
measured seconds per action. Resumable: the registry and `bench_state.json` in `--root` keep what is done.
Usage: nice -n 5 python bench/programs_climb.py --root /work/main/runs/programs_climb [--budget-s 2400]
       [--games 40] [--out nbs/measured/programs_climb.json] [producer flags: --program-ticks 1000 ...]
"""
import itertools, json, platform, sys, time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated   # a script's dataclass documents its fields here (docments reads no `__main__` comments)
import numpy as np
from genome_lab.core import atomic_write_json, config_from_args, load_state
from genome_lab.programs.program_producer import ProgramSettings
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.programs.sandbox import SandboxedPlayer, SandboxLimits, play_games
from genome_lab.programs.program_policy import PROGRAM_LIMITS
from genome_lab.ecosystem.seasons import SeasonConfig, arena_plan, spawn_worker
from genome_lab.programs.tetris_players import TetrisGame, tetris_baselines
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.tournaments.ranking import schedule_games
from kit import Memo, parse, lead_record

# where the climb's producer differs from `ProgramSettings()`, and why
PRESET = dict(program_ticks=1000, program_games=8, program_children=6, program_generations=3,
              program_cma_generations=5, program_cma_popsize=8)
PRESET_WHY = ("training games as long as the season's tetris games (1000 ticks), 8 of them per program (with 4 the best "
              "offer lost boards the 4 had not shown: nbs/measured/programs_climb_games4.json), 6 children a generation "
              "and CMA-ES of bench/program_search.py's size (5 generations of 8) after every 2 generations")
FOUNDERS = ('Dellacherie', 'ElTetris', 'PufferTetris') # the non-random tetris founders
SEASON = SeasonConfig(producers='') # the season's tetris settings, its defaults: the check tournament's and solo games'

@dataclass
class BenchOptions:
    "The bench's own options (the producer's are `ProgramSettings`' flags)."
    root: Annotated[str, "the kept folder: registry/, bench_state.json (resumed)"] = 'runs/programs_climb'
    budget_s: Annotated[float, "the producer's wall-seconds"] = 2400.0
    seed: Annotated[int, "the producer's seed"] = 0
    games: Annotated[int, 'games of the check tournament, at least (even: 2 per meeting of 4 entrants)'] = 40
    check_seed: Annotated[int, 'the check tournament seed'] = 1
    heldout: Annotated[int, 'held-out boards per player for lines and pieces (solo, sandboxed)'] = 8
    heldout_seed0: Annotated[int, 'first held-out board seed'] = 200_000
    out: Annotated[str, 'the figures file, e.g. nbs/measured/programs_climb.json'] = ''

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

def solo(sources:dict, ticks:int, seeds:list)->dict: # {name: {'lines', 'pieces', 'died', 'ticks_per_piece', 'score'}}
    """Each program alone on the same boards (sandboxed, at the pace of a program genome): lines, pieces placed, the share
    of boards lost before the cap, ticks per piece."""
    lim, out = SandboxLimits(cpu_s=3600, wall_s=3600, mean_step_s=PROGRAM_LIMITS.mean_step_s, burst_s=PROGRAM_LIMITS.burst_s), {}
    for name, src in sources.items():
        game = TetrisGame(ticks)
        try: r = play_games(src, game, seeds, lim)
        finally: game.close()
        assert r.ok, (name, r.reason, r.message)
        g = r.games
        out[name] = dict(lines=float(np.mean([x['lines'] for x in g])), pieces=float(np.mean([x['pieces'] for x in g])),
                         died=float(np.mean([not x['truncated'] for x in g])),
                         ticks_per_piece=float(np.mean([x['ticks']/x['pieces'] for x in g])),
                         score=float(np.mean([x['score'] for x in g])), lines_per_game=[x['lines'] for x in g])
    return out

def head_to_head(ids:list, games:list, results:list, a:str, b:str)->dict: # {'games', 'wins', 'losses', 'ties'} of a over b
    "Games where genomes `a` and `b` both played: how often `a` ranked above, below or level with `b`."
    out = dict(games=0, wins=0, losses=0, ties=0)
    for g, r in zip(games, results):
        at = [ids[i] for i in g]
        if a in at and b in at:
            ra, rb = r.ranks[at.index(a)], r.ranks[at.index(b)]
            out['games'] += 1; out['wins' if ra < rb else 'losses' if ra > rb else 'ties'] += 1
    return out

def main(argv=None):
    (o, _), a = parse(BenchOptions, ProgramSettings, doc=__doc__, argv=argv, ns=True,
                      epilog=f"Producer flags default to ProgramSettings' fields except the bench's PRESET {PRESET}: {PRESET_WHY}")
    s = config_from_args(ProgramSettings, a, ProgramSettings(**PRESET))
    root = Path(o.root); root.mkdir(parents=True, exist_ok=True)
    state = Memo(root/'bench_state.json', dict({k: v for k, v in asdict(o).items() if k not in ('root', 'out')},
                                               producer=asdict(s)))   # a rerun resumes; other settings are refused
    season = SEASON
    tetris = season.arena_of('tetris')   # its tetris games: the arena's own season settings
    with Registry(root/'registry') as reg:
        seed_founders(reg); refs = tetris_baselines(reg)
        founders = {n: reg.by_name(n) for n in FOUNDERS}
        srcs = {n: reg.genome(refs[n])['config']['source'] for n in ('Dellacherie', 'ElTetris')}
    if 'pace' not in state:
        state['pace'] = dict(budget_mean_s=PROGRAM_LIMITS.mean_step_s, burst_s=PROGRAM_LIMITS.burst_s,
                             references=pace(srcs, tetris.steps, [o.heldout_seed0, o.heldout_seed0 + 1]))
    print(json.dumps(state['pace']), flush=True)
    if 'producer' not in state:   # one process for its whole budget, as `genome-lab produce programs --budget-s S`
        t = time.perf_counter()
        # its step running when the budget ends finishes first (a CMA-ES generation of this size takes minutes)
        res = spawn_worker(root/'registry', 'programs', o.budget_s, o.seed, settings=s, timeout_s=o.budget_s + 3600)
        state['producer'] = dict(res, wall_s=round(time.perf_counter() - t, 1), settings=asdict(s))
    print(json.dumps(state['producer']), flush=True)
    assert 'error' not in state['producer'], state['producer']['error']
    st = load_state(root/'registry'/'season_work'/'programs.safetensors', 'producer')
    run, offered = st['run'], st['offered']   # offered: program id -> genome id
    rows = {p['id']: p for p in run['programs']}
    with Registry(root/'registry') as reg:
        offers = [dict(program=pid, genome=gid, name=reg.genome(gid)['name'], generation=rows[pid]['generation'],
                       strategy=rows[pid]['strategy'], train_lines=rows[pid]['metrics']['avg_lines'])
                  for pid, gid in offered.items()]
        best = max(offers, key=lambda x: (x['train_lines'], x['generation']))
        ids = [best['genome']] + list(founders.values())
        if 'check' in state: t = run_tournament(reg, evaluation=state['check']['evaluation'], progress=False)
        else:   # the stored games are read back on a rerun: the figures below follow from them
            kw, _ = arena_plan(season, 'tetris', 4)
            meetings = next(m for m in itertools.count(1) if len(schedule_games(len(ids), kw['genomes_per_game'], m, o.check_seed)) >= o.games)
            t = run_tournament(reg, ids=ids, arena='tetris', seed=o.check_seed, progress=False,
                               **dict(kw, until_stable=None, meetings=meetings))   # a fixed number of games, at least `games`
            state['check'] = dict(evaluation=t.evaluation, seconds=round(t.seconds, 1))
        lb = t.leaderboard.set_index('id')
        per_game = lambda i, f: float(np.nanmean([f(r)[g.index(ids.index(i))] for g, r in zip(t.games, t.results) if ids.index(i) in g]))
        rating = lambda i: dict(name=reg.genome(i)['name'], mu=float(lb.mu[i]), sigma=float(lb.sigma[i]), ordinal=float(lb.ordinal[i]),
                                games=int(lb.games[i]), lines_per_game=per_game(i, lambda r: r.lines),
                                deaths_per_game=per_game(i, lambda r: r.deaths), failure=lb.failure[i])
        top = max(founders.values(), key=lambda i: lb.mu[i])
        A, B = rating(best['genome']), rating(top)
        check = dict(games=len(t.games), seconds=state['check']['seconds'], seed=o.check_seed,
                     settings=dict(steps=tetris.steps, agents_per_genome=tetris.agents,
                                   genomes_per_game=season.genomes_per_game),
                     entrants={i: rating(i) for i in ids}, genome=A, founder=B,
                     sigma_gap=(A['mu'] - B['mu'])/float(np.hypot(A['sigma'], B['sigma'])),
                     head_to_head=head_to_head(ids, t.games, t.results, best['genome'], top))
        print(json.dumps(check), flush=True)
        if 'solo' not in state:
            progs = {n: reg.genome(i)['config']['source'] for n, i in
                     (('offer ' + best['name'], best['genome']), ('Dellacherie', refs['Dellacherie']), ('ElTetris', refs['ElTetris']))}
            seeds = list(range(o.heldout_seed0, o.heldout_seed0 + o.heldout))
            state['solo'] = solo(progs, tetris.steps, seeds)
        print(json.dumps(state['solo']), flush=True)
    res = dict(command='python bench/programs_climb.py ' + ' '.join(sys.argv[1:] if argv is None else argv),
               machine=f"{platform.node()}: 2 CPU cores, shared with other jobs while measured", budget_s=o.budget_s,
               season=dict(tetris_steps=tetris.steps, tetris_agents=tetris.agents,
                           genomes_per_game=season.genomes_per_game),
               producer=state['producer'], offers=offers, best_offer=best, pace=state['pace'], check=check,
               solo=state['solo'],
               history=[dict(generation=h['generation'], best_so_far=h['best_so_far'], n=h['n'],
                             archive_coverage=h['archive_coverage']) for h in run['history']],
               **lead_record(root/'registry', best['genome']))
    if o.out: atomic_write_json(o.out, res); print(f"figures written to {o.out}")
    return res

if __name__ == '__main__': main()
