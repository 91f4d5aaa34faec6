"""The Dungeon Master and federated dreaming (73_dungeon_master, issue 33): a curriculum of the Dungeon Master's
proposals against uniformly drawn settings, and role specialists trained in dreams merged by TIES against each
specialist and their plain average.

Curriculum: for every seed of `--seeds`, PufferLib's snake network is trained from its initialisation by PuffeRL
(`train_curriculum`) for `--stages` stages of `--stage-steps` agent-steps (`--agents` learner snakes), once with the
Dungeon Master (62's offline backend; `--proposals` proposals a stage, each probed for `--probe-steps` steps, the one
whose survival is nearest one half kept) and once on uniform settings, with the same seed (initial weights, PPO
streams). Both are scored on `--heldout` fixed held-out settings (`heldout_settings`: the season's map first) by the
return per agent-step of a greedy game of `--eval-steps` steps; the paired difference over seeds is tested (t-test,
sign test). Federated dreaming: the farmer, survivor and hunter bots play `--role-steps` steps, `--per-role` snakes
each, on the season's map at `--train-seed` (training) and `--heldout-seed` (held out); a world model
(`--hidden`, `--updates`) learns their games; each role's specialist is PufferSnake trained by DAgger in dreams
(`--rounds` rounds of `--dreams` dreams of `--dream-steps` steps); they are merged by TIES (`--density`) and by plain
averaging, and every genome is scored on every role by its agreement with the role bot on the held-out games.
Each curriculum run and the federated part are kept in `--work` and read back when present (resume).
The federated part runs three times: specialists that first imitate their bot on `--real-steps` recorded steps of
their role, then dream (`federated`); specialists that only dream (`federated_dreams_only`); and specialists that only
imitate the recorded steps, passing over them as often as `federated` does (`federated_real_only`).
Writes exactly --out (default nbs/measured/dungeon_master.json): `curriculum`, `federated`, `federated_dreams_only`,
`federated_real_only`, seconds, machine, date.

    python bench/dungeon_master.py
    python bench/dungeon_master.py --seeds 0 --stages 2 --stage-steps 20000 --role-steps 60 --updates 5   # a smoke run
"""
import datetime, json, tempfile, time
from collections import Counter
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Annotated
import numpy as np
import torch
from scipy.stats import ttest_rel
from genome_lab.core import atomic_write_json, measured_dir, machine
from kit import Memo, parse, read_figures
from genome_lab.imagination.dreaming import Trajectories, WorldConfig, train_world_model
from genome_lab.tournaments.ranking import sign_test
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.imagination.dungeon_master import (CurriculumConfig, FederatedConfig, SEASON_MAP, ROLES, make_backend,
                                       train_curriculum, heldout_settings, heldout_scores, role_trajectories,
                                       dream_specialist, register_specialist, federate, role_agreement, paired_sign)

@dataclass
class DungeonOptions:
    "What the bench trains and measures, and where it writes."
    seeds: Annotated[str, 'seeds of the paired curriculum runs, comma-separated'] = '0,1,2,3,4,5'
    agents: Annotated[int, 'learner snakes (maps x snakes per map)'] = 256
    stages: Annotated[int, 'curriculum stages'] = 5
    stage_steps: Annotated[int, 'PPO agent-steps per stage'] = 200_000
    probe_steps: Annotated[int, 'steps of a probe game'] = 100
    proposals: Annotated[int, 'Dungeon Master proposals per stage'] = 6
    heldout: Annotated[int, 'held-out settings'] = 6
    eval_steps: Annotated[int, 'steps of a held-out game'] = 300
    per_role: Annotated[int, 'snakes per role bot'] = 8
    role_steps: Annotated[int, 'recorded steps per role snake'] = 400
    train_seed: Annotated[int, 'seed of the recorded training games'] = 1
    heldout_seed: Annotated[int, 'seed of the recorded held-out games'] = 2
    hidden: Annotated[int, 'world-model width'] = 128
    updates: Annotated[int, 'world-model gradient steps'] = 400
    dreams: Annotated[int, 'dreams per round'] = 32
    dream_steps: Annotated[int, 'dreamt steps per round'] = 100
    rounds: Annotated[int, 'DAgger rounds in dreams per specialist'] = 3
    real_steps: Annotated[int, "specialists' round 0: recorded steps of the role's games (none when dreams only)"] = 200
    epochs: Annotated[int, "specialists' passes over every game so far after each round"] = 4
    bptt: Annotated[int, "specialists' steps per gradient step"] = 10
    imitation_lr: Annotated[float, "specialists' Adam learning rate"] = 1e-4
    density: Annotated[float, "TIES' kept share of each task vector"] = 0.2
    work: Annotated[str, 'folder of finished runs (resume); default: a temporary folder'] = ''
    parts: Annotated[str, "parts to run, comma-separated: a part left out keeps its record in --out, or when --out has none "
                          "nothing is written (another process can fill `--work` with it)"] = 'curriculum,federated'
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'dungeon_master.json')

