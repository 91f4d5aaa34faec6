"""The design's success metrics for the replicator dynamics + diffusion hypernetwork on the snake arena, next to plain
evolution strategies on the policy weights (no genome space, no hypernetwork) with the same evaluation budget.

Prints, for one training run (`ReplicatorTrainingLoop`) and one control run (`run_policy_es`) with the same
population, arena, steps and seeds:
1. fitness (as `--fitness` counts it; mean and max over the population) every `--report` generations for both runs,
   the latent distribution's entropy and the fitness estimator's R^2 on genomes it had not seen;
2. the score-versus-evaluations curve: length at death of the distribution's mean genome on PufferLib's training map,
   against the agent-steps spent in training evaluations;
3. the final comparisons on PufferLib's training map (640x360, 4096 food, first episode of every snake, greedy,
   length at death): the best evolved genome (chosen among candidates on a selection seed, scored on another) against
   the PufferLib-trained snake genome on the same seed (the bar: at least 0.5x its mean; for both, how often they eat
   a food next to their head and what their deaths ran into: wall, own body, another snake), policies developed from new
   genomes (never sampled in training) against randomly initialised policies of the same architecture (`init_policy`, other seeds), and the ES
   control's mean policy.
With `--out FILE` the final figures (and the curve) are also written as JSON: `nbs/measured/` keeps the ones the
notebooks quote. The training flags are `ReplicatorConfig`'s fields (`genome_lab.core.config_parser`); the bench's runs
use its defaults except `PRESET`.
Usage: python bench/hypernetwork.py [--generations 600] [--steps 2048] [--control-only] [--run-dir DIR [--resume]] [--out FILE]
"""
import argparse, json, math, sys, tempfile, time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated   # a script's dataclass documents its fields here: docments reads no comments from `__main__`
import numpy as np
import pandas as pd
import torch
from genome_lab.evolution.hypernetwork import DiffusionHypernetwork, policy_config, init_policy, evaluate_population
from genome_lab.evolution.replicator_run import (ReplicatorConfig, train_replicator, run_policy_es, PolicyES, stored_config,
                                       CONTROL_FILE, LOOP_FILE, checkpoint_meta)
from genome_lab.core import config_parser, config_from_args, atomic_write_json, run_lock, RunLocked, machine
from genome_lab.arenas.policies import load_pufferlib_policy
from genome_lab.arenas.evaluation import evaluate

PRESET = dict(eval_interval=50)   # where the bench's runs differ from `ReplicatorConfig()`, and why:
PRESET_WHY = "a reading of the curve plays 64 snakes on 4 maps, greedy and sampled, so at full budget the curve is read every 50 generations"
PLAY_STEPS = 1500   # steps of the greedy game that `play` reads habits from

def score(policy, snakes, seed, max_steps)->dict: # length at death of each snake's first episode, and how it lived
    r = evaluate(policy, 'snake', seed=seed, max_steps=max_steps, progress=False, num_snakes=snakes)
    s, e = r.stats()['score'], r.episodes
    return dict(mean=s['mean'], std=s['std'], n=int(s['n']), censored=int(r.censored), lives=float(e.length.mean()),
                food_per_100=100 * float((e.score - 1).sum() / e.length.sum()))

def fmt(s): return f"{s['mean']:7.2f} ± {s['std']:6.2f} (n={s['n']}{', censored ' + str(s['censored']) if s['censored'] else ''})"
def habits(s): return f"lives {s['lives']:.0f} steps on average and eats {s['food_per_100']:.3f} food per 100 steps"

