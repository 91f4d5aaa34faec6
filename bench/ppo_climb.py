"""The ppo producer's climb on this CPU (issue 44): does its fine-tune of PufferSnake pass every non-random founder?

1. The producer at work: `genome-lab produce ppo --registry ROOT/registry --budget-s B --ppo-steps N` (PPOProducer,
   51_ppo_producer: PuffeRL fine-tuning the best active snake, PufferSnake in a registry of the founders, with
   `finetune_recipe`, beside a learner from scratch), in a process of its own; a rerun with --budget-s goes on from its
   checkpoint, --budget-s 0 trains no more. Each session's result line is kept in ROOT/produce.jsonl.
2. A qualifier picks its best offer: the last --candidates offers of the fine-tune and PufferSnake in a tournament at
   the season's snake settings (`arena_plan(SeasonConfig(), 'snake')`: 3 genomes a game, 6 snakes each, 1000 steps,
   80x48 cells, 200 food), --qualifier-meetings meetings per pair, seed --qualifier-seed; the offer of the highest
   ordinal is the best.
3. The check: a tournament of --games games at the same settings between the best offer, PufferSnake and
   HeuristicSnake (each game all three), at the first of --seeds (not the qualifier's), OpenSkill ratings from scratch:
   mu, sigma, ordinal and games of each, the gap in combined sigma to the best non-random founder ((mu_a - mu_b) /
   sqrt(sigma_a^2 + sigma_b^2)) and the head-to-head games (`head_to_head`: finished above, below, level); the same
   again at the other seeds (`checks`), to see how far one check's figures move with the maps.
Writes --out (default nbs/measured/ppo_climb.json) with the producer's run (agent-steps, wall seconds, agent-steps/s,
settings) beside it. Usage: python bench/ppo_climb.py --root /work/main/runs/ppo_climb [--budget-s 2700]
"""
import datetime, json, os, subprocess, sys, time
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Annotated
import numpy as np
from genome_lab.core import atomic_write_json, config_parser, config_from_args, measured_dir, machine, load_state
from genome_lab.tournaments.ranking import head_to_head
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.ecosystem.seasons import SeasonConfig
from genome_lab.tournaments.selection import arena_plan
from genome_lab.ecosystem.workers import console_script
from genome_lab.tournaments.tournament import run_tournament
from kit import lead_record

@dataclass
class ClimbOptions:
    "Where the climb runs, how long it trains, and the tournaments that judge it."
    root: Annotated[str, "the climb's folder (its registry, the producer's checkpoint, the session log)"] = 'runs/ppo_climb'
    budget_s: Annotated[float, 'wall-seconds of producer work in this call (0: train no more)'] = 0.0
    ppo_steps: Annotated[int, "agent-steps between the producer's offers (PPOSettings.ppo_steps)"] = 1_179_648
    candidates: Annotated[int, "the fine-tune's last offers in the qualifier"] = 3
    qualifier_meetings: Annotated[int, 'meetings per pair in the qualifier'] = 4
    qualifier_seed: Annotated[int, "the qualifier's tournament seed"] = 100
    games: Annotated[int, 'games of the check tournament (each among all three)'] = 48
    seeds: Annotated[str, "the check tournaments' seeds, comma-separated: the first is the check, the others repeat it"] = '0,1,2'
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'ppo_climb.json')

def produce(o:ClimbOptions, registry:Path)->dict: # the session's result line
    "The producer at work for `o.budget_s` in a process of its own, one torch thread."
    cmd = [str(console_script()), 'produce', 'ppo', f'--registry={registry}', f'--budget-s={o.budget_s}',
           f'--ppo-steps={o.ppo_steps}', '--threads=1']
    t0, load = time.time(), os.getloadavg()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    if r.returncode: sys.exit(f"the producer failed ({r.returncode}): {r.stderr[-2000:]}")
    out = dict(json.loads(r.stdout.strip().splitlines()[-1]), wall=time.time() - t0, load_before=load,
               load_after=os.getloadavg(), started=datetime.datetime.fromtimestamp(t0).isoformat(timespec='seconds'))
    with open(Path(o.root)/'produce.jsonl', 'a') as f: f.write(json.dumps(out) + '\n')
    return out

def rating(t, gid:str)->dict: # {mu, sigma, ordinal, games} of `gid` in tournament `t`
    r = t.leaderboard.set_index('id').loc[gid]
    return dict(mu=float(r.mu), sigma=float(r.sigma), ordinal=float(r.ordinal), games=int(r.games))

