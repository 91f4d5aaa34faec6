"""Two seasons with producers working between them: do the seasons keep better genomes than they started with?

Season 1 runs every producer of the season for one round (their small defaults) and plays its tournaments at the
stable settings (`SeasonConfig`'s defaults: until the top is stable or every pair met `max_meetings` times); then each
producer works `--budget-s` wall-seconds between the seasons (`seasons.spawn_worker`: one process each, working for its
budget from its checkpoint), one producer after another; season 2 trains
nothing and plays the queue, each producer's newest 2 offers (`max_offers`; the older ones retired unplayed). The
registry starts with the founders, the reference tetris players and the random reference creatures (added to a resumed
registry that lacks them), so every arena has active genomes for the candidates to replace. Bot
players (`83_player_loop`) upload sessions and report games before each season, as in `75_seasons`. Per season and
arena it writes: the candidates offered by producer, the tournament's games,
split-half Kendall `tau` (and `top_tau`), the ratings' sigmas, the `replacements` with both genomes' ordinals, and
whether an active genome was replaced by a better-rated candidate. Resumable: a killed run continues from its registry.
Writes nbs/measured/seasons_<date>.json (UTC date of the run's start).
Usage: nice -n 10 python bench/seasons.py [--budget-s 300] [--max-meetings N] [--registry runs/seasons_bench] [--quick]
       [--until season1|between]   (stop there; a later call with the same --registry goes on from it)
"""
import json, os, platform, time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated
from kit import Memo, parse

@dataclass
class SeasonsBench:
    "The seasons bench's settings."
    budget_s: Annotated[float, 'wall-seconds each producer works between the seasons'] = 300.0
    registry: Annotated[str, 'the run registry (resumed if it exists)'] = 'runs/seasons_bench'
    bot_games: Annotated[int, 'games each bot player reports before a season'] = 4
    seed: Annotated[int, "the seasons' and producers' seed"] = 0
    max_meetings: Annotated[int, "a new season's max_meetings (0: SeasonConfig's); a resumed season keeps its own"] = 0
    quick: Annotated[bool, 'tiny games and budgets: a check that the script runs'] = False
    until: Annotated[str, "stop after this phase: 'season1', 'between' or 'season2'; a later call with the same "
                          "--registry resumes from it"] = 'season2'
    out: Annotated[str, 'the figures file (default nbs/measured/seasons_<date>.json)'] = ''

    def __post_init__(self):
        if self.until not in ('season1', 'between', 'season2'):
            raise ValueError(f"--until {self.until!r}: choose season1, between or season2")

# each round of a producer between seasons is bigger than a season's quick round (PPO's run keeps its per-round
# steps: its checkpoint refuses other settings); season 2 takes each producer's newest MAX_OFFERS offers
BETWEEN = dict(replicator_generations=16, program_generations=4, creature_generations=8, creature_population=16)
MAX_OFFERS = 2

def arena_report(reg, row:dict, ratings)->dict: # {arena: {...}}
    "One season's figures per arena, from its row in `season_table` and `Registry.ratings_by_season`."
    out = {}
    for arena, st in row['stability'].items():
        cands = [c for c in row['candidates'] if c['arena'] == arena]
        by = {}
        for c in cands: by.setdefault(c['producer'], []).append(c['name'])
        r = ratings[ratings.arena == arena].set_index('name')
        ordinal = lambda n: round(float(r.ordinal[n]), 3) if n in r.index else None
        swaps = [dict(removed=s['removed'], added=s['added'], removed_ordinal=ordinal(s['removed']),
                      added_ordinal=ordinal(s['added'])) for s in row['replacements'] if s['arena'] == arena]
        better = [s for s in swaps if s['removed'] is not None and s['removed_ordinal'] is not None
                  and s['added_ordinal'] > s['removed_ordinal']]
        out[arena] = dict(candidates={p: len(v) for p, v in by.items()}, candidate_names=by, games=st['games'],
                          tau=st['tau'], top_tau=st['top_tau'], sigma_mean=st['sigma'], lead=st['lead'],
                          sigmas={n: round(float(s), 3) for n, s in r.sigma.items()}, replacements=swaps,
                          replaced_active_by_better=bool(better))
    return out

