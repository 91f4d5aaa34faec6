"""The quantised policy forward (`quantise`) in tournaments, and its bench on tiny settings."""
import json
import numpy as np
from genome_lab.arenas.policies import load_pufferlib_policy, SnakeHeuristic, RandomPolicy
from genome_lab.tournaments.tournament import run_tournament

KW = dict(ids=['puffer', 'heuristic', 'random'], genomes_per_game=3, agents_per_genome=4, steps=100, meetings=2, seed=3,
          settings=dict(width=40, height=30, num_food=60), progress=False)

def test_tournament_quantised():
    "A tournament of quantised copies: the originals untouched, the same games played, near the float32 results."
    pols = [load_pufferlib_policy('snake'), SnakeHeuristic(), RandomPolicy(4)]
    fp = run_tournament(policies=pols, **KW)
    q = run_tournament(policies=pols, quantised=True, **KW)
    assert not pols[0].low_precision
    assert fp.games == q.games and len(q.results) == len(fp.results)
    same = np.mean([np.array_equal(a.ranks, b.ranks) for a, b in zip(fp.results, q.results)])
    assert same >= 0.5, same   # short games: the heuristic and random snakes play alike, PufferLib's nearly so

def test_bench_quantised_tiny(tmp_path, cli, bench):
    "bench/quantised.py runs on tiny settings and writes the figures file's keys."
    out = tmp_path/'quantised.json'
    r = cli('--seconds', '0.1', '--repeats', '1', '--maps', '1', '--max-steps', '50', '--num-snakes', '8', '--boards', '8',
            '--out', out, main=bench('quantised').main)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d['fp32_rate'] > 0 and d['quantised_rate'] > 0 and 'score_delta_sem' in d
    assert d['fp32_rate_wall'] > 0 and d['snake']['rates']['fp32'] and d['tetris']['agents'] == 8
