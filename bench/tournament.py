"""Tournament throughput and rating quality, measured side by side in one process.

1. Throughput: a 15-genome snake tournament (PufferLib snake with epsilon-random actions, Gaussian mutants of it,
   heuristic variants, random) played as seasons and the server play it: `run_tournament` with the `arena_plan` of
   `SeasonRules` (the snake arena's season settings, `--steps` and 8 snakes a genome over them, `--tournament-games`
   meetings), in batches of `--batch` games (all maps of a batch stepped together, each distinct network run once per
   step for all its snakes; kill attribution included), next to the
   policy-bound rate of the same machine: `evaluate` of PufferLib's snake with 1024 snakes on one map, whose cost is
   the policy's forward pass. The two alternate `--reps` times in this process; the best of each is reported with
   their ratio (the target, issue 59: at least 0.8x), and the same tournament one game at a time (`--batch 1`) for reference.
2. The strength ladder (PufferLib snake at epsilon 0, 0.1, 0.2, 0.4, 0.7, 1.0, all six on one map per game):
   Kendall's tau between rating order and true order after each game, for OpenSkill (ordinal) and Elo; the final
   tau and the games needed for tau >= 0.9 to hold to the end, over several seeds.
Usage: python bench/tournament.py [--ladder-games 60] [--seeds 3] [--steps 300] [--batch 64] [--reps 3]
"""
import os, time
from dataclasses import dataclass
from typing import Annotated
import numpy as np, torch
from genome_lab.arenas.policies import load_pufferlib_policy, SnakeHeuristic, RandomPolicy, EpsilonGreedy
from genome_lab.arenas.evaluation import evaluate
from genome_lab.tournaments.tournament import run_tournament, play_games
from genome_lab.tournaments.ranking import ladder_taus, games_to_reach
from genome_lab.tournaments.selection import mutate, arena_plan, SeasonRules
from kit import parse

@dataclass
class TournamentBench:
    "The tournament bench's settings."
    ladder_games: Annotated[int, 'games of each ladder'] = 60
    seeds: Annotated[int, 'ladders of each kind'] = 3
    steps: Annotated[int, 'steps per game (and of the policy-bound evaluation)'] = 300
    tournament_games: Annotated[int, 'meetings per pair in the 15-genome tournament'] = 1
    batch: Annotated[int, 'games per batch of the tournament'] = 64
    reps: Annotated[int, 'alternating measurements of each rate'] = 3

def entrants(puffer)->list:
    "PufferLib's snake at six epsilons, four Gaussian mutants, three heuristics, two random genomes."
    out = [EpsilonGreedy(puffer, e) for e in (0.0, 0.1, 0.2, 0.4, 0.7, 1.0)]
    for k in range(4):
        m = type(puffer)(**puffer.config); m.load_state_dict(mutate(puffer.state_dict(), 0.01 * (k + 1), k)); out.append(m)
    for w in ([1., .5, 10., .5], [2., 2., 10., 0.], [1., 0., 5., 1.]):
        h = SnakeHeuristic(); h.weights.data = torch.tensor(w); out.append(h)
    return out + [RandomPolicy(4), RandomPolicy(4)]

def tournament_rate(pols, steps, batch, meetings)->tuple: # (agent-steps/s, games, seconds, result)
    ids = [f'g{i}' for i in range(len(pols))]
    rules = SeasonRules(batch=batch, genomes_per_game=5, meetings=meetings, max_meetings=meetings,
                        arena_settings={'snake': dict(steps=steps, agents=8)})
    kw, _ = arena_plan(rules, 'snake', len(pols))   # the season's and the server's tournament of the snake arena
    t0 = time.perf_counter()
    res = run_tournament(None, ids, pols, seed=0, progress=False, **kw)
    sec = time.perf_counter() - t0
    return sum(r.agent_steps for r in res.results) / sec, len(res.games), sec, res

def policy_bound_rate(puffer, steps)->float: # agent-steps/s of `evaluate` with 1024 snakes on one map
    r = evaluate(puffer, 'snake', seed=0, max_steps=steps, progress=False, num_snakes=1024)
    return r.agent_steps / r.seconds

def main(argv=None):
    a = parse(TournamentBench, doc=__doc__, argv=argv)
    torch.set_num_threads(1)
    puffer = load_pufferlib_policy('snake')
    pols = entrants(puffer)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus; torch threads {torch.get_num_threads()}")
    bound, tour = [], []
    for _ in range(a.reps):
        bound.append(policy_bound_rate(puffer, a.steps))
        rate, games, sec, res = tournament_rate(pols, a.steps, a.batch, a.tournament_games); tour.append(rate)
    one, _, sec1, _ = tournament_rate(pols, a.steps, 1, a.tournament_games)
    print(f"15-genome tournament: {games} games of 5 genomes x 8 snakes x {a.steps} steps, batches of {a.batch} games: {sec:.1f} s")
    print(f"  tournament agent-steps/s per rep: {', '.join(f'{x:,.0f}' for x in tour)}")
    print(f"  policy-bound (evaluate, PufferLib snake, 1024 snakes) agent-steps/s per rep: {', '.join(f'{x:,.0f}' for x in bound)}")
    print(f"  best tournament {max(tour):,.0f} / best policy-bound {max(bound):,.0f} agent-steps/s: ratio {max(tour)/max(bound):.2f}x (target >= 0.8x)")
    print(f"  the same tournament one game at a time (batch 1): {one:,.0f} agent-steps/s in {sec1:.1f} s")
    print(res.leaderboard[['id', 'ordinal', 'fitness', 'games']].head(6).to_string(index=False))
    ladder = [EpsilonGreedy(puffer, e) for e in (0.0, 0.1, 0.2, 0.4, 0.7, 1.0)]
    final, reach = {'openskill': [], 'elo': []}, {'openskill': [], 'elo': []}
    for s in range(a.seeds):
        games = [tuple(range(6))] * a.ladder_games
        rs = play_games(ladder, games, seed=1000 + s, progress=False, agents_per_genome=4, steps=a.steps)
        taus = ladder_taus(rs, games, list(range(6)))
        for k in final: final[k].append(taus[k][-1]); reach[k].append(games_to_reach(taus[k]))
        print(f"ladder seed {s}: final tau openskill {taus['openskill'][-1]:.3f}, elo {taus['elo'][-1]:.3f}; "
              f"games to tau>=0.9: openskill {games_to_reach(taus['openskill'])}, elo {games_to_reach(taus['elo'])}")
    for k in final:
        print(f"ladder {k}: final tau mean {np.mean(final[k]):.3f} (n={a.seeds} seeds, {a.ladder_games} games each); games to tau>=0.9 per seed: {reach[k]}")

if __name__ == '__main__': main()