def tournament(reg:Registry, ids:list, meetings:int, seed:int):
    "`run_tournament` of `ids` (policies from `reg`, nothing stored) at the season's snake settings, `meetings` per pair."
    kw, _ = arena_plan(SeasonConfig(), 'snake', len(ids))
    kw = {k: v for k, v in kw.items() if k not in ('until_stable', 'meetings', 'batch')}
    return run_tournament(None, ids, [reg.policy(i) for i in ids], meetings=meetings, seed=seed, progress=False, **kw), kw

def main():
    o = config_from_args(ClimbOptions, config_parser(ClimbOptions, description=__doc__.splitlines()[0]).parse_args())
    root, regdir = Path(o.root), Path(o.root)/'registry'
    if not regdir.exists(): seed_founders(Registry(regdir))
    if o.budget_s: print(f"producer session: {produce(o, regdir)}", flush=True)
    reg = Registry(regdir)
    founders = {n: reg.by_name(n) for n in ('PufferSnake', 'HeuristicSnake')}
    state = load_state(regdir/'season_work'/'ppo.safetensors', 'producer')
    runs = {k: dict(agent_steps=s['global_step'], seconds=s['seconds'], start=s['start'], config=s['config'],
                    offers=[c['genome'] for c in s['curve'] if 'genome' in c]) for k, s in state['runs'].items()}
    sessions = [json.loads(l) for l in (root/'produce.jsonl').read_text().splitlines()]
    total = sum(r['agent_steps'] for r in runs.values())
    each = ', '.join(f"{k} {r['agent_steps']:,}" for k, r in runs.items())
    print(f"the producer: {total:,} agent-steps in {sum(s['wall'] for s in sessions):,.0f} s of {len(sessions)} sessions "
          f"({each})", flush=True)
    offers = runs['finetune']['offers'][-o.candidates:]
    t0 = time.perf_counter()
    qual, kw = tournament(reg, [founders['PufferSnake'], *offers], o.qualifier_meetings, o.qualifier_seed)
    board = [dict(name=reg.genome(i)['name'], **rating(qual, i)) for i in [founders['PufferSnake'], *offers]]
    best = max(offers, key=lambda i: rating(qual, i)['ordinal'])
    print(f"qualifier ({len(qual.games)} games, {time.perf_counter() - t0:.0f} s): best {reg.genome(best)['name']}; "
          + '; '.join(f"{r['name']} {r['mu']:.2f} +- {r['sigma']:.2f}" for r in board), flush=True)
    checks = [check(reg, best, founders, o.games, int(s)) for s in o.seeds.split(',')]
    record = dict(date=str(datetime.date.today()), machine=machine(), options=asdict(o), settings=kw,
                  producer=dict(runs=runs, sessions=sessions, agent_steps=total,
                                seconds=sum(s['wall'] for s in sessions)),
                  qualifier=dict(games=len(qual.games), seed=o.qualifier_seed, board=board),
                  check=checks[0], checks=checks, lead_rule=lead_record(regdir, best))
    atomic_write_json(o.out, record)
    print(f"wrote {o.out}")

def check(reg:Registry, best:str, founders:dict, games:int, seed:int)->dict: # the check's figures
    "The check tournament of `best` against the founders at `seed`: ratings, the gap to the best founder, head-to-head."
    ids, t0 = [best, founders['PufferSnake'], founders['HeuristicSnake']], time.perf_counter()
    t, _ = tournament(reg, ids, games, seed)
    ratings = {reg.genome(i)['name']: rating(t, i) for i in ids}
    top = max(founders, key=lambda n: ratings[n]['ordinal'])
    a, b = ratings[reg.genome(best)['name']], ratings[top]
    gap = (a['mu'] - b['mu']) / float(np.hypot(a['sigma'], b['sigma']))
    h2h = {n: head_to_head(t.games, t.results, 0, ids.index(founders[n])) for n in founders}
    print(f"check at seed {seed} ({len(t.games)} games): " + '; '.join(f"{n} mu {r['mu']:.2f} sigma {r['sigma']:.2f} "
          f"ordinal {r['ordinal']:.2f}" for n, r in ratings.items()) + f"; gap to {top} {gap:.2f} combined sigma; "
          "head-to-head " + ', '.join(f"{n} {h['wins']}-{h['losses']}-{h['ties']}" for n, h in h2h.items()), flush=True)
    return dict(games=len(t.games), seed=seed, seconds=time.perf_counter() - t0, genome=reg.genome(best)['name'],
                founder=top, ratings=ratings, sigma_gap=gap, head_to_head=h2h, wins=h2h[top]['wins'],
                losses=h2h[top]['losses'])

if __name__ == '__main__': main()
