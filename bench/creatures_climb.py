"""The creatures producer's climb: from a registry holding only the arena's founders (three random creatures and the
gait, `creature_baselines`), its newest offer against the gait by the project's lead rule, and against the best founder
at the season's creature settings, next to the producer's old round measured the same way.

1. The reference tournament: the founders (`creature_baselines`) in `--races` races at the season's creature settings
   (`SeasonConfig`: every creature in every race, `creature_seconds` each), fresh ratings; the best by ordinal.
2. The producer: `genome-lab produce creatures --budget-s B` as one process on this machine (`seasons.spawn_worker`,
   one torch thread), with `CreatureSettings` (its flags here), from the registry's folder; its offers, generations,
   wall and CPU seconds, creature-steps/s and curve (the TensorBoard scalars it logged as it went) are read back.
3. The check: its newest offer against the best founder, `--races` races (2 creatures, fresh ratings, seeds no GA
   generation or qualifier raced on): mu, sigma, ordinal and games of each, the gap in combined sigma
   (mu_a - mu_b) / sqrt(sigma_a^2 + sigma_b^2), head-to-head wins, losses and ties.
4. The baseline, in this process: the producer's old round (before the loop protocol: 8 creatures, 2 generations, one
   3 s race a generation, its round seed `seed * 1000 + 1`, the best of the last generation) checked the same way.
5. Agreement: the GA's current finalists (its fitness's best `creature_finalists` of one more generation, raced here
   from the producer's checkpoint) with the newest offer and the founders in one tournament of `--races`
   races at the season's settings: where the offer places, and Kendall's tau between the ordinals and `beaten_share`
   of the same races (the GA's fitness) and between the ordinals and the GA's own fitness of the finalists.
6. Progression: every offer, in the order offered, with the founders in one tournament of `--races` races at
   the season's settings: Kendall's tau between the order offered and the ordinals, and where the newest offer places.
7. The rule (`lead_record`: `climb_check`, 77_ecosystem): the newest offer against every founder it must lead
   (`bars`: the gait), 40 races at each of the 3 held-out check seeds at the season's settings, ahead at each, pooled
   one-sided sign test p < 0.01: the file's `checks`, `leads` and `reached`.
Resumable: the registry, the producer's run and a state file live in --root (a second call skips what is done).
Writes --out (default nbs/measured/creatures_climb.json).
Usage: nice -n 5 python bench/creatures_climb.py [--budget-s 1200] [--root /work/main/runs/creatures_climb]
       [--races 40] [--seed 0] [CreatureSettings flags, e.g. --creature-population 64]
"""
import json, math, os, platform, resource, time
from dataclasses import asdict, dataclass
from pathlib import Path
import numpy as np

@dataclass
class Settings:
    "What the bench runs."
    budget_s: float = 1200.0 # wall-seconds the producer works
    root: str = 'runs/creatures_climb' # the kept folder: registry, the producer's run, state
    races: int = 40 # races of each check tournament
    seed: int = 0 # the producer's seed
    seconds: float = 0.0 # seconds of a check race; 0: the season's (`SeasonConfig.creature_seconds`)
    check_seed: int = 7001 # tournament seeds: check, references (+1), agreement (+2), baseline check (+3), progression (+4)
    out: str = '' # the figures file; default nbs/measured/creatures_climb.json
    lead_games: int = 0 # races at each check seed of the lead rule; 0: the rule's 40 (fewer never make a lead: smoke tests)

def rating(table, name:str)->dict: # {mu, sigma, ordinal, games} of `name` in a leaderboard
    r = table.set_index('id').loc[name]
    return dict(mu=round(float(r.mu), 3), sigma=round(float(r.sigma), 3), ordinal=round(float(r.ordinal), 3),
                games=int(r.games))

def check(a:str, b:str, policies:dict, races:int, seconds:float, seed:int)->dict:
    "Check tournament of `a` against `b` (names in `policies`): ratings, combined-sigma gap, head-to-head."
    from genome_lab.tournaments.tournament import run_tournament
    t = run_tournament(ids=[a, b], policies=[policies[a], policies[b]], arena='creatures', genomes_per_game=2,
                       agents_per_genome=1, steps=0, meetings=races, seed=seed, settings=dict(seconds=seconds),
                       progress=False)
    ra, rb = rating(t.leaderboard, a), rating(t.leaderboard, b)
    ia = [list(g).index(0) for g in t.games]   # where `a` sits in each game
    ranks = np.array([[r.ranks[i], r.ranks[1 - i]] for r, i in zip(t.results, ia)])
    scores = np.array([[r.score[i], r.score[1 - i]] for r, i in zip(t.results, ia)])
    return dict(genome=a, against=b, games=len(t.games), genome_rating=ra, against_rating=rb,
                sigma_gap=round((ra['mu'] - rb['mu']) / math.hypot(ra['sigma'], rb['sigma']), 3),
                wins=int((ranks[:, 0] < ranks[:, 1]).sum()), losses=int((ranks[:, 0] > ranks[:, 1]).sum()),
                ties=int((ranks[:, 0] == ranks[:, 1]).sum()), mean_score=round(float(scores[:, 0].mean()), 3),
                against_mean_score=round(float(scores[:, 1].mean()), 3))

