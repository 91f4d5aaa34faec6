"""Tournament throughput and rating quality, measured side by side in one process.

1. A 15-genome snake tournament (PufferLib snake with epsilon-random actions, Gaussian mutants of it, heuristic
   variants, random): games/s and agent-steps/s of `run_tournament` (kill attribution and batched play included),
   next to the same map stepped with random actions and nothing else (the arena's ceiling).
2. The strength ladder (PufferLib snake at epsilon 0, 0.1, 0.2, 0.4, 0.7, 1.0, all six on one map per game):
   Kendall's tau between rating order and true order after each game, for OpenSkill (ordinal) and Elo; the final
   tau and the games needed for tau >= 0.9 to hold to the end, over several seeds.
Usage: python bench/tournament.py [--ladder-games 60] [--seeds 3] [--steps 300]
"""
import argparse, time
import numpy as np, torch
from genome_lab.arenas import SnakeArena
from genome_lab.policies import load_pufferlib_policy, SnakeHeuristic, RandomPolicy
from genome_lab.tournament import run_tournament, play_games, ladder_taus, games_to_reach
from genome_lab.policies import EpsilonGreedy
from genome_lab.selection import mutate

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--ladder-games', type=int, default=60); ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--steps', type=int, default=300, help='steps per game')
    ap.add_argument('--tournament-games', type=int, default=1, help='meetings per pair in the 15-genome tournament')
    a = ap.parse_args()
    torch.set_num_threads(1)
    puffer = load_pufferlib_policy('snake')
    entrants = [EpsilonGreedy(puffer, e) for e in (0.0, 0.1, 0.2, 0.4, 0.7, 1.0)]
    for k in range(4):
        m = type(puffer)(**puffer.config); m.load_state_dict(mutate(puffer.state_dict(), 0.01 * (k + 1), k)); entrants.append(m)
    for w in ([1., .5, 10., .5], [2., 2., 10., 0.], [1., 0., 5., 1.]):
        h = SnakeHeuristic(); h.weights.data = torch.tensor(w); entrants.append(h)
    entrants += [RandomPolicy(4), RandomPolicy(4)]
    kw = dict(genomes_per_game=5, agents_per_genome=8, steps=a.steps, settings=dict(width=80, height=48, num_food=200))
    ids = [f'g{i}' for i in range(len(entrants))]
    t0 = time.perf_counter()
    res = run_tournament(None, ids, entrants, meetings=a.tournament_games, seed=0, progress=False, **kw)
    sec = time.perf_counter() - t0
    agent_steps = sum(r.agent_steps for r in res.results)
    arena = SnakeArena(width=80, height=48, num_snakes=40, num_food=200)
    cache = np.random.default_rng(0).integers(0, 4, (256, 40)).astype(np.int32)
    arena.reset(0); n, t1 = 0, time.perf_counter()
    while time.perf_counter() - t1 < 3: arena.step(cache[n % 256]); n += 1
    ceiling = n * 40 / (time.perf_counter() - t1)
    print(f"15-genome tournament: {len(res.games)} games of 5 genomes x 8 snakes x {a.steps} steps in {sec:.1f} s")
    print(f"  games/s {len(res.games)/sec:.3f}, agent-steps/s {agent_steps/sec:,.0f}")
    print(f"  same map, random actions only: {ceiling:,.0f} agent-steps/s (ratio ceiling/tournament {ceiling/(agent_steps/sec):.1f}x)")
    print(res.leaderboard[['id', 'ordinal', 'fitness', 'games']].head(6).to_string(index=False))
    ladder = [EpsilonGreedy(puffer, e) for e in (0.0, 0.1, 0.2, 0.4, 0.7, 1.0)]
    final, reach = {'openskill': [], 'elo': []}, {'openskill': [], 'elo': []}
    for s in range(a.seeds):
        games = [tuple(range(6))] * a.ladder_games
        rs = play_games(ladder, games, seed=1000 + s, progress=False, agents_per_genome=4, steps=a.steps, settings=dict(width=80, height=48, num_food=200))
        taus = ladder_taus(rs, games, list(range(6)))
        for k in final: final[k].append(taus[k][-1]); reach[k].append(games_to_reach(taus[k]))
        print(f"ladder seed {s}: final tau openskill {taus['openskill'][-1]:.3f}, elo {taus['elo'][-1]:.3f}; "
              f"games to tau>=0.9: openskill {games_to_reach(taus['openskill'])}, elo {games_to_reach(taus['elo'])}")
    for k in final:
        print(f"ladder {k}: final tau mean {np.mean(final[k]):.3f} (n={a.seeds} seeds, {a.ladder_games} games each); games to tau>=0.9 per seed: {reach[k]}")

if __name__ == '__main__': main()
