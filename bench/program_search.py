"""Bench for 65_llm_evolution's program search at the frontier (issue 34): parallel evaluation, the evaluation cache,
and the evolved program against El-Tetris on held-out games.

1. Parallel speedup: one batch of distinct Tetris programs (offline mutations of the El-Tetris player) evaluated by
   `EvolutionRun.evaluate_programs` with `workers=1` and with `--workers`, each on an empty cache; the results must be
   equal; the figure is serial seconds / parallel seconds (this machine: 2 cores, shared with other jobs meanwhile).
2. Search seeds: one offline search per seed (`EvolutionConfig`'s flags, the bench's PRESET: generation 0 holds the
   template and the reference players, Dellacherie and El-Tetris, with all the template's features), then CMA-ES over
   its best program's constants (`tune_constants`), the search's cache hit rate and archive coverage per generation,
   and the tuned program (and the one before tuning, where it differs) against El-Tetris on the same held-out games at
   the same tick cap (mean lines, sem, share of games cut off by the cap: `censored`); El-Tetris plays them once.
   Each row holds the tuned program's lineage (its ancestors' database rows), which `register_program` registers.
With `--out FILE` the figures are written as JSON (`nbs/measured/program_search.json` is the file the chapter shows).
Usage: OMP_NUM_THREADS=1 python bench/program_search.py [--seeds 0,1,2] [--batch 6] [--heldout-games 8]
       [--heldout-ticks 10000] [--out FILE]
"""
import argparse, json, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated   # a script's dataclass documents its fields here (docments reads no `__main__` comments)
import numpy as np
from genome_lab.core import config_parser, config_from_args, atomic_write_json
from genome_lab.programs.llm_evolution import EvolutionConfig, EvolutionRun
from genome_lab.programs.evaluation import play_program
from genome_lab.programs.llm_backends import OfflineMutator
from genome_lab.programs.sandbox import SandboxLimits
from genome_lab.programs.program_policy import program_env
from genome_lab.programs.tetris_players import player_source, EL_TETRIS_WEIGHTS

PRESET = dict(max_generations=3, children_per_generation=6, max_ticks=800, seed_references=True)   # where, and why
PRESET_WHY = ("the run of bench/llm_evolution.py and 65_llm_evolution's defaults (generations 3, children 6), "
              "with training games of 800 ticks: good players all survive 400, so 400 ticks hardly tell them apart; "
              "the islands start from the reference players too, so the search refines the best known features")

@dataclass
class BenchOptions:
    "The bench's own options (the search runs' are `EvolutionConfig`'s)."
    seeds: Annotated[str, 'search seeds, comma-separated, one search each'] = '0,1,2'
    batch: Annotated[int, 'distinct programs in the timed batch'] = 6
    heldout_games: Annotated[int, 'held-out games per player and search seed'] = 8
    heldout_ticks: Annotated[int, 'tick cap of a held-out game (10,000: the env limit)'] = 10_000
    heldout_seed0: Annotated[int, 'first held-out game seed (disjoint from the training seeds)'] = 100_000
    out: Annotated[str, 'JSON file for the figures, e.g. nbs/measured/program_search.json'] = ''

def speedup(cfg:EvolutionConfig, o:BenchOptions)->dict: # serial and parallel seconds of one batch, and their ratio
    env, rng = program_env('tetris', cfg.max_ticks), np.random.default_rng(0)
    base = player_source(EL_TETRIS_WEIGHTS, 'el-tetris')
    codes = [OfflineMutator(env, cfg.mutation_sigma).mutate(base, rng) for _ in range(o.batch)]
    assert len(set(codes)) == len(codes), 'the batch must hold distinct programs'
    out, results = dict(programs=o.batch, games_per_eval=cfg.games_per_eval, ticks=cfg.max_ticks), {}
    play_program(base, env, [cfg.train_seed0], SandboxLimits())   # warm-up, not timed: the first start reads modules
    for w in (1, cfg.workers):
        run = EvolutionRun(tempfile.mkdtemp(prefix=f'bench_ps_w{w}_'), replace(cfg, workers=w))
        t = time.perf_counter(); results[w] = run.evaluate_programs(codes)
        out[f'seconds_workers_{w}'] = time.perf_counter() - t
        assert all(r['ok'] and not r['cached'] for r in results[w]), results[w]
    same = [r['metrics'] for r in results[1]] == [r['metrics'] for r in results[cfg.workers]]
    assert same, 'parallel differs from serial'
    out['workers'] = cfg.workers
    out['speedup'] = out['seconds_workers_1']/out[f'seconds_workers_{cfg.workers}']
    return out

def lines_row(res:dict)->dict: # mean, sem, censored share of one player's held-out games
    l = np.array([g['lines'] for g in res['games']], float)
    sem = float(l.std(ddof=1)/np.sqrt(len(l))) if len(l) > 1 else float('nan')
    return dict(mean=float(l.mean()), sem=sem, n=len(l),
                censored=float(np.mean([g['truncated'] for g in res['games']])), seconds=res['seconds'],
                games=[[g['lines'], g['ticks']] for g in res['games']])   # [lines, ticks] per game