def references(policies:dict, races:int, seconds:float, seed:int)->dict:
    "The founders' own tournament: their ratings, the best by ordinal."
    from genome_lab.tournaments.tournament import run_tournament
    names = list(policies)
    t = run_tournament(ids=names, policies=[policies[n] for n in names], arena='creatures', genomes_per_game=len(names),
                       agents_per_genome=1, steps=0, meetings=races, seed=seed, settings=dict(seconds=seconds),
                       progress=False)
    return dict(best=t.leaderboard.id.iloc[0], ratings={n: rating(t.leaderboard, n) for n in names})

def old_round(seed:int):
    "The producer's round before the loop protocol: 8 creatures, 2 generations of one 3 s race, its best (a policy)."
    from genome_lab.evolution.creature_store import CreatureGA
    from genome_lab.arenas.physics import creature_policy
    ga = CreatureGA(8, seed * 1000 + 1, 3.0, 1)
    for _ in range(2): ga.step()
    return creature_policy(ga.last['population'], int(np.argmax(ga.last['fitness'])))

def curve(registry:Path)->dict: # {tag: [[step, value], ...]} of the producer's scalars
    from genome_lab.core import read_events, SCALARS_DIR
    out = {}
    for f in sorted((registry/SCALARS_DIR/'creatures'/'main').glob('events.out.tfevents.*')):
        for tag, step, v in read_events(f): out.setdefault(tag, []).append([step, round(float(v), 4)])
    return out

def agreement(work:Path, offer, refs:dict, settings, races:int, seconds:float, seed:int)->dict:
    """The GA's finalists of one more generation (from the producer's checkpoint, not saved), the newest offer and the
    founders in one tournament at the season's settings."""
    from scipy.stats import kendalltau
    from genome_lab.core import load_state
    from genome_lab.evolution.creature_store import CreatureGA
    from genome_lab.arenas.physics import creature_policy, beaten_share
    from genome_lab.tournaments.tournament import run_tournament
    state = load_state(work/'creatures.safetensors', 'producer')['ga']
    c = state['config']
    ga = CreatureGA(c['population'], c['seed'], c['seconds'], c['races'], compile=settings.creature_compile)
    ga.load_state_dict(state); ga.step()
    fit = ga.last['fitness']; top = np.argsort(-fit, kind='stable')[:settings.creature_finalists]
    policies = {'offer': offer, **{f'finalist{k}': creature_policy(ga.last['population'], int(i)) for k, i in enumerate(top)},
                **refs}
    names = list(policies)
    t = run_tournament(ids=names, policies=list(policies.values()), arena='creatures', genomes_per_game=len(names),
                       agents_per_genome=1, steps=0, meetings=races, seed=seed, settings=dict(seconds=seconds),
                       progress=False)
    lb = t.leaderboard.set_index('id')
    scores = np.zeros((len(t.games), len(names)))   # (race, entrant): every race holds every entrant, in its own order
    for k, (g, r) in enumerate(zip(t.games, t.results)): scores[k, list(g)] = r.score
    share = dict(zip(names, beaten_share(scores)))
    ga_names = [n for n in names if n not in refs]
    order = list(lb.index)
    fin = [f'finalist{k}' for k in range(len(top))]
    return dict(entrants=names, games=len(t.games), generation=ga.generation,
                ordinal={n: round(float(lb.ordinal[n]), 3) for n in names}, sigma={n: round(float(lb.sigma[n]), 3) for n in names},
                beaten_share={n: round(float(s), 4) for n, s in share.items()},
                ga_fitness={f: round(float(fit[i]), 4) for f, i in zip(fin, top)},
                offer_place=[n for n in order if n in ga_names].index('offer') + 1, of=len(ga_names),
                tau_share_vs_ordinal=round(float(kendalltau([share[n] for n in names],
                                                             [lb.ordinal[n] for n in names]).statistic), 3),
                tau_ga_fitness_vs_ordinal=round(float(kendalltau([fit[i] for i in top],
                                                                 [lb.ordinal[f] for f in fin]).statistic), 3))

def progression(offers:dict, refs:dict, races:int, seconds:float, seed:int)->dict:
    """Every offer (in the order offered) and the founders in one tournament at the season's settings: do the
    qualifiers' choices climb as a season rates them?"""
    from scipy.stats import kendalltau
    from genome_lab.tournaments.tournament import run_tournament
    policies = {**offers, **refs}; names = list(policies)
    t = run_tournament(ids=names, policies=list(policies.values()), arena='creatures', genomes_per_game=len(names),
                       agents_per_genome=1, steps=0, meetings=races, seed=seed, settings=dict(seconds=seconds),
                       progress=False)
    lb = t.leaderboard.set_index('id')
    return dict(games=len(t.games), ratings={n: rating(t.leaderboard, n) for n in names},
                tau_offer_order_vs_ordinal=round(float(kendalltau(range(len(offers)), [lb.ordinal[n] for n in offers]).statistic), 3),
                newest_place=[n for n in lb.index if n in offers].index(list(offers)[-1]) + 1, of=len(offers),
                top=[n for n in lb.index if n in offers][0])