ROLE_MAP = {k: v for k, v in SEASON_MAP.items() if k != 'num_snakes'} # the season's map; the recorder sets the snakes
FEDERATED = ('federated', 'federated_dreams_only', 'federated_real_only') # the federated part's records in --out

def cached(path:Path, key:dict, make)->dict:
    "The record at `path` when its key is `key`; else `make()`, stored there."
    return Memo(path, key, redo=True).step('record', make)

def spread(x:np.ndarray)->dict: # {'mean', 'std' (over seeds; None for one), 'n'}
    return dict(mean=float(x.mean()), std=float(x.std(ddof=1)) if len(x) > 1 else None, n=len(x))

def curriculum(o:DungeonOptions, work:Path)->dict:
    "The paired curriculum runs (each kept in `work`), their held-out scores and the test of their difference."
    held = heldout_settings(o.heldout)
    runs = []
    for seed in [int(s) for s in o.seeds.split(',')]:
        cfg = CurriculumConfig(agents=o.agents, stages=o.stages, stage_steps=o.stage_steps, probe_steps=o.probe_steps,
                               proposals=o.proposals, seed=seed)
        for kind in ('dungeon_master', 'uniform'):
            def make():
                t0 = time.perf_counter()
                pol, stages = train_curriculum(kind, cfg, make_backend('offline') if kind == 'dungeon_master' else None)
                scores = heldout_scores(pol, held, o.eval_steps, o.agents)
                return dict(kind=kind, seed=seed, scores=scores, mean=float(np.mean(scores)), stages=stages,
                            seconds=time.perf_counter() - t0)
            key = dict(cfg=asdict(cfg), kind=kind, heldout=held, eval_steps=o.eval_steps)
            runs.append(cached(work/f'curriculum-{kind}-{seed}.json', key, make))
            r = runs[-1]
            print(f"seed {seed} {kind}: held-out return per agent-step {r['mean']:.5f} "
                  f"({', '.join(f'{x:.4f}' for x in r['scores'])}) in {r['seconds']:.0f} s", flush=True)
    dm = np.array([r['mean'] for r in runs if r['kind'] == 'dungeon_master'])
    un = np.array([r['mean'] for r in runs if r['kind'] == 'uniform'])
    d = dm - un
    t = ttest_rel(dm, un) if len(d) > 1 else None
    proposals = [s for r in runs if r['kind'] == 'dungeon_master' for s in r['stages']]
    n_rej = sum(len(s['rejected']) for s in proposals)
    return dict(heldout_settings=held, runs=runs,
                dungeon_master=spread(dm), uniform=spread(un),
                difference=dict(spread(d), t_pvalue=float(t.pvalue) if t is not None else None,
                                sign=dict(wins=int((d > 0).sum()), losses=int((d < 0).sum()),
                                          p_value=sign_test(int((d > 0).sum()), int((d < 0).sum())))),
                proposals=dict(asked=n_rej + sum(len(s['proposed']) for s in proposals), rejected=n_rej,
                               reasons=dict(Counter('crowded' if 'crowd' in s else s.split('=')[0] for p in proposals
                                                    for s in p['rejected']))),
                settings=dict(agents=o.agents, stages=o.stages, stage_steps=o.stage_steps, probe_steps=o.probe_steps,
                              proposals=o.proposals, eval_steps=o.eval_steps, backend='offline'))