def play(policy, snakes=256, seed=202, steps=PLAY_STEPS)->dict: # {'adjacent_food', 'causes': {cause: share of deaths}, 'deaths', 'steps'}
    """Two habits, from one greedy game on PufferLib's map: how often the snake eats a food (or corpse) lying in exactly
    one cell next to its head (a random move takes it 1 time in 4), and what each death ran into
    (`KillTracker.death_causes`: a wall, its own body, another snake, or a contested cell)."""
    from genome_lab.arenas.arena import SnakeArena, SNAKE_FOOD, SNAKE_CORPSE
    from genome_lab.tournaments.tournament import KillTracker, CAUSES
    arena = SnakeArena(num_snakes=snakes); obs = arena.reset(seed); state = policy.initial_state(snakes)
    c = obs.shape[1] // 2; nb = [(c - 1, c), (c + 1, c), (c, c - 1), (c, c + 1)]   # cells of actions up, down, left, right
    took = seen = 0; causes, kt = dict.fromkeys(CAUSES, 0), KillTracker(arena)
    for _ in range(steps):
        act, state = policy.act(obs, state, greedy=True)
        food = np.isin(np.stack([obs[:, r, q] for r, q in nb], 1), (SNAKE_FOOD, SNAKE_CORPSE))
        one = food.sum(1) == 1
        took += int((food[np.arange(snakes), act] & one).sum()); seen += int(one.sum())
        kt.before()
        obs, rew, died = arena.step(act)
        if died.any():
            for k, v in kt.death_causes(kt.after(act, rew)[0][died], np.flatnonzero(died)).items(): causes[k] += v
    arena.close()
    n = sum(causes.values())
    return dict(adjacent_food=took / seen if seen else float("nan"), causes={k: v / max(n, 1) for k, v in causes.items()}, deaths=n, steps=steps)

def in_play(p:dict)->str: # one line for the bench
    return (f"takes adjacent food {p['adjacent_food']:.3f}; its {p['deaths']} deaths in {p['steps']} steps ran into "
            + ", ".join(f"{k} {v:.3f}" for k, v in p['causes'].items()))

@dataclass
class BenchOptions:
    "The bench's own options (the training run's are `ReplicatorConfig`'s)."
    final_snakes: Annotated[int, 'snakes of the final evaluations (n)'] = 256
    new_genomes: Annotated[int, 'never-sampled genomes developed and scored'] = 16
    max_steps: Annotated[int, 'step cap of the final evaluations'] = 20_000
    report: Annotated[int, 'generations between printed fitness rows'] = 10
    run_dir: Annotated[str, "checkpoint folder of both runs ('' for a temporary one)"] = ''
    resume: Annotated[bool, 'continue the checkpoints in --run-dir with their settings (a training flag given must match, --generations aside; a control not stored yet starts)?'] = False
    skip_control: Annotated[bool, "run and score only the training run (and PufferLib's snake)?"] = False
    control_only: Annotated[bool, "run and score only the ES control (and PufferLib's snake)?"] = False
    out: Annotated[str, 'JSON file for the final figures, e.g. nbs/measured/hypernetwork_headline.json'] = ''

def parser()->argparse.ArgumentParser:
    return config_parser(ReplicatorConfig, BenchOptions, description=__doc__.splitlines()[0],
                         epilog=f"Training flags default to ReplicatorConfig's fields except the bench's PRESET {PRESET}: {PRESET_WHY}")

def settings(a:argparse.Namespace)->ReplicatorConfig: # the run's config: the checkpoint's on --resume, else PRESET's, with the flags given
    o = config_from_args(BenchOptions, a)
    return config_from_args(ReplicatorConfig, a, stored_config(o.run_dir) if o.resume else ReplicatorConfig(**PRESET))

