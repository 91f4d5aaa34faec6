"""The design's surrogate target read against the ceiling that the fitness noise allows.

The replicator's fitness estimator is judged by its R^2 on genomes it has not seen (the design's target: R^2 > 0.7).
A genome's fitness is one noisy evaluation, and no predictor can explain more of its variance than the share that
repeats when the same policies are evaluated again: for fitness = true value + independent noise, the best R^2
against one evaluation equals the test-retest reliability r (the correlation of two evaluations of the same policies
on two map seeds). This bench runs the replicator's training loop (`ReplicatorTrainingLoop`, 41_hypernetwork's
settings) and, every --retest-every generations, takes a fresh generation of genomes, evaluates each genome twice
(developed anew, on two seeds; also the same policies on two seeds) and prints: the reliability r, the estimator's R^2 on those genomes against one evaluation (it has not
seen them), their ratio (the share of the explainable variance that is explained), and how many evaluations per
genome averaging would need for a ceiling of 0.7 (Spearman-Brown). The replacement target is R^2 >= 0.7 r.
Writes --out (JSON, committed under nbs/measured/ and read by 50_training).
Usage: python bench/surrogate_ceiling.py [--generations 40] [--retest-every 10]
"""
import datetime, json, os, time
from dataclasses import dataclass
from typing import Annotated
import numpy as np
import torch
from genome_lab.core import machine
from genome_lab.evolution.hypernetwork import evaluate_population
from genome_lab.evolution.replicator_run import ReplicatorConfig, ReplicatorTrainingLoop
from genome_lab.core import atomic_write_json, measured_dir, config_parser, config_from_args

def spearman_brown_k(r:float, target:float=0.7)->float: # evaluations to average for reliability `target`
    return float('inf') if r <= 0 else target * (1 - r) / (r * (1 - target))

def retest(loop:ReplicatorTrainingLoop, seed:int)->dict:
    """A fresh generation of genomes, each genome's fitness measured three times as training measures it (its two
    antithetic policies, mean fitness): twice with the same developed policies on two map seeds (`reliability_map`: the
    evaluation's noise alone), once more developed anew (the hypernetwork's sampling noise too) on a third seed. The
    estimator sees a genome, not its policies, so its ceiling is `reliability`, the correlation of the first and the last."""
    cfg, g = loop.cfg, torch.Generator().manual_seed(seed)
    genomes, dev = loop.pm.next(g)
    fit = lambda d, s: evaluate_population(loop.pm.hn.policy_config, d['params'], loop.arena, cfg.steps, seed=s, fitness=cfg.fitness)['fitness'].view(2, -1).mean(0)
    f1, f_map, f2 = fit(dev, seed + 1), fit(dev, seed + 2), fit(loop.pm.trainer.develop(genomes, g), seed + 3)
    corr = lambda x, y: float(np.corrcoef(x.numpy(), y.numpy())[0, 1])
    r, r_map = corr(f1, f2), corr(f1, f_map)
    x = loop.features(genomes)   # what the surrogate reads of them
    r2 = loop.est.r2(x, f1) if loop.est.fitted else float('nan')
    r2_mean = loop.est.r2(x, (f1 + f2) / 2) if loop.est.fitted else float('nan')
    return dict(generation=loop.generation, reliability=r, reliability_map=r_map, estimator_r2=r2, estimator_r2_vs_mean=r2_mean,
                ceiling_of_mean=2 * r / (1 + r) if r > -1 else float('nan'), share_of_ceiling=r2 / r if r > 0 else float('nan'),
                evaluations_for_0_7=spearman_brown_k(r))

@dataclass
class BenchOptions:
    "The bench's own settings (the replicator's are `ReplicatorConfig`'s flags, from `BASE`)."
    retest_every: Annotated[int, 'generations between retests'] = 10
    out: Annotated[str, 'JSON to write (default nbs/measured/surrogate_ceiling_DATE.json)'] = ''

BASE = ReplicatorConfig(generations=40, eval_interval=0)

def main():
    a = config_parser(BenchOptions, ReplicatorConfig, description=__doc__.splitlines()[0], allow_abbrev=False).parse_args()
    b, cfg = config_from_args(BenchOptions, a), config_from_args(ReplicatorConfig, a, base=BASE)
    out = b.out or str(measured_dir()/f'surrogate_ceiling_{datetime.date.today()}.json')
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}; population {cfg.population}, {cfg.agents_each} snakes x {cfg.steps} steps per policy, fitness {cfg.fitness!r}", flush=True)
    loop, rows, t0 = ReplicatorTrainingLoop(cfg), [], time.perf_counter()
    print(" gen | reliability r (policies of the map alone) | estimator R2 (one evaluation) | R2 / r | R2 vs mean of two | evaluations for a 0.7 ceiling")
    while True:
        if loop.generation % b.retest_every == 0:
            row = retest(loop, cfg.seed * 1000 + loop.generation)
            rows.append(row)
            print(f"{row['generation']:4d} | {row['reliability']:13.3f} ({row['reliability_map']:.3f}) {'':22s} | {row['estimator_r2']:29.3f} | {row['share_of_ceiling']:6.2f} | "
                  f"{row['estimator_r2_vs_mean']:17.3f} | {row['evaluations_for_0_7']:.1f}", flush=True)
        if loop.generation >= cfg.generations: break
        loop.step()
    r2 = [h['surrogate/r2'] for h in loop.history if not np.isnan(h['surrogate/r2'])]
    rel = [r['reliability'] for r in rows]
    summary = dict(estimator_r2_median=float(np.median(r2)), estimator_r2_above_0_7=float(np.mean(np.array(r2) > 0.7)),
                   reliability_mean=float(np.mean(rel)), reliability_std=float(np.std(rel, ddof=1)), retests=len(rows),
                   target_old=0.7, target_new=f"R2 >= 0.7 x reliability = {0.7 * np.mean(rel):.3f}",
                   share_of_ceiling_median=float(np.median(r2) / np.mean(rel)) if np.mean(rel) > 0 else None)
    print(f"estimator R2 on new genomes over {len(r2)} generations: median {summary['estimator_r2_median']:.3f} (old target > 0.7 met in "
          f"{summary['estimator_r2_above_0_7']:.1%}); reliability r {summary['reliability_mean']:.3f} ± {summary['reliability_std']:.3f} "
          f"over {len(rows)} retests: the ceiling; new target {summary['target_new']}; {time.perf_counter() - t0:.0f} s")
    atomic_write_json(out, dict(machine=machine(), date=str(datetime.date.today()), config=dict(generations=cfg.generations, population=cfg.population,
                      agents_each=cfg.agents_each, steps=cfg.steps, fitness=cfg.fitness, seed=cfg.seed), retests=rows,
                      estimator_r2=r2, summary=summary, seconds=time.perf_counter() - t0))
    print(f"wrote {out}")

if __name__ == '__main__': main()
