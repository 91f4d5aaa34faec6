"""Seed 001's success metrics for the replicator dynamics + diffusion hypernetwork on the snake arena, next to plain
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
Usage: python bench/hypernetwork.py [--generations 600] [--steps 2048] [--control-only] [--run-dir DIR [--resume]]
"""
import argparse, json, math, tempfile, time
from dataclasses import asdict, replace
from pathlib import Path
import numpy as np
import pandas as pd
import torch
from genome_lab.hypernetwork import (ReplicatorConfig, HypernetConfig, TrainerConfig, ReplicatorTrainingLoop,
                                     run_policy_es, DiffusionHypernetwork, PolicyES, policy_config, init_policy, evaluate_population, stored_config,
                                     CONTROL_FILE, checkpoint_meta, machine)
from genome_lab.policies import load_pufferlib_policy
from genome_lab.evaluation import evaluate

def score(policy, snakes, seed, max_steps): # (mean, std, n, censored, steps alive, food per 100 steps)
    r = evaluate(policy, 'snake', seed=seed, max_steps=max_steps, progress=False, num_snakes=snakes)
    s, e = r.stats()['score'], r.episodes
    return s['mean'], s['std'], s['n'], r.censored, float(e.length.mean()), 100 * float((e.score - 1).sum() / e.length.sum())

def fmt(m, s, n, c, *_): return f"{m:7.2f} ± {s:6.2f} (n={n}{', censored ' + str(c) if c else ''})"
def habits(x): return f"lives {x[4]:.0f} steps on average and eats {x[5]:.3f} food per 100 steps"

PLAY_STEPS = 1500   # steps of the greedy game that `play` reads habits from

def play(policy, snakes=256, seed=202, steps=PLAY_STEPS): # (adjacent food taken, {cause: share of deaths}, deaths)
    """Two habits, from one greedy game on PufferLib's map: how often the snake eats a food (or corpse) lying in exactly
    one cell next to its head (a random move takes it 1 time in 4), and what each death ran into, read from the C state
    before the step: 'wall', its own body ('self'), another snake ('other'), or a cell that was free but that a snake
    moving earlier in the same tick took ('contested')."""
    from genome_lab.arenas import SnakeArena, SNAKE_FOOD, SNAKE_CORPSE, SNAKE_WALL
    arena = SnakeArena(num_snakes=snakes); obs = arena.reset(seed); state = policy.initial_state(snakes)
    c = obs.shape[1] // 2; nb = [(c - 1, c), (c + 1, c), (c, c - 1), (c, c + 1)]   # cells of actions up, down, left, right
    move = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)])
    took = seen = 0; causes = dict(wall=0, self=0, other=0, contested=0)
    for _ in range(steps):
        act, state = policy.act(obs, state, greedy=True)
        food = np.isin(np.stack([obs[:, r, q] for r, q in nb], 1), (SNAKE_FOOD, SNAKE_CORPSE))
        one = food.sum(1) == 1
        took += int((food[np.arange(snakes), act] & one).sum()); seen += int(one.sum())
        grid, body, ptr, length = arena.c_state(0)
        M, i = body.shape[1], np.arange(snakes)
        head, neck, d = body[i, ptr], body[i, (ptr - 1) % M], move[act]
        nxt = head + d
        back = (length > 1) & (neck == nxt).all(1)            # snake.h turns a move into the neck into going straight on
        nxt[back] = head[back] - d[back]
        tile = grid[nxt[:, 0], nxt[:, 1]]
        own, s = np.zeros(snakes, bool), np.flatnonzero(tile > SNAKE_WALL)   # only a move into a snake can hit its own body
        ring = (ptr[s, None] - np.arange(M)) % M < length[s, None]   # body cells still on the map
        own[s] = ((body[s] == nxt[s, None]).all(2) & ring).any(1)
        obs, _, died = arena.step(act)
        for k, hit in dict(wall=tile == SNAKE_WALL, self=(tile > SNAKE_WALL) & own, other=(tile > SNAKE_WALL) & ~own, contested=tile < SNAKE_WALL).items():
            causes[k] += int((died & hit).sum())
    arena.close()
    n = sum(causes.values())
    return (took / seen if seen else float("nan")), {k: v / max(n, 1) for k, v in causes.items()}, n