def main():
    from genome_lab.core import atomic_write_json, measured_dir, machine
    from kit import Memo, parse, lead_record
    from genome_lab.evolution.creature_store import CreatureSettings, creature_baselines, season_creature_settings
    from genome_lab.registry.store import Registry
    from genome_lab.ecosystem.workers import spawn_worker
    (s, producer), given = parse(Settings, CreatureSettings, doc=__doc__, ns=True)
    given = vars(given)
    import torch; torch.set_num_threads(1)
    season = season_creature_settings()
    seconds = s.seconds or season['creature_seconds']
    root = Path(s.root); root.mkdir(parents=True, exist_ok=True)
    state = Memo(root/'bench_state.json', dict(budget_s=s.budget_s, seed=s.seed, producer=asdict(producer)))
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}; races of {seconds:g} s", flush=True)
    with Registry(root/'registry') as reg:
        ids = creature_baselines(reg)
        refs = {n: reg.policy(i) for n, i in ids.items()}
    ref = references(refs, s.races, seconds, s.check_seed + 1)
    print(f"founders: best {ref['best']}: {json.dumps(ref['ratings'])}", flush=True)
    if 'producer' not in state:
        print(f"producer: genome-lab produce creatures --budget-s {s.budget_s} ({json.dumps(asdict(producer))})", flush=True)
        t0, c0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        res = spawn_worker(root/'registry', 'creatures', s.budget_s, s.seed, settings=producer, threads=1)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        state['producer'] = res | dict(wall_s=round(time.time() - t0, 1), load=os.getloadavg(),
                                       cpu_s=round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1))
    out = state['producer']
    print(f"producer: {json.dumps(out)}", flush=True)
    if 'error' in out: raise SystemExit(f"the producer failed: {out['error']}")
    with Registry(root/'registry', read_only=True) as reg:
        offers = [o for o in reg.offers() if o['producer'] == 'creatures']
        if not offers: raise SystemExit("the producer offered nothing: give it a longer --budget-s")
        newest = reg.genome(offers[-1]['genome'])
        policies = {**refs, newest['name']: reg.policy(newest['id']), 'old_round': old_round(s.seed)}
        offer_names = [reg.genome(o['genome'])['name'] for o in offers]
        offered = {n: reg.policy(o['genome']) for n, o in zip(offer_names, offers)}
    climb = check(newest['name'], ref['best'], policies, s.races, seconds, s.check_seed)
    base = check('old_round', ref['best'], policies, s.races, seconds, s.check_seed + 3)
    for name, c in (('climb', climb), ('baseline (old round)', base)):
        print(f"{name}: {c['genome']} {c['genome_rating']} vs {c['against']} {c['against_rating']}: gap "
              f"{c['sigma_gap']} combined sigma over {c['games']} races, wins {c['wins']}, losses {c['losses']}, "
              f"ties {c['ties']}", flush=True)
    agree = agreement(root/'registry'/'season_work', policies[newest['name']], refs, producer, s.races, seconds,
                      s.check_seed + 2)
    print(f"agreement: {json.dumps(agree)}", flush=True)
    climbing = progression(offered, refs, s.races, seconds, s.check_seed + 4)
    print(f"progression: {json.dumps(climbing)}", flush=True)
    scalars = curve(root/'registry')
    steps_per_s = [v for _, v in scalars.get('perf/creature_steps_per_s', [])]
    record = dict(machine=machine(), host=platform.node(), date=time.strftime('%Y-%m-%d'), settings=asdict(s),
                  producer_settings=asdict(producer), season=season, race_seconds=seconds,
                  command='python bench/creatures_climb.py ' + ' '.join(f'--{k.replace("_", "-")}={v}' for k, v in given.items()),
                  producer=dict(out, generations=out.get('steps'), offers=offer_names,
                                creature_steps_per_s_median=round(float(np.median(steps_per_s)), 1) if steps_per_s else None),
                  references=ref, check=climb, baseline=base, agreement=agree, progression=climbing,
                  curve={k: v for k, v in scalars.items() if k.startswith(('charts/fitness', 'offers/'))},
                  **lead_record(root/'registry', newest['id'], s.lead_games or None,
                                dict(seconds=s.seconds) if s.seconds else None))
    path = s.out or str(measured_dir()/'creatures_climb.json')
    atomic_write_json(path, record)
    print(f"reached (the lead rule, `lead_check`): {record['reached']}; wrote {path}")

if __name__ == '__main__': main()