def heldout(codes:list, o:BenchOptions)->list: # one `lines_row` per program, on the held-out games
    held = list(range(o.heldout_seed0, o.heldout_seed0 + o.heldout_games))
    env, lim = program_env('tetris', o.heldout_ticks), SandboxLimits(cpu_s=36_000, wall_s=36_000, step_timeout_s=60)
    jobs = [(c, s) for c in codes for s in held]   # one game a job: both workers busy to the end
    with ThreadPoolExecutor(2) as ex: res = list(ex.map(lambda j: play_program(j[0], env, [j[1]], lim), jobs))
    assert all(r['ok'] for r in res), [r['message'] for r in res if not r['ok']]
    per = [res[k*len(held):(k + 1)*len(held)] for k in range(len(codes))]
    return [lines_row(dict(games=[g for r in rs for g in r['games']], seconds=sum(r['seconds'] for r in rs)))
            for rs in per]

def lineage(db, pid:str)->list: # database rows of `pid` and its ancestors, `pid` first
    out, todo = {}, [pid]
    while todo:
        q = todo.pop()
        if q not in out: out[q] = asdict(db[q]); todo += db[q].parents
    return list(out.values())

def search(seed:int, cfg:EvolutionConfig, o:BenchOptions, elt:dict)->dict: # one row of `seeds`; elt: El-Tetris' row
    run_dir = Path(tempfile.mkdtemp(prefix=f'bench_ps_seed{seed}_'))
    t = time.perf_counter(); run = EvolutionRun(run_dir, replace(cfg, seed=seed)); s = run.run()
    searched = run.db[s['best_id']]
    tuned = (run.db[run.tune_constants(searched.id, cfg.cma_generations, cfg.cma_popsize, cfg.cma_sigma)]
             if cfg.cma_generations else searched)   # CMA-ES (EvolutionConfig's cma_*) over the search's best, at the end
    secs = time.perf_counter() - t
    rows = heldout([tuned.code] + ([searched.code] if searched.id != tuned.id else []), o)
    e, b = rows[0], rows[-1]
    history = [dict(generation=h['generation'], archive_coverage=h['archive_coverage'], best_so_far=h['best_so_far'],
                    cache_hits=h['cache']['hits'], cache_misses=h['cache']['misses']) for h in run.history]
    lin = lineage(run.db, tuned.id)
    return dict(seed=seed, evolved_lines=e['mean'], evolved_sem=e['sem'], eltetris_lines=elt['mean'],
                eltetris_sem=elt['sem'], cap=o.heldout_ticks, heldout_games=e['n'],
                censored=dict(evolved=e['censored'], eltetris=elt['censored'], searched=b['censored']),
                searched_lines=b['mean'], searched_sem=b['sem'], evolved_id=tuned.id, evolved_code=tuned.code,
                evolved_train=tuned.metrics, evolved_seconds=e['seconds'], evolved_games=e['games'],
                eltetris_train=next((p.metrics for p in run.db.values() if p.notes.endswith('ElTetris')), None),
                descends_from=sorted(r['notes'] for r in lin if r['strategy'] == 'seed'),
                steps=[r['strategy'] for r in lin], run_name=f'program_search_seed{seed}', lineage=lin,
                cma=dict(generations=cfg.cma_generations, popsize=cfg.cma_popsize, sigma=cfg.cma_sigma),
                search_seconds=secs, programs=s['programs'], failed=s['failed'], searched_id=searched.id,
                searched_train=searched.metrics, cache=dict(run.cache_counts), seed_score=s['seed_score'],
                history=history)

def parser()->argparse.ArgumentParser:
    return config_parser(EvolutionConfig, BenchOptions, description=__doc__.splitlines()[0],
                         epilog=f"Run flags default to EvolutionConfig's fields except the bench's PRESET {PRESET}: "
                                f"{PRESET_WHY}")

def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    cfg, o = config_from_args(EvolutionConfig, a, EvolutionConfig(**PRESET)), config_from_args(BenchOptions, a)
    if cfg.env != 'tetris': ap.error(f"the held-out comparison plays Tetris: --env must be tetris, not {cfg.env!r}")
    res = dict(command='python bench/program_search.py ' + ' '.join(sys.argv[1:] if argv is None else argv),
               config=asdict(cfg), machine='2 CPU cores, shared with other jobs while measured')
    res['parallel'] = sp = speedup(cfg, o); res['parallel_speedup'] = sp['speedup']
    print(json.dumps(sp), flush=True)
    t = time.perf_counter(); elt = heldout([player_source(EL_TETRIS_WEIGHTS, 'el-tetris')], o)[0]
    res['eltetris'] = elt; print(json.dumps(dict(eltetris=elt, seconds=time.perf_counter() - t)), flush=True)
    res['seeds'] = []
    for seed in o.seeds.split(','):
        res['seeds'].append(row := search(int(seed), cfg, o, elt))
        print(json.dumps({k: v for k, v in row.items() if k not in ('lineage', 'evolved_code')}, default=float),
              flush=True)
    hits, misses = (sum(r['cache'][k] for r in res['seeds']) for k in ('hits', 'misses'))
    res['cache_hit_rate'] = hits/(hits + misses) if hits + misses else float('nan')
    print(json.dumps({k: res[k] for k in ('parallel_speedup', 'cache_hit_rate')}))
    if o.out: atomic_write_json(o.out, res); print(f"figures written to {o.out}")
    return res

if __name__ == '__main__': main()
