"""Bench for notebook 07 (LLM evolution of Tetris players).

1. Harness throughput: evaluations/s and actions/s of the sandboxed harness on a Tetris player program, against
   the same program played in-process (no sandbox) in the same process: the ratio is the sandbox's cost.
2. The default offline run (the notebook's defaults), then a held-out comparison on full games (10,000 ticks at
   most, the env's own limit): lines per game (mean, std, n) of PufferLib's tetris genome, the Dellacherie and
   El-Tetris placement players, and the best evolved program, all on the same held-out seeds.

Usage: OMP_NUM_THREADS=1 python bench/llm_evolution.py [--games 16] [--ref-games 16] [--evals 6] [--generations 2] [--children 4] [--out DIR]
"""
import argparse, json, os, sys, tempfile, time
from pathlib import Path
import numpy as np
import torch
torch.set_num_threads(1)
from genome_lab.llm_evolution import EvolutionConfig, EvolutionRun, compare_heldout
from genome_lab.sandbox import program_env
from genome_lab.tetris_players import player_source, play_local, TetrisGame, DELLACHERIE_WEIGHTS, EL_TETRIS_WEIGHTS, MAX_TICKS
from genome_lab.sandbox import play_games, SandboxLimits

def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--games', type=int, default=16, help='held-out games per player')
    ap.add_argument('--ref-games', type=int, default=0, help='held-out games of the Dellacherie and El-Tetris players (0: --games)')
    ap.add_argument('--heldout-ticks', type=int, default=MAX_TICKS)
    ap.add_argument('--evals', type=int, default=6, help='sandboxed evaluations timed')
    ap.add_argument('--generations', type=int, default=3)
    ap.add_argument('--children', type=int, default=6)
    ap.add_argument('--games-per-eval', type=int, default=2)
    ap.add_argument('--max-ticks', type=int, default=400)
    ap.add_argument('--out', default='')
    a = ap.parse_args(argv)
    res = {}
    # 1. harness throughput on the El-Tetris program, 2 games of 400 ticks per evaluation
    src, seeds = player_source(EL_TETRIS_WEIGHTS, 'el-tetris'), [1000, 1001]
    t = time.perf_counter(); steps = 0
    for _ in range(a.evals):
        g = TetrisGame(400); r = play_games(src, g, seeds); g.close(); steps += r.steps; assert r.ok, r
    dt = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(a.evals): play_local(src, seeds, 400)
    dl = time.perf_counter() - t
    res['harness'] = dict(evals_per_s=a.evals/dt, actions_per_s=steps/dt, in_process_evals_per_s=a.evals/dl,
                          sandbox_cost_ratio=dt/dl, evals=a.evals, games_per_eval=2, ticks_per_game=400)
    print(json.dumps(res['harness']), flush=True)
    # 2. default offline run
    out = Path(a.out or tempfile.mkdtemp(prefix='bench_llm_'))
    cfg = EvolutionConfig(max_generations=a.generations, children_per_generation=a.children,
                          games_per_eval=a.games_per_eval, max_ticks=a.max_ticks, seed=0)
    t = time.perf_counter(); s = EvolutionRun(out, cfg).run(); res['run'] = dict(seconds=time.perf_counter() - t, dir=str(out),
        stop_reason=s['stop_reason'], programs=s['programs'], failed=s['failed'], seed_score=s['seed_score'],
        best_id=s['best_id'], best_train=s['best_metrics'])
    print(json.dumps(res['run'], default=float), flush=True)
    best = (out/'best_program.py').read_text()
    held = list(range(100_000, 100_000 + a.games))
    players = {'best evolved': best, 'template (gen 0)': program_env('tetris').player_template(),
               'dellacherie': player_source(DELLACHERIE_WEIGHTS, 'dellacherie'), 'el-tetris': player_source(EL_TETRIS_WEIGHTS, 'el-tetris')}
    rows = compare_heldout({}, held, a.heldout_ticks, pufferlib=True)
    r = rows[0]; print(f"{r['player']:>18}: {r['mean']:8.2f} ± {r['std']:7.2f} lines/game (n={r['n']}, {r['ticks']:.0f} ticks/game, {r['seconds']} s)", flush=True)
    for name, src in players.items():
        n = a.ref_games if a.ref_games and name in ('dellacherie', 'el-tetris') else a.games
        rows += compare_heldout({name: src}, held[:n], a.heldout_ticks, pufferlib=False)
        r = rows[-1]; print(f"{r['player']:>18}: {r['mean']:8.2f} ± {r['std']:7.2f} lines/game (n={r['n']}, {r['ticks']:.0f} ticks/game, {r['seconds']} s)", flush=True)
    res['heldout'] = rows
    pl = next(r for r in rows if r['player'] == 'pufferlib genome'); be = next(r for r in rows if r['player'] == 'best evolved')
    res['best_vs_pufferlib'] = dict(ratio=be['mean']/pl['mean'], difference=be['mean'] - pl['mean'])
    print(json.dumps(res['best_vs_pufferlib']))
    (out/'bench.json').write_text(json.dumps(res, indent=1, default=float))
    return res

if __name__ == '__main__': main()
