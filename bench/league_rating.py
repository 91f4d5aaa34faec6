"""A snake genome trained on a GPU, rated against PufferSnake in the snake season tournament (issue 31).

The genome (--weights, committed: nbs/measured/gpu_snake_finetune.safetensors, 1 MB) was made by
`bash bench/gpu_check.sh run` on one NVIDIA H200: PuffeRL (PufferLib 3.0's PPO) on CUDA fine-tuned PufferSnake's
weights for 300 s (662,667,264 agent-steps, about 2.2M agent-steps/s while a second run shared the GPU) in self-play on
tournament-like maps: 48x36 cells, 60 food, 18 snakes, every map rebuilt fresh every 150 steps, 896 maps of 7
processes; Adam at 1e-4 cosine-annealed, PPO clip 0.2, minibatch 32,768, bptt 64, snake.ini's other settings
(bench/gpu_snake.py; the weight file's metadata holds its settings). Of the two runs of that call (this fine-tune and
a run from PufferLib's initialisation at snake.ini's learning rate), it was chosen before the rated tournaments below,
by its rating in three tournaments at other seeds (100-102, 4 meetings).

For each tournament seed (--seeds), in a fresh registry: the founders (`seed_founders`: PufferSnake, HeuristicSnake,
RandomSnake) and the trained genome (type rl, source ppo, parent PufferSnake with relation finetune, the run's
settings in its description), then `run_tournament` among the registry's snake genomes at the season's settings
(`arena_plan(SeasonConfig(), 'snake')`, the stable settings of `bench/tournament_stability.py`: 3 genomes a game, 6
snakes each, 1000 steps, 80x48 map, 200 food, every pair meeting once, then games until the top is stable or every
pair met 16 times); OpenSkill ratings from scratch. The genome was trained on 48x36 maps of 150 steps, the season's
settings before they were measured unstable. The same entrants are also rated with --check-meetings meetings per
pair (more games, smaller sigma) as a check beside the season's figures.
Writes --out (default nbs/measured/league_rating.json): `seeds` (one `{seed, genome, ordinal, mu, sigma, games,
puffersnake: {...}}` per seed), `check` (the same at --check-meetings), the settings, and the GPU run's rates
(`gpu_agent_steps_per_s`, `device`) read from --gpu-log (nbs/measured/gpu_snake.json, bench/gpu_weights.py summarize).
Usage: python bench/league_rating.py [--seeds 0,1] [--check-meetings 0] [--registry DIR]
"""
import datetime, json, tempfile, time
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Annotated
from genome_lab.core import atomic_write_json, measured_dir
from kit import parse
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome
from genome_lab.ecosystem.seasons import SeasonConfig
from genome_lab.tournaments.selection import arena_plan
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.core import machine
from gpu_weights import read_trained

@dataclass
class RatingOptions:
    "What the bench rates and where it writes."
    weights: Annotated[str, 'the trained genome: a bench/gpu_snake.py weight file'] = \
        str(measured_dir()/'gpu_snake_finetune.safetensors')
    name: Annotated[str, "the trained genome's name in the registries"] = 'GPUSnakeFinetune'
    gpu_log: Annotated[str, "the GPU runs' condensed logs (agent-steps/s)"] = str(measured_dir()/'gpu_snake.json')
    run: Annotated[str, 'which run of gpu_log made the weights'] = 'finetune'
    seeds: Annotated[str, 'tournament seeds, comma-separated'] = '0,1'
    check_meetings: Annotated[int, 'meetings per pair of the check tournaments (0: none)'] = 0
    snake_steps: Annotated[int, "steps per game (0: the season's)"] = 0
    max_meetings: Annotated[int, "games go on until the top is stable or every pair met this often (0: the season's)"] = 0
    registry: Annotated[str, 'folder of the per-seed registries (default: a temporary folder)'] = ''
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'league_rating.json')

def season_config(o:RatingOptions)->SeasonConfig: # the season's settings, with the options given
    return SeasonConfig(**({'max_meetings': o.max_meetings} if o.max_meetings else {}),
                        arena_settings=dict(snake=dict(steps=o.snake_steps)) if o.snake_steps else {})