def train(cfg:ReplicatorConfig, o:BenchOptions, run_dir:Path)->tuple: # (loop, history, control history, control ES); None for a run skipped
    loop = hist = ctrl = es = None
    if not o.control_only:
        t0 = time.perf_counter()
        start = checkpoint_meta(run_dir/LOOP_FILE)['generation'] if o.resume else 0   # 0, or where a resumed run stopped
        loop = train_replicator(cfg, run_dir, resume=o.resume, progress=False, lock=False)   # `main` holds the folder's lock
        hist = pd.DataFrame(loop.history)
        print(f"replicator run: {time.perf_counter() - t0:.0f} s for generations {start}-{cfg.generations}, "
              f"{int(hist.agent_steps.iloc[-1]):,} agent-steps")
    if not o.skip_control:
        t0, resume = time.perf_counter(), o.resume and (run_dir/CONTROL_FILE).exists()
        start = checkpoint_meta(run_dir/CONTROL_FILE)['generation'] if resume else 0
        ctrl, es = run_policy_es(cfg, run_dir, resume=resume, progress=False)
        print(f"control ES: {time.perf_counter() - t0:.0f} s for generations {start}-{cfg.generations}, {int(ctrl.agent_steps.iloc[-1]):,} agent-steps")
    return loop, hist, ctrl, es

def fitness_rows(cfg:ReplicatorConfig, hist, ctrl, report:int):
    print(f"\n1. fitness ({cfg.fitness} reward; food: eaten per snake, counted as the fitness counts; means over {report} generations; {cfg.agents_each} snakes x {cfg.steps} steps per genome, population {cfg.population})")
    print(" gen" + (" | replicator mean   max | food | entropy | estimator R2" if hist is not None else "")
          + (" | control ES mean   max | food" if ctrl is not None else ""))
    for g in range(0, cfg.generations, report):
        w = slice(g, g + report)
        line = f"{g:4d}"
        if hist is not None:
            r = hist.iloc[w]
            line += (f" | {r['charts/fitness_mean'].mean():15.3f} {r['charts/fitness_best'].mean():5.2f} | {r['charts/food'].mean():4.1f} | "
                     f"{r['replicator/entropy'].iloc[-1]:7.2f} | {np.nanmean(r['surrogate/r2']):12.3f}")
        if ctrl is not None:
            c = ctrl.iloc[w]
            line += f" | {c['charts/fitness_mean'].mean():15.3f} {c['charts/fitness_best'].mean():5.2f} | {c['charts/food'].mean():4.1f}"
        print(line)

def training_figures(cfg:ReplicatorConfig, loop, hist, report:int)->dict: # fitness, entropy, estimator and how far the mean genome's policy moved
    floor = 0.5 * cfg.hypernet.genome_dim * (1 + math.log(2 * math.pi)) + cfg.hypernet.genome_dim * math.log(0.1)
    r2 = hist['surrogate/r2'].dropna()
    genomes, dev = loop.pm.next(torch.Generator().manual_seed(cfg.seed + 4242))   # a generation of the final distribution, evaluated twice
    f1, f2 = [evaluate_population(loop.pm.hn.policy_config, dev['params'], loop.arena, cfg.steps, seed=s, fitness=cfg.fitness)['fitness'].view(2, -1).mean(0)
              for s in (cfg.seed + 11, cfg.seed + 12)]
    mean = {k: v[0] for k, v in loop.pm.develop_mean(loop.pm.dist.mean()[None]).items()}
    init = {k: v[0] for k, v in PolicyES(cfg).mean_params().items()}   # init_policy: where a decoder trained from fitness alone starts
    rms = lambda x: float(x.pow(2).mean().sqrt())
    moved = {k: rms(mean[k] - init[k]) for k in init if not k.startswith('value.')}
    codes = (mean['encoder.weight'] - init['encoder.weight']).view(cfg.hypernet.hidden, -1, 8)
    by_code = [rms(codes[:, :, c]) for c in range(8)]
    fm, trust = hist['charts/fitness_mean'], hist['surrogate/trust']
    return dict(fitness_first=float(fm[:report].mean()), fitness_last=float(fm[-report:].mean()),
                lowest_entropy=float(hist['replicator/entropy'].min()), entropy_floor=floor, estimator_r2_median=float(r2.median()),
                estimator_r2_above_0=float((r2 > 0).mean()), trust_mean=float(trust.mean()), trust_above_0=float((trust > 0).mean()),
                test_retest=float(np.corrcoef(f1.numpy(), f2.numpy())[0, 1]), moved=moved, encoder_initial_rms=rms(init['encoder.weight']),
                encoder_by_code=[min(by_code), max(by_code)])