def main():
    a = parse(SeasonsBench, doc=__doc__)
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    import torch; torch.set_num_threads(1)
    from fastapi.testclient import TestClient
    from genome_lab.web.client import GenomeClient
    from genome_lab.core import find_producer, atomic_write_json, measured_dir
    from genome_lab.web.player_loop import bot_players
    from genome_lab.registry.store import Registry, seed_founders
    from genome_lab.web.server import create_app
    from genome_lab.ecosystem.seasons import SeasonConfig, run_season, season_table
    from genome_lab.ecosystem.workers import spawn_worker
    from genome_lab.programs.tetris_players import tetris_baselines
    from genome_lab.evolution.creature_store import creature_baselines
    started = datetime.now(timezone.utc)
    root = Path(a.registry); root.mkdir(parents=True, exist_ok=True)
    state = Memo(root/'bench_state.json', {k: v for k, v in asdict(a).items() if k not in ('registry', 'until', 'out')})
    if 'started' not in state: state['started'] = started.isoformat()
    game = (dict(max_meetings=2, arena_settings=dict(snake=dict(steps=100, width=32, height=24, num_food=20),
                                                     tetris=dict(steps=100), creatures=dict(seconds=2.0))) if a.quick else {})
    if a.max_meetings: game['max_meetings'] = a.max_meetings
    quick_round = dict(replicator_generations=1, program_generations=1, creature_generations=1,
                       creature_population=4) if a.quick else {}
    between = quick_round or BETWEEN
    def settings_for(names, values):
        return {n: {k: v for k, v in values.items() if hasattr(find_producer(n).settings(), k)} for n in names}
    producers = SeasonConfig().producer_names()
    first = SeasonConfig(seed=a.seed, producer_settings=settings_for(producers, quick_round), **game)
    second = SeasonConfig(seed=a.seed, producers='', max_offers=MAX_OFFERS, **game)
    reg = Registry(root)
    seed_founders(reg); tetris_baselines(reg); creature_baselines(reg)   # those it lacks (a resumed run: added now)
    http = TestClient(create_app(root, token='bench-token'))
    client = GenomeClient(http=http, token='bench-token')
    def season(k:int, cfg:SeasonConfig):
        if len([r for r in reg.seasons() if r['status'] == 'done']) >= k: return
        if not any(r['status'] == 'running' for r in reg.seasons()):   # a resumed season has its bots' games
            snakes = {i: reg.policy(i) for i in reg.ids('active') if reg.genome(i)['arena'] == 'snake'}
            bot_players(client, snakes, games=a.bot_games, steps=150, seed=a.seed*100 + k)
        t0 = time.perf_counter()
        run_season(reg, cfg, log=lambda m: print(m, flush=True))
        state[f'season{k}_seconds'] = round(time.perf_counter() - t0, 1)
    season(1, first)
    if a.until == 'season1': return
    budget = 5.0 if a.quick else a.budget_s
    if 'between' not in state: state['between'] = {}
    for n in producers:
        if n in state['between']: continue
        print(f'between the seasons: {n} for {budget} s', flush=True)
        sets = find_producer(n).settings(**settings_for([n], between)[n])
        state['between'] = state['between'] | {n: spawn_worker(root, n, budget, a.seed, settings=sets)}
        print(json.dumps(state['between'][n]), flush=True)
    if a.until == 'between': return
    season(2, second)
    table, ratings = season_table(reg), reg.ratings_by_season()
    seasons = [dict(season=int(s), seconds=state.get(f'season{s}_seconds'),
                    arenas=arena_report(reg, row.to_dict(), ratings[ratings.season == s]))
               for s, row in table.iterrows() if s <= 2]
    offered = {arena for s in seasons[1:] for arena, v in s['arenas'].items() if v['candidates']}
    out = dict(date=state['started'], machine=platform.node(), cpus=os.cpu_count(), nice=os.nice(0),
               command='python bench/seasons.py ' + ' '.join(f'--{k.replace("_", "-")} {v}'
                                                             for k, v in asdict(a).items()),
               budgets=dict(per_producer_s=budget, producers=producers, between_round_settings=between,
                            season1_round_settings=quick_round or 'defaults', threads=1,
                            spent_s=round(sum(v.get('seconds', 0) for v in state['between'].values()), 1)),
               season_settings={r['id']: {k: v for k, v in r['config'].items() if k != 'producer_settings'}
                                for r in reg.seasons() if r['id'] <= 2},
               between=state['between'], seasons=seasons,
               replaced_by_better={arena: seasons[1]['arenas'][arena]['replaced_active_by_better']
                                   for arena in offered})
    path = Path(a.out or measured_dir()/f"seasons_{state['started'][:10]}.json")
    atomic_write_json(path, out)
    reg.close()
    print(json.dumps(dict(file=str(path), replaced_by_better=out['replaced_by_better'],
                          between={n: (v.get('steps'), len(v.get('offered', [])), v.get('stopped', v.get('error')))
                                   for n, v in state['between'].items()})))

if __name__ == '__main__':
    main()