def federated(o:DungeonOptions, work:Path, tmp:Path, real_steps:int, rounds:int, epochs:int)->dict:
    "Role specialists (round 0 on `real_steps` recorded steps, `rounds` dream rounds, `epochs` after each), merged."
    key = {k: getattr(o, k) for k in ('per_role', 'role_steps', 'train_seed', 'heldout_seed', 'hidden', 'updates',
                                      'dreams', 'dream_steps', 'bptt', 'imitation_lr', 'density')}
    key |= dict(real_steps=real_steps, rounds=rounds, epochs=epochs)
    def make():
        t0 = time.perf_counter()
        tmp_ = Path(tempfile.mkdtemp(dir=tmp))
        train = role_trajectories(tmp_/'train', ROLES, o.per_role, o.role_steps, o.train_seed, **ROLE_MAP)
        held = role_trajectories(tmp_/'held', ROLES, o.per_role, o.role_steps, o.heldout_seed, **ROLE_MAP)
        wcfg = WorldConfig(hidden=o.hidden, embed=o.hidden, updates=o.updates)
        world, hist = train_world_model(Trajectories.concat(list(train.values())), wcfg)
        first, last = float(hist['losses/loss'].head(20).mean()), float(hist['losses/loss'].tail(20).mean())
        print(f"world model: loss {first:.3f} -> {last:.3f} "
              f"in {time.perf_counter() - t0:.0f} s", flush=True)
        fcfg = FederatedConfig(real_steps=real_steps, dreams=o.dreams, dream_steps=o.dream_steps, rounds=rounds,
                               epochs=epochs, bptt=o.bptt, imitation_lr=o.imitation_lr,
                               density=o.density)
        reg = Registry(tmp_/'registry'); base = seed_founders(reg)['PufferSnake']
        puffer, specs, losses = reg.policy(base), {}, {}
        for r in ROLES:
            specs[r], losses[r] = dream_specialist(puffer, r, world, train[r], fcfg)
            print(f"specialist {r}: imitation loss by round {[round(x, 4) for x in losses[r]]}", flush=True)
        ids = {r: register_specialist(reg, s, r, base).id for r, s in specs.items()}
        merged = federate(reg, list(ids.values()), fcfg.density, fcfg.lam)
        pols = {'PufferSnake': puffer, **{f'specialist:{r}': specs[r] for r in ROLES},
                **{m: reg.policy(i) for m, i in merged.items()}}
        ra = role_agreement(pols, held)
        agreement = {r: {n: float(np.mean(v)) for n, v in d.items()} for r, d in ra.items()}
        pooled = lambda n: sum((ra[r][n] for r in ROLES), [])
        tests = {f'ties_vs_average:{r}': paired_sign(ra[r]['ties'], ra[r]['average']) for r in ROLES}
        tests |= {f'ties_vs_specialist:{r}': paired_sign(ra[r]['ties'], ra[r][f'specialist:{r}']) for r in ROLES}
        tests |= {'ties_vs_average:pooled': paired_sign(pooled('ties'), pooled('average'))}
        return dict(roles=list(ROLES), agreement=agreement, per_trajectory=ra,
                    mean_over_roles={n: float(np.mean([agreement[r][n] for r in ROLES])) for n in pols},
                    own_role={r: agreement[r][f'specialist:{r}'] for r in ROLES}, tests=tests,
                    imitation_losses=losses, world_model=dict(config=asdict(wcfg), first_loss=first,
                                                               last_loss=float(hist['losses/loss'].tail(20).mean())),
                    settings=asdict(fcfg) | dict(per_role=o.per_role, role_steps=o.role_steps, map=SEASON_MAP,
                                                 train_seed=o.train_seed, heldout_seed=o.heldout_seed),
                    seconds=time.perf_counter() - t0)
    return cached(work/f'federated-{real_steps}-{rounds}-{epochs}.json', key, make)

def main():
    o = parse(DungeonOptions, doc=__doc__)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}", flush=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(o.work or tmp); work.mkdir(parents=True, exist_ok=True)
        parts = o.parts.split(',')
        if 'federated' in parts:
            variants = dict(zip(FEDERATED, [(o.real_steps, o.rounds, o.epochs), (0, o.rounds, o.epochs),
                                            (o.real_steps, 0, o.epochs * (o.rounds + 1))]))   # as many real passes
            fed = {k: federated(o, work, Path(tmp), *v) for k, v in variants.items()}
            for k, f in fed.items(): print(k, f['own_role'], f['mean_over_roles'], f['tests'], sep='\n', flush=True)
        if 'curriculum' in parts: cur = curriculum(o, work)
    kept = read_figures(o.out)
    if 'federated' not in parts: fed = {k: kept[k] for k in FEDERATED if k in kept}
    if 'curriculum' not in parts: cur = kept.get('curriculum')
    if cur is None or len(fed) < len(FEDERATED): return   # a part for another process's `--work`: nothing to write
    record = dict(curriculum=cur, **fed, seconds=time.perf_counter() - t0, machine=machine(),
                  date=str(datetime.date.today()))
    atomic_write_json(o.out, record)
    print(f"curriculum: Dungeon Master {cur['dungeon_master']}, uniform {cur['uniform']}, "
          f"difference {cur['difference']}")
    print(f"proposals: {cur['proposals']}")
    print(f"wrote {o.out}")

if __name__ == '__main__': main()