def print_training(t:dict, cfg:ReplicatorConfig, report:int):
    print(f"  replicator: first {report} generations' mean fitness {t['fitness_first']:.3f}, last {report}' "
          f"{t['fitness_last']:.3f}; lowest entropy {t['lowest_entropy']:.2f} nats (threshold {t['entropy_floor']:.2f}: "
          f"a Gaussian of std 0.1 per coordinate); estimator R2 on new genomes: median {t['estimator_r2_median']:.3f}, "
          f"above 0 in {t['estimator_r2_above_0']:.1%} of generations; replicator step dt x trust: mean trust {t['trust_mean']:.3f}, "
          f"above 0 in {t['trust_above_0']:.1%} of generations")
    print(f"  test-retest correlation of a genome's training fitness (same {cfg.population} genomes and policies, two map seeds): {t['test_retest']:.3f};"
          f" the R2 any estimator can reach on one noisy evaluation is at most about this")
    m = t['moved']
    print(f"  mean genome's policy moved from where evolution started (init_policy) by an rms of {min(m.values()):.3f}-{max(m.values()):.3f} per tensor "
          f"(encoder {m['encoder.weight']:.3f}, initially {t['encoder_initial_rms']:.3f}); encoder rows by cell code: "
          f"{t['encoder_by_code'][0]:.3f}-{t['encoder_by_code'][1]:.3f}")

def genome_figures(cfg:ReplicatorConfig, loop, o:BenchOptions, puffer)->dict: # the best genome and new genomes against PufferLib's snake and random policies
    top = loop.top_genomes(8, seed=cfg.seed + 12345)
    params = loop.pm.develop_mean(top)
    sel = [score(loop.pm.hn.policy(params, i), cfg.eval_snakes, 101, o.max_steps)['mean'] for i in range(len(top))]
    best = loop.pm.hn.policy(params, int(np.argmax(sel)))
    out = dict(best=score(best, o.final_snakes, 202, o.max_steps) | dict(play=play(best, o.final_snakes)),
               best_64=score(best, cfg.eval_snakes, 202, o.max_steps), pufferlib_64=score(puffer, cfg.eval_snakes, 202, o.max_steps))
    new = loop.pm.dist.sample(o.new_genomes, torch.Generator().manual_seed(cfg.seed + 999))
    newp = loop.pm.develop_mean(new)
    dev = [score(loop.pm.hn.policy(newp, i), cfg.eval_snakes, 303, o.max_steps)['mean'] for i in range(o.new_genomes)]
    rnd = [score(init_policy(policy_config(cfg.hypernet.hidden), seed=cfg.seed + 7 + i), cfg.eval_snakes, 303, o.max_steps)['mean'] for i in range(o.new_genomes)]
    spread = lambda x: dict(mean=float(np.mean(x)), std=float(np.std(x)), scores=[float(v) for v in x])
    return out | dict(new_genomes=spread(dev), random_policies=spread(rnd), new_above_random=float(np.mean(np.array(dev) > np.mean(rnd))))

def print_genomes(g:dict, p:dict, o:BenchOptions, snakes:int):
    b = g['best']
    print(f"  best evolved genome (of 8 candidates, selected on seed 101): {fmt(b)}; ratio {b['mean']/p['mean']:.3f} (bar 0.5); {habits(b)}; {in_play(b['play'])}")
    print(f"  the same genome with {snakes} snakes on the map (as the curve and the rows below): {fmt(g['best_64'])}; "
          f"PufferLib's snake with {snakes}: {fmt(g['pufferlib_64'])}, ratio {g['best_64']['mean']/g['pufferlib_64']['mean']:.3f}")
    print(f"  {o.new_genomes} new genomes, developed:          mean of per-genome means {g['new_genomes']['mean']:.2f} ± {g['new_genomes']['std']:.2f}"
          f" ({snakes} snakes each)")
    print(f"  {o.new_genomes} randomly initialised policies:   mean of per-policy means {g['random_policies']['mean']:.2f} ± {g['random_policies']['std']:.2f}")
    print(f"  developed above the random policies' mean: {g['new_above_random']:.2f}")

