"""Bench for 65_llm_evolution (LLM evolution of Tetris players).

1. Harness throughput: evaluations/s and actions/s of the sandboxed harness on a Tetris player program, against
   the same program played in-process (no sandbox) in the same process: the ratio is the sandbox's cost.
2. An offline evolution run, then a held-out comparison on full games (10,000 ticks at most, the env's own limit):
   lines per game (mean, std, n) of PufferLib's tetris genome, the Dellacherie and El-Tetris placement players, the
   template evolution starts from and the best evolved program, all on the same held-out seeds.
The run's flags are `EvolutionConfig`'s fields (`genome_lab.core.config_parser`); the bench's runs use its defaults
except `PRESET`. With `--out FILE` the figures are written as JSON: `nbs/measured/llm_evolution.json` is the file
65_llm_evolution shows.
Usage: OMP_NUM_THREADS=1 python bench/llm_evolution.py [--games 16] [--ref-games 16] [--evals 6] [--max-generations 3]
       [--children-per-generation 6] [--run-dir DIR] [--out FILE]
"""
import argparse, json, sys, tempfile, time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated   # a script's dataclass documents its fields here: docments reads no comments from `__main__`
import torch
torch.set_num_threads(1)
from genome_lab.core import config_parser, config_from_args, atomic_write_json
from genome_lab.programs.llm_evolution import EvolutionConfig, EvolutionRun
from genome_lab.programs.evaluation import compare_heldout
from genome_lab.programs.sandbox import play_games
from genome_lab.programs.program_policy import program_env
from genome_lab.programs.tetris_players import player_source, play_local, TetrisGame, DELLACHERIE_WEIGHTS, EL_TETRIS_WEIGHTS, MAX_TICKS

PRESET = dict(max_generations=3, children_per_generation=6)   # where the bench's run differs from `EvolutionConfig()`, and why:
PRESET_WHY = "the run of 65_llm_evolution's default parameters (generations 3, children_per_generation 6)"

@dataclass
class BenchOptions:
    "The bench's own options (the evolution run's are `EvolutionConfig`'s)."
    games: Annotated[int, 'held-out games per player'] = 16
    ref_games: Annotated[int, 'held-out games of the Dellacherie and El-Tetris players (0 for --games)'] = 0
    heldout_ticks: Annotated[int, 'tick cap of a held-out game'] = MAX_TICKS
    evals: Annotated[int, 'sandboxed evaluations timed'] = 6
    run_dir: Annotated[str, "the evolution run folder ('' for a temporary one)"] = ''
    out: Annotated[str, 'JSON file for the figures, e.g. nbs/measured/llm_evolution.json'] = ''

def parser()->argparse.ArgumentParser:
    return config_parser(EvolutionConfig, BenchOptions, description=__doc__.splitlines()[0],
                         epilog=f"Run flags default to EvolutionConfig's fields except the bench's PRESET {PRESET}: {PRESET_WHY}")

def harness(evals:int)->dict: # sandboxed against in-process play of the El-Tetris program, 2 games of 400 ticks per evaluation
    src, seeds = player_source(EL_TETRIS_WEIGHTS, 'el-tetris'), [1000, 1001]
    t = time.perf_counter(); steps = 0
    for _ in range(evals):
        g = TetrisGame(400); r = play_games(src, g, seeds); g.close(); steps += r.steps; assert r.ok, r
    dt = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(evals): play_local(src, seeds, 400)
    dl = time.perf_counter() - t
    return dict(evals_per_s=evals/dt, actions_per_s=steps/dt, in_process_evals_per_s=evals/dl,
                sandbox_cost_ratio=dt/dl, evals=evals, games_per_eval=2, ticks_per_game=400)

def heldout(best:str, o:BenchOptions)->list: # rows of `compare_heldout`, PufferLib's genome first
    held = list(range(100_000, 100_000 + o.games))
    players = {'best evolved': best, 'template (gen 0)': program_env('tetris').player_template(),
               'dellacherie': player_source(DELLACHERIE_WEIGHTS, 'dellacherie'), 'el-tetris': player_source(EL_TETRIS_WEIGHTS, 'el-tetris')}
    rows = compare_heldout({}, held, o.heldout_ticks, pufferlib=True)
    show = lambda r: print(f"{r['player']:>18}: {r['mean']:8.2f} ± {r['std']:7.2f} lines/game (n={r['n']}, {r['ticks']:.0f} ticks/game, {r['seconds']} s)", flush=True)
    show(rows[0])
    for name, src in players.items():
        n = o.ref_games if o.ref_games and name in ('dellacherie', 'el-tetris') else o.games
        rows += compare_heldout({name: src}, held[:n], o.heldout_ticks, pufferlib=False)
        show(rows[-1])
    return rows

def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    cfg, o = config_from_args(EvolutionConfig, a, EvolutionConfig(**PRESET)), config_from_args(BenchOptions, a)
    if cfg.env != 'tetris': ap.error(f"the held-out comparison plays Tetris: --env must be tetris, not {cfg.env!r}")
    res = dict(command='python bench/llm_evolution.py ' + ' '.join(sys.argv[1:] if argv is None else argv), config=asdict(cfg),
               games=o.games, ref_games=o.ref_games or o.games, heldout_ticks=o.heldout_ticks, harness=harness(o.evals))
    print(json.dumps(res['harness']), flush=True)
    out = Path(o.run_dir or tempfile.mkdtemp(prefix='bench_llm_'))
    t = time.perf_counter(); s = EvolutionRun(out, cfg).run()
    res['run'] = dict(seconds=time.perf_counter() - t, stop_reason=s['stop_reason'], programs=s['programs'], failed=s['failed'],
                      seed_score=s['seed_score'], best_id=s['best_id'], best_train=s['best_metrics'])
    print(json.dumps(res['run'], default=float), flush=True)
    res['heldout'] = rows = heldout((out/'best_program.py').read_text(), o)
    pl = next(r for r in rows if r['player'] == 'pufferlib genome'); be = next(r for r in rows if r['player'] == 'best evolved')
    res['best_vs_pufferlib'] = dict(ratio=be['mean']/pl['mean'], difference=be['mean'] - pl['mean'])
    print(json.dumps(res['best_vs_pufferlib']))
    if o.out: atomic_write_json(o.out, res); print(f"figures written to {o.out}")
    return res

if __name__ == '__main__': main()
