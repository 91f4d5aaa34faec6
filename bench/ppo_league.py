"""League fine-tune of PufferLib's snake with PuffeRL, compared with its parent in a tournament.

1. Fine-tunes the registry's PufferSnake (PufferLib's trained policy) with `PPORun` in league play: half of each
   map's snakes are frozen opponents drawn by PFSP from --opponents and the run's own kept checkpoints; a kept
   checkpoint every --keep-every agent-steps is evaluated (64 snakes on PufferLib's map, greedy, length at death,
   as the replicator's curve) and registered (parent PufferSnake, relation finetune, then self-play).
2. A tournament among the parent, the kept checkpoints and the hand-written HeuristicSnake on shared maps
   (`run_tournament`, OpenSkill ratings with sigma, fresh ratings), and the same entrants evaluated alone.
3. Writes the figures to --out (JSON, committed under nbs/measured/ and read by 50_training).
Usage: python bench/ppo_league.py --run-dir runs/ppo-league --registry runs/ppo-registry [--resume] [--total-timesteps 20000000]
(flags: BenchOptions' and PPOConfig's fields; a new run starts from BASE)
"""
import datetime, time
from dataclasses import asdict, dataclass
from typing import Annotated
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.rl.training import PPOConfig, PPOHyper, stored_config
from genome_lab.rl.ppo_run import PPORun
from genome_lab.tournaments.tournament import run_tournament, rank_stability
from genome_lab.arenas.evaluation import evaluate
from genome_lab.core import machine
from genome_lab.core import atomic_write_json, config_from_args
from ppo_common import start

@dataclass
class BenchOptions:
    "The bench's own settings (the run's are `PPOConfig`'s flags; a new run starts from `BASE`)."
    run_dir: Annotated[str, 'checkpoint folder of the run'] = 'runs/ppo-league'
    registry: Annotated[str, 'registry folder of its kept genomes and opponents'] = 'runs/ppo-registry'
    resume: Annotated[bool, 'continue the run in run_dir with its settings (only total_timesteps may change)'] = False
    tournament_kept: Annotated[int, 'kept checkpoints in the tournament (the last ones)'] = 4
    meetings: Annotated[int, 'tournament meetings of every pair'] = 8
    game_steps: Annotated[int, 'steps of a tournament game'] = 1000
    out: Annotated[str, 'JSON to write (default nbs/measured/ppo_league_DATE.json)'] = ''

# A fine-tune takes small steps: at lr 5e-4 PufferSnake fell from 132 to 41 in 16k agent-steps. With half of 256 snakes
# learning, a batch is 128 x 64 = 8192 agent-steps: at minibatch 8192 PPO takes one step per batch, its ratio is 1 and
# the clip never acts (clip 0.2 and 0.74 gave the same genome, 26.45 at 2.5M); minibatch 4096 takes two.
BASE = PPOConfig(total_timesteps=20_000_000, start='PufferSnake', mode='league', opponents='PufferSnake,HeuristicSnake,RandomSnake',
                 keep_every=2_500_000, checkpoint_every=500_000, hyper=PPOHyper(learning_rate=5e-5, clip_coef=0.2, minibatch_size=4096))

def main():
    a, b, out = start(BenchOptions, __doc__, 'ppo_league')
    registry = Registry(b.registry)
    founders = seed_founders(registry)
    cfg = config_from_args(PPOConfig, a, base=stored_config(b.run_dir) if b.resume else BASE)
    run = PPORun(cfg, b.run_dir, registry, resume=b.resume, display=None)
    run.run()
    print(f"league fine-tune: {run.agent_steps:,} agent-steps, {run.seconds:.0f} s of wall time over all sessions", flush=True)
    for c in run.curve: print(f"  {c['agent_steps']:>12,}: {c['score']:.2f} ± {c['std']:.2f} (n={c['n']}, censored {c['censored']})")
    kept = [c['genome'] for c in run.curve][-b.tournament_kept:]
    ids = [founders['PufferSnake'], *kept, founders['HeuristicSnake']]
    names = {i: registry.genome(i)['name'] for i in ids}
    pols = [registry.policy(i) for i in ids]
    settings = dict(width=160, height=90, num_food=800)
    t0 = time.perf_counter()
    tours = [run_tournament(None, ids, pols, genomes_per_game=3, agents_per_genome=16, steps=b.game_steps, meetings=b.meetings,
                            seed=s, settings=settings, progress=False) for s in (0, 1)]
    tsec = time.perf_counter() - t0
    tau = rank_stability(*tours)
    board = tours[0].leaderboard.assign(name=lambda d: d.id.map(names))
    print(f"\ntournament (seed 0): {len(tours[0].games)} games, {b.game_steps} steps, 16 snakes per genome, 3 genomes per 160x90 map; "
          f"rank stability between seeds 0 and 1: Kendall tau {tau:.3f}; {tsec:.0f} s for both")
    print(board[['name', 'mu', 'sigma', 'ordinal', 'score', 'survival', 'kill_ratio', 'games']].round(3).to_string(index=False))
    alone = {}
    for i in ids:
        s = evaluate(registry.policy(i), 'snake', seed=202, max_steps=20_000, progress=False, num_snakes=64).stats()['score']
        alone[names[i]] = s
        print(f"  alone on PufferLib's map (64 snakes, seed 202): {names[i]:>24}: {s['mean']:.2f} ± {s['std']:.2f} (n={s['n']})")
    mix = {}
    for step, gid in run.league.draws: mix[gid] = mix.get(gid, 0) + 1
    record = dict(machine=machine(), date=str(datetime.date.today()), config=asdict(run.cfg), agent_steps=run.agent_steps,
               wall_seconds=run.seconds, curve=run.curve, league=dict(table=run.league.table().to_dict('records'), draws=run.league.draws,
               names={i: registry.genome(i)['name'] for i in run.league.ids}, mix=mix),
               tournament=dict(settings=dict(settings, agents_per_genome=16, steps=b.game_steps, genomes_per_game=3, meetings=b.meetings),
                               games=len(tours[0].games), seconds=tsec, tau=tau,
                               leaderboards=[t.leaderboard.assign(name=lambda d: d.id.map(names)).to_dict('records') for t in tours]),
               alone=alone, parent=founders['PufferSnake'],
               history=run.log.rows[::max(1, len(run.log.rows) // 400)])
    atomic_write_json(out, record)
    print(f"wrote {out}")

if __name__ == '__main__': main()