def final(cfg:ReplicatorConfig, o:BenchOptions, loop, hist, es)->dict: # section 3, printed and returned
    print(f"\n3. final evaluations on the training map, {o.final_snakes} snakes, first episode each")
    puffer = load_pufferlib_policy('snake')
    p = score(puffer, o.final_snakes, 202, o.max_steps) | dict(play=play(puffer, o.final_snakes))
    print(f"  PufferLib-trained snake genome:                             {fmt(p)}; {habits(p)}; {in_play(p['play'])}")
    out = dict(pufferlib=p)
    if es is not None:
        c = score(DiffusionHypernetwork(cfg.hypernet, seed=cfg.seed).policy(es.mean_params(), 0), o.final_snakes, 202, o.max_steps)
        print(f"  control ES mean policy:                                     {fmt(c)}; ratio {c['mean']/p['mean']:.3f}; {habits(c)}")
        out |= dict(control=c, control_ratio=c['mean'] / p['mean'])
    if hist is None: return out
    t = training_figures(cfg, loop, hist, o.report)
    print_training(t, cfg, o.report)
    g = genome_figures(cfg, loop, o, puffer)
    print_genomes(g, p, o, cfg.eval_snakes)
    return out | dict(training=t, ratio=g['best']['mean'] / p['mean'], curve=loop.curve, **g)

def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    o = config_from_args(BenchOptions, a)
    if o.resume and not o.run_dir: ap.error('--resume needs the --run-dir of the run')
    torch.set_num_threads(1)
    run_dir = Path(o.run_dir or tempfile.mkdtemp(prefix='replicator-'))
    if (run_dir/CONTROL_FILE).exists() and not (o.resume or o.skip_control):   # refused before hours of training, not after
        ap.error(f"{run_dir/CONTROL_FILE} exists: --resume it or choose another --run-dir")
    try:
        cfg = settings(a)
        print(f"machine: {json.dumps(machine())}")   # runs repeat exactly on the same kind of CPU only
        print(f"config: {json.dumps(asdict(cfg))}" + (" (the checkpoint's, with the flags given)" if o.resume else f" (PRESET {PRESET} and the flags given)"))
        with run_lock(run_dir/'.lock'): loop, hist, ctrl, es = train(cfg, o, run_dir)   # one process per run folder
    except (RunLocked, ValueError, FileExistsError, FileNotFoundError) as e: ap.error(str(e))
    fitness_rows(cfg, hist, ctrl, o.report)
    if hist is not None:
        print("\n2. score versus evaluations (the distribution's mean genome, training map, length at death)")
        for c in loop.curve: print(f"  {c['agent_steps']:>12,} agent-steps (generation {c['generation']:4d}): {c['score']:7.2f} (greedy {c['greedy']:.2f}, "
                                   f"sampled {c['sampled']:.2f}; {c['n']} snakes, censored {c['censored']})")
    figures = final(cfg, o, loop, hist, es)
    if o.out:
        runs = [h for h in (hist, ctrl) if h is not None]
        atomic_write_json(o.out, dict(command='python bench/hypernetwork.py ' + ' '.join(sys.argv[1:] if argv is None else argv),
                                      machine=machine(), config=asdict(cfg), generations=cfg.generations,
                                      agent_steps=int(runs[0]['agent_steps'].iloc[-1]), final_snakes=o.final_snakes, max_steps=o.max_steps,
                                      generation_seconds={n: float(h.seconds.sum()) for n, h in zip(('replicator', 'control'), (hist, ctrl)) if h is not None},
                                      **figures))
        print(f"\nfigures written to {o.out}")

if __name__ == '__main__': main()
