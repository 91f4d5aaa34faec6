"""League fine-tune of PufferLib's snake with PuffeRL, compared with its parent in a tournament.

1. Fine-tunes the registry's PufferSnake (PufferLib's trained policy) with `PPORun` in league play: half of each
   map's snakes are frozen opponents drawn by PFSP from --opponents and the run's own kept checkpoints; a kept
   checkpoint every --keep-every agent-steps is evaluated (64 snakes on PufferLib's map, greedy, length at death,
   as the replicator's curve) and registered (parent PufferSnake, relation finetune, then self-play).
2. A tournament among the parent, the kept checkpoints and the hand-written HeuristicSnake on shared maps
   (`run_tournament`, OpenSkill ratings with sigma, fresh ratings), and the same entrants evaluated alone.
3. Writes the figures to --out (JSON, committed under nbs/measured/ and read by 75_training).
Usage: python bench/ppo_league.py --run-dir runs/ppo-league --registry runs/ppo-registry [--resume] [--total-timesteps 20000000]
"""
import argparse, datetime, json, os, time
from dataclasses import asdict
from pathlib import Path
import numpy as np
import torch
from genome_lab.registry import Registry, seed_founders
from genome_lab.training import PPOConfig, PPOHyper, PPORun, stored_config, CHECKPOINT_FILE
from genome_lab.tournament import run_tournament, rank_stability
from genome_lab.evaluation import evaluate
from genome_lab.hypernetwork import machine
from genome_lab.core import atomic_write_json, measured_dir

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--run-dir', default='runs/ppo-league'); ap.add_argument('--registry', default='runs/ppo-registry')
    ap.add_argument('--resume', action='store_true', help='continue the run in --run-dir (its settings; --total-timesteps may grow)')
    ap.add_argument('--total-timesteps', type=int, default=20_000_000)
    ap.add_argument('--keep-every', type=int, default=2_500_000); ap.add_argument('--checkpoint-every', type=int, default=500_000)
    ap.add_argument('--learning-rate', type=float, default=5e-5, help="fine-tuning step size of a new run (5e-4 took PufferSnake from 132 to 41 in 16k agent-steps)")
    ap.add_argument('--clip-coef', type=float, default=0.2, help="PPO's clip of a new run (snake.ini's 0.74 let a fine-tune at 5e-5 fall from 132 to 27 by 2.5M agent-steps)")
    ap.add_argument('--opponents', default='PufferSnake,HeuristicSnake,RandomSnake')
    ap.add_argument('--tournament-kept', type=int, default=4, help='kept checkpoints in the tournament (the last ones)')
    ap.add_argument('--meetings', type=int, default=8); ap.add_argument('--game-steps', type=int, default=1000)
    ap.add_argument('--out', default=str(measured_dir()/f'ppo_league_{datetime.date.today()}.json'))
    a = ap.parse_args()
    torch.set_num_threads(1)
    registry = Registry(a.registry)
    founders = seed_founders(registry)
    cfg = PPOConfig(total_timesteps=a.total_timesteps, start='PufferSnake', mode='league', opponents=a.opponents,
                    keep_every=a.keep_every, checkpoint_every=a.checkpoint_every, hyper=PPOHyper(learning_rate=a.learning_rate, clip_coef=a.clip_coef))
    if a.resume:
        stored = stored_config(a.run_dir)
        cfg = PPOConfig(**{**asdict(stored), 'hyper': stored.hyper, 'total_timesteps': a.total_timesteps})
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    run = PPORun(cfg, a.run_dir, registry, resume=a.resume, display=None)
    run.run()
    print(f"league fine-tune: {run.agent_steps:,} agent-steps, {run.seconds:.0f} s of wall time over all sessions", flush=True)
    for c in run.curve: print(f"  {c['agent_steps']:>12,}: {c['score']:.2f} ± {c['std']:.2f} (n={c['n']}, censored {c['censored']})")
    kept = [c['genome'] for c in run.curve][-a.tournament_kept:]
    ids = [founders['PufferSnake'], *kept, founders['HeuristicSnake']]
    names = {i: registry.genome(i)['name'] for i in ids}
    pols = [registry.policy(i) for i in ids]
    settings = dict(width=160, height=90, num_food=800)
    t0 = time.perf_counter()
    tours = [run_tournament(None, ids, pols, genomes_per_game=3, agents_per_genome=16, steps=a.game_steps, meetings=a.meetings,
                            seed=s, settings=settings, progress=False) for s in (0, 1)]
    tsec = time.perf_counter() - t0
    tau = rank_stability(*tours)
    board = tours[0].leaderboard.assign(name=lambda d: d.id.map(names))
    print(f"\ntournament (seed 0): {len(tours[0].games)} games, {a.game_steps} steps, 16 snakes per genome, 3 genomes per 160x90 map; "
          f"rank stability between seeds 0 and 1: Kendall tau {tau:.3f}; {tsec:.0f} s for both")
    print(board[['name', 'mu', 'sigma', 'ordinal', 'score', 'survival', 'kill_ratio', 'games']].round(3).to_string(index=False))
    alone = {}
    for i in ids:
        s = evaluate(registry.policy(i), 'snake', seed=202, max_steps=20_000, progress=False, num_snakes=64).stats()['score']
        alone[names[i]] = s
        print(f"  alone on PufferLib's map (64 snakes, seed 202): {names[i]:>24}: {s['mean']:.2f} ± {s['std']:.2f} (n={s['n']})")
    mix = {}
    for step, gid in run.league.draws: mix[gid] = mix.get(gid, 0) + 1
    out = dict(machine=machine(), date=str(datetime.date.today()), config=asdict(run.cfg), agent_steps=run.agent_steps,
               wall_seconds=run.seconds, curve=run.curve, league=dict(table=run.league.table().to_dict('records'), draws=run.league.draws,
               names={i: registry.genome(i)['name'] for i in run.league.ids}, mix=mix),
               tournament=dict(settings=dict(settings, agents_per_genome=16, steps=a.game_steps, genomes_per_game=3, meetings=a.meetings),
                               games=len(tours[0].games), seconds=tsec, tau=tau,
                               leaderboards=[t.leaderboard.assign(name=lambda d: d.id.map(names)).to_dict('records') for t in tours]),
               alone=alone, parent=founders['PufferSnake'],
               history=run.log.rows[::max(1, len(run.log.rows) // 400)])
    atomic_write_json(a.out, out)
    print(f"wrote {a.out}")

if __name__ == '__main__': main()