def habits_in_play(policy, snakes, steps=PLAY_STEPS): # one line for the bench
    food, causes, n = play(policy, snakes, steps=steps)
    return f"takes adjacent food {food:.3f}; its {n} deaths in {steps} steps ran into " + ", ".join(f"{k} {v:.3f}" for k, v in causes.items())

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--generations', type=int, default=600)
    ap.add_argument('--population', type=int, default=ReplicatorConfig.population, help='genomes per generation, two policies each (the control: twice as many perturbed policies)')
    ap.add_argument('--agents-each', type=int, default=ReplicatorConfig.agents_each, help='snakes per policy')
    ap.add_argument('--steps', type=int, default=2048, help='arena steps per generation (a snake first meets a wall after a few hundred)')
    ap.add_argument('--fitness', default=ReplicatorConfig.fitness, help="a policy's fitness: 'episode' (mean episode reward over all steps), 'window' (reward over all steps) or 'first' (first episodes)")
    ap.add_argument('--reward-food', type=float, default=ReplicatorConfig.reward_food, help='training reward per food or corpse (PufferLib: 0.1)')
    ap.add_argument('--reward-death', type=float, default=ReplicatorConfig.reward_death, help='training reward at death (PufferLib: -1)')
    ap.add_argument('--hidden', type=int, default=16, help='width of the developed policy')
    ap.add_argument('--distribution', default='mixture')
    ap.add_argument('--trainer', default='reinforce')
    ap.add_argument('--lr', type=float, default=TrainerConfig.lr, help="the denoiser's learning rate")
    ap.add_argument('--base-lr', type=float, default=TrainerConfig.base_lr, help="the base table's learning rate, and the control's")
    ap.add_argument('--base-decay', type=float, default=TrainerConfig.base_decay, help="the base table's decoupled weight decay (AdamW), and the control's")
    ap.add_argument('--lr-drop-at', type=int, default=TrainerConfig.lr_drop_at, help="generation from which both learning rates (and the control's) are divided by --lr-drop (0: never)")
    ap.add_argument('--lr-drop', type=float, default=TrainerConfig.lr_drop)
    ap.add_argument('--exploration', type=float, default=HypernetConfig.exploration, help="the chain's last noise, and the control's sigma")
    ap.add_argument('--shaping', default=TrainerConfig.shaping, help="REINFORCE's advantage: 'ranks' or 'baseline'")
    ap.add_argument('--baseline-decay', type=float, default=TrainerConfig.baseline_decay, help="REINFORCE's moving-baseline factor")
    ap.add_argument('--all-steps', action='store_true', help='REINFORCE through all denoising steps (default: the last only)')
    ap.add_argument('--random-output', action='store_true', help="a randomly initialised denoiser output layer (default: zero)")
    ap.add_argument('--tied-codes', action='store_true', help="one encoder column per cell and kind of cell code (CODE_KINDS), for the control too")
    ap.add_argument('--dt', type=float, default=ReplicatorConfig.dt, help='replicator step')
    ap.add_argument('--diffusion', type=float, default=ReplicatorConfig.diffusion, help='D of the replicator-mutator equation')
    ap.add_argument('--trust-window', type=int, default=ReplicatorConfig.trust_window, help="generations of held-out R2 that scale the replicator step (0: no scaling)")
    ap.add_argument('--raw-fitness', action='store_true', help="replicator step on the measured fitness, not the estimator's")
    ap.add_argument('--eval-interval', type=int, default=50)
    ap.add_argument('--eval-snakes', type=int, default=64, help='snakes of the curve evaluations')
    ap.add_argument('--final-snakes', type=int, default=256, help='snakes of the final evaluations (n)')
    ap.add_argument('--new-genomes', type=int, default=16, help='never-sampled genomes developed and scored')
    ap.add_argument('--max-steps', type=int, default=20_000, help='step cap of the evaluations')
    ap.add_argument('--report', type=int, default=10, help='generations between printed fitness rows')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--run-dir', default='', help='checkpoint folder of both runs (default: a temporary one)')
    ap.add_argument('--resume', action='store_true', help="continue the checkpoints in --run-dir with their own settings, to --generations (a control not stored yet starts)")
    ap.add_argument('--skip-control', action='store_true')
    ap.add_argument('--control-only', action='store_true', help='run and score only the ES control (and PufferLib\'s snake)')
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = ReplicatorConfig(generations=a.generations, population=a.population, agents_each=a.agents_each, steps=a.steps, fitness=a.fitness, reward_food=a.reward_food, reward_death=a.reward_death,
                           distribution=a.distribution, dt=a.dt, diffusion=a.diffusion, trust_window=a.trust_window, use_estimator=not a.raw_fitness, eval_interval=a.eval_interval, eval_snakes=a.eval_snakes, seed=a.seed,
                           hypernet=HypernetConfig(hidden=a.hidden, exploration=a.exploration, zero_init=not a.random_output, tied_codes=a.tied_codes),
                           trainer=TrainerConfig(kind=a.trainer, lr=a.lr, base_lr=a.base_lr, base_decay=a.base_decay, shaping=a.shaping, baseline_decay=a.baseline_decay, last_step=not a.all_steps,
                                                 lr_drop_at=a.lr_drop_at, lr_drop=a.lr_drop))
    if a.resume:
        if not a.run_dir: ap.error('--resume needs the --run-dir of the run')
        cfg = replace(stored_config(a.run_dir), generations=a.generations)   # the flags of the first run need not be repeated
    print(f"machine: {json.dumps(machine())}")   # runs repeat exactly on the same kind of CPU only
    print(f"config: {json.dumps(vars(a))}" + (f"\nresumed with the checkpoint's settings: {json.dumps(asdict(cfg))}" if a.resume else ""))
    hist = ctrl = None
    run_dir = Path(a.run_dir or tempfile.mkdtemp(prefix='replicator-'))
    control_stored = (run_dir/CONTROL_FILE).exists()
    if control_stored and not (a.resume or a.skip_control):   # refused before hours of training, not after
        ap.error(f"{run_dir/CONTROL_FILE} exists: --resume it or choose another --run-dir")
    if not a.control_only:
        t0 = time.perf_counter()
        loop = ReplicatorTrainingLoop(cfg, run_dir, resume=a.resume)
        start = loop.generation   # 0, or where a resumed run stopped
        hist = loop.run(progress=False)
        print(f"replicator run: {time.perf_counter() - t0:.0f} s for generations {start}-{a.generations}, "
              f"{int(hist.agent_steps.iloc[-1]):,} agent-steps")
    if not a.skip_control:
        t0, resume = time.perf_counter(), a.resume and control_stored
        start = checkpoint_meta(run_dir/CONTROL_FILE)['generation'] if resume else 0
        ctrl, es = run_policy_es(cfg, run_dir, resume=resume, progress=False)
        print(f"control ES: {time.perf_counter() - t0:.0f} s for generations {start}-{a.generations}, {int(ctrl.agent_steps.iloc[-1]):,} agent-steps")
    print(f"\n1. fitness ({cfg.fitness} reward; food: eaten per snake, counted as the fitness counts; means over {a.report} generations; {cfg.agents_each} snakes x {cfg.steps} steps per genome, population {cfg.population})")
    print(" gen" + (" | replicator mean   max | food | entropy | estimator R2" if hist is not None else "")
          + (" | control ES mean   max | food" if ctrl is not None else ""))
    for g in range(0, a.generations, a.report):
        w = slice(g, g + a.report)
        line = f"{g:4d}"
        if hist is not None:
            r = hist.iloc[w]
            line += f" | {r.fitness_mean.mean():15.3f} {r.fitness_max.mean():5.2f} | {r.food_mean.mean():4.1f} | {r.entropy.iloc[-1]:7.2f} | {np.nanmean(r.estimator_r2):12.3f}"
        if ctrl is not None:   # a control checkpointed before its rows counted food has none
            c = ctrl.iloc[w]
            line += f" | {c.fitness_mean.mean():15.3f} {c.fitness_max.mean():5.2f} | {c.get('food_mean', pd.Series(dtype=float)).mean():4.1f}"
        print(line)
    if hist is not None:
        print("\n2. score versus evaluations (the distribution's mean genome, training map, length at death)")
        for c in loop.curve: print(f"  {c['agent_steps']:>12,} agent-steps (generation {c['generation']:4d}): {fmt(c['score'], c['std'], c['n'], c['censored'])}")
    print(f"\n3. final evaluations on the training map, {a.final_snakes} snakes, first episode each")
    puffer = load_pufferlib_policy('snake')
    p = score(puffer, a.final_snakes, 202, a.max_steps)
    print(f"  PufferLib-trained snake genome:                             {fmt(*p)}; {habits(p)}; {habits_in_play(puffer, a.final_snakes)}")
    if ctrl is not None:
        c = score(DiffusionHypernetwork(cfg.hypernet, seed=cfg.seed).policy(es.mean_params(), 0), a.final_snakes, 202, a.max_steps)
        print(f"  control ES mean policy:                                     {fmt(*c)}; ratio {c[0]/p[0]:.3f}; {habits(c)}")
    if hist is None: return
    floor = 0.5 * cfg.hypernet.genome_dim * (1 + math.log(2 * math.pi)) + cfg.hypernet.genome_dim * math.log(0.1)
    r2 = hist.estimator_r2.dropna()
    print(f"  replicator: first {a.report} generations' mean fitness {hist.fitness_mean[:a.report].mean():.3f}, last {a.report}' "
          f"{hist.fitness_mean[-a.report:].mean():.3f}; lowest entropy {hist.entropy.min():.2f} nats (threshold {floor:.2f}: "
          f"a Gaussian of std 0.1 per coordinate); estimator R2 on new genomes: median {r2.median():.3f}, "
          f"above 0 in {(r2 > 0).mean():.1%} of generations; replicator step dt x trust: mean trust {hist.trust.mean():.3f}, "
          f"above 0 in {(hist.trust > 0).mean():.1%} of generations")
    genomes, dev = loop.pm.next(torch.Generator().manual_seed(cfg.seed + 4242))   # a generation of the final distribution, evaluated twice
    f1, f2 = [evaluate_population(loop.pm.hn.policy_config, dev['params'], loop.arena, cfg.steps, seed=s, fitness=cfg.fitness)['fitness'].view(2, -1).mean(0)
              for s in (cfg.seed + 11, cfg.seed + 12)]
    rel = float(np.corrcoef(f1.numpy(), f2.numpy())[0, 1])
    print(f"  test-retest correlation of a genome's training fitness (same {cfg.population} genomes and policies, two map seeds): {rel:.3f};"
          f" the R2 any estimator can reach on one noisy evaluation is at most about this")
    mean = {k: v[0] for k, v in loop.pm.develop_mean(loop.pm.dist.mean()[None]).items()}
    init = {k: v[0] for k, v in PolicyES(DiffusionHypernetwork(cfg.hypernet, seed=cfg.seed)).mean_params().items()}   # where evolution started
    rms = lambda x: float(x.pow(2).mean().sqrt())
    moved = {k: rms(mean[k] - init[k]) for k in init if not k.startswith('value.')}
    codes = (mean['encoder.weight'] - init['encoder.weight']).view(cfg.hypernet.hidden, -1, 8)
    print(f"  mean genome's policy moved from where evolution started (init_policy{', tied by kind' if cfg.hypernet.tied_codes else ''}) by an rms of {min(moved.values()):.3f}-{max(moved.values()):.3f} per tensor "
          f"(encoder {moved['encoder.weight']:.3f}, initially {rms(init['encoder.weight']):.3f}); encoder rows by cell code: "
          f"{min(rms(codes[:, :, c]) for c in range(8)):.3f}-{max(rms(codes[:, :, c]) for c in range(8)):.3f}")
    top = loop.top_genomes(8, seed=cfg.seed + 12345)
    params = loop.pm.develop_mean(top)
    sel = [score(loop.pm.hn.policy(params, i), a.eval_snakes, 101, a.max_steps)[0] for i in range(len(top))]
    best = loop.pm.hn.policy(params, int(np.argmax(sel)))
    b = score(best, a.final_snakes, 202, a.max_steps)
    print(f"  best evolved genome (of 8 candidates, selected on seed 101): {fmt(*b)}; ratio {b[0]/p[0]:.3f} (bar 0.5); {habits(b)}; {habits_in_play(best, a.final_snakes)}")
    crowd = score(best, a.eval_snakes, 202, a.max_steps)
    pc = score(puffer, a.eval_snakes, 202, a.max_steps)
    print(f"  the same genome with {a.eval_snakes} snakes on the map (as the curve and the rows below): {fmt(*crowd)}; "
          f"PufferLib's snake with {a.eval_snakes}: {fmt(*pc)}, ratio {crowd[0]/pc[0]:.3f}")
    new = loop.pm.dist.sample(a.new_genomes, torch.Generator().manual_seed(cfg.seed + 999))
    newp = loop.pm.develop_mean(new)
    dev_scores = [score(loop.pm.hn.policy(newp, i), a.eval_snakes, 303, a.max_steps)[0] for i in range(a.new_genomes)]
    rnd_scores = [score(init_policy(policy_config(cfg.hypernet.hidden), seed=cfg.seed + 7 + i), a.eval_snakes, 303, a.max_steps)[0] for i in range(a.new_genomes)]
    print(f"  {a.new_genomes} new genomes, developed:          mean of per-genome means {np.mean(dev_scores):.2f} ± {np.std(dev_scores):.2f}"
          f" ({a.eval_snakes} snakes each)")
    print(f"  {a.new_genomes} randomly initialised policies:   mean of per-policy means {np.mean(rnd_scores):.2f} ± {np.std(rnd_scores):.2f}")
    print(f"  developed above the random policies' mean: {np.mean(np.array(dev_scores) > np.mean(rnd_scores)):.2f}")

if __name__ == '__main__': main()