def register(reg:Registry, o:RatingOptions)->tuple: # (trained genome id, PufferSnake id)
    "The founders and the trained genome, parent PufferSnake (relation finetune), with how it was made."
    founders = seed_founders(reg)
    pol, meta = read_trained(o.weights)
    how = dict(made_by='bench/gpu_check.sh run: bench/gpu_snake.py, PuffeRL on CUDA, self-play on tournament-like maps',
               start='PufferSnake', **meta)
    g = Genome(name=o.name, type='rl', arena='snake', arch=pol.arch, config=pol.config, source='ppo',
               parents=[dict(id=founders['PufferSnake'], relation='finetune')], description=json.dumps(how))
    return reg.add(g, pol.state_dict(), status='candidate').id, founders['PufferSnake']

def rate(root:Path, o:RatingOptions, seed:int, meetings:int|None=None)->dict: # one `seeds` entry
    "A fresh registry in `root`, the season's snake tournament at `seed` (`meetings` per pair if given), both ratings."
    reg = Registry(root)
    gid, puffer = register(reg, o)
    kw, _ = arena_plan(season_config(o), 'snake')
    if meetings: kw = {**kw, 'meetings': meetings}
    t = run_tournament(reg, arena='snake', seed=seed, progress=False, **kw)
    row = t.leaderboard.set_index('id')
    r = lambda i: dict(ordinal=float(row.ordinal[i]), mu=float(row.mu[i]), sigma=float(row.sigma[i]),
                       games=int(row.games[i]))
    board = t.leaderboard[['name', 'mu', 'sigma', 'ordinal', 'score', 'games']]
    print(f"seed {seed}{f', {meetings} meetings' if meetings else ''}: {len(t.games)} games\n"
          + board.round(3).to_string(index=False), flush=True)
    return dict(seed=seed, genome=o.name, **r(gid), puffersnake=r(puffer), genome_id=gid,
                parents=reg.genome(gid)['parents'], leaderboard=board.to_dict('records'))

def main():
    o = parse(RatingOptions, doc=__doc__)
    print(f"machine: {json.dumps(machine())}", flush=True)
    seeds = [int(s) for s in o.seeds.split(',')]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(o.registry or tmp)
        rows = [rate(root/f'seed-{s}', o, s) for s in seeds]
        check = [rate(root/f'check-{s}', o, s, o.check_meetings) for s in seeds] if o.check_meetings else []
    gpu = json.loads(Path(o.gpu_log).read_text())
    keep = ('device', 'agents', 'agent_steps', 'seconds', 'agent_steps_per_s', 'median_epoch_agent_steps_per_s')
    runs = {k: {f: v[f] for f in keep} for k, v in gpu.items()}
    entry = lambda r: {k: r[k] for k in ('seed', 'genome', 'ordinal', 'mu', 'sigma', 'games', 'puffersnake')}
    kw, _ = arena_plan(season_config(o), 'snake')
    record = dict(seeds=[entry(r) for r in rows],
                  gpu_agent_steps_per_s=runs[o.run]['agent_steps_per_s'], device=runs[o.run]['device'],
                  gpu_runs=runs,
                  gpu_note=f"{len(runs)} runs at once on one GPU, sharing its 16 cores: {', '.join(runs)}",
                  tournament={**kw, 'until_stable': asdict(kw['until_stable'])}, check_meetings=o.check_meetings,
                  check=[entry(r) for r in check],
                  leaderboards=dict(seeds=[r['leaderboard'] for r in rows], check=[r['leaderboard'] for r in check]),
                  lineage=dict(parents=rows[0]['parents'], weights=Path(o.weights).name),
                  seconds=time.perf_counter() - t0,
                  machine=machine(), date=str(datetime.date.today()))
    atomic_write_json(o.out, record)
    for r in record['seeds'] + record['check']:
        p = r['puffersnake']
        print(f"seed {r['seed']}: {r['genome']} ordinal {r['ordinal']:.2f} (mu {r['mu']:.2f}, sigma {r['sigma']:.2f}, "
              f"{r['games']} games); PufferSnake {p['ordinal']:.2f} (mu {p['mu']:.2f}, sigma {p['sigma']:.2f}, "
              f"{p['games']} games); gap {r['ordinal'] - p['ordinal']:+.2f}")
    print(f"GPU training: {record['gpu_agent_steps_per_s']:,.0f} agent-steps/s on {record['device']}; wrote {o.out}")

if __name__ == '__main__': main()
