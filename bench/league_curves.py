"""The league's curves on the CPU (issue 31): an AlphaStarLeague (52_league) rated by a season tournament.

One main agent, one main exploiter and one league exploiter fine-tune PufferSnake (LeagueConfig's defaults, Adam at
1e-4, clip 0.2, on the season tournament's 80x48 map with 200 food and --snakes snakes: a main agent drives half of
them, an exploiter a quarter) in a fresh registry holding the founders; every learner
freezes a snapshot every --snapshot-every agent-steps for --rounds rounds. Then every member (the founders and all
snapshots) plays one snake tournament at the season's map and game length (`arena_plan(SeasonConfig(), 'snake')`)
with --meetings meetings per pair and no early stop, so every member is rated on one OpenSkill scale.
Writes --out (default nbs/measured/league_curves.json): `members` (one row per member: id, name, role, learner,
agent_steps, seconds: the league's wall seconds when it joined, mu, sigma, ordinal, games), the learners' training
rates (`agent_steps_per_s`, each learner's agent-steps over the league's training seconds), the settings, the machine.
Usage: python bench/league_curves.py [--rounds 3] [--snapshot-every 16384] [--meetings 2]
"""
import datetime, json, os, tempfile, time
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Annotated
import torch
from genome_lab.core import advance, atomic_write_json, measured_dir, machine
from kit import parse
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.ecosystem.seasons import SeasonConfig
from genome_lab.tournaments.selection import arena_plan
from genome_lab.rl.league import AlphaStarLeague, LeagueConfig, rate_league

@dataclass
class CurveOptions:
    "What the bench trains, how it rates, where it writes."
    rounds: Annotated[int, 'snapshots of every learner'] = 3
    snapshot_every: Annotated[int, 'agent-steps of every learner between snapshots'] = 16_384
    snakes: Annotated[int, 'snakes of every learner\'s map'] = 48
    width: Annotated[int, 'map width in cells (the season tournament\'s)'] = 80
    height: Annotated[int, 'map height in cells'] = 48
    food: Annotated[int, 'food on the map'] = 200
    seed: Annotated[int, "the league's seed"] = 0
    rating_seed: Annotated[int, "the tournament's seed"] = 0
    meetings: Annotated[int, 'meetings of every pair of members in the tournament'] = 2
    run_dir: Annotated[str, 'folder of the league and its registry (resumed when there; default: temporary)'] = ''
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'league_curves.json')

def main():
    o = parse(CurveOptions, doc=__doc__)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    root = Path(o.run_dir or tempfile.mkdtemp(prefix='league-curves-'))
    reg = Registry(root/'registry')
    seed_founders(reg)
    cfg = LeagueConfig(snapshot_every=o.snapshot_every, num_snakes=o.snakes, width=o.width, height=o.height,
                       num_food=o.food, seed=o.seed)
    lg = AlphaStarLeague(cfg, reg)   # resumed from root/league.safetensors when there (advance)
    done = lambda l: min(r.agent_steps for _, r in l.learners.values()) >= o.rounds * o.snapshot_every
    try: advance(lg, root/'league.safetensors', 'league', until=done)
    finally: lg.close()
    rates = {n: r.agent_steps / lg.seconds for n, (_, r) in lg.learners.items()}
    kw, _ = arena_plan(SeasonConfig(), 'snake')
    kw = {**kw, 'meetings': o.meetings, 'until_stable': None}
    t0 = time.perf_counter()
    rated = rate_league(reg, lg.entries, seed=o.rating_seed, **kw)
    rating_seconds = time.perf_counter() - t0
    cols = ['name', 'role', 'agent_steps', 'seconds', 'mu', 'sigma', 'ordinal', 'games']
    print(rated[cols].round(2).to_string(index=False))
    record = dict(members=rated.to_dict('records'), league=asdict(cfg), options=asdict(o), tournament=kw,
                  training_seconds=lg.seconds, rating_seconds=rating_seconds, agent_steps_per_s=rates,
                  machine=machine(), date=str(datetime.date.today()))
    atomic_write_json(o.out, record)
    print(f"training {lg.seconds:.1f} s ({', '.join(f'{n} {v:,.0f}' for n, v in rates.items())} agent-steps/s), "
          f"rating {rating_seconds:.1f} s; wrote {o.out}")

if __name__ == '__main__': main()
