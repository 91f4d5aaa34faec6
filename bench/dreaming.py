"""Dreaming and planning (70_dreaming, issue 33): a snake world model, its k-step open-loop accuracy on held-out games,
the planner's return against compute, and one snake season tournament of the planner genome against PufferSnake.

Games of the `--styles` bots (30_sessions), `--per-style` snakes each on one map of the season's size (80x48, 200
food), are recorded as sessions for every seed of `--train-seeds` and for `--heldout-seed` (a map never trained on).
A `WorldModel` is trained on the training games (WorldConfig's flags) and scored by `open_loop_accuracy` at k = 1, 5,
15 on the held-out games against copying the last frame. The planner (`DreamPlanner`, PufferSnake as its prior) and
PufferSnake alone drive every snake of one map for `--roi-steps` steps at each beam of `--roi-beams` and horizon of
`--roi-horizons` (`planner_roi`), and gated at each of `--roi-gates` (search only where the model gives the prior's
move a death probability above the gate). The planner (`--plan-beam`, `--plan-horizon`) is distilled into a student
of PufferSnake's architecture by DAgger (`distill`: the planner labels the training games, then `--rounds` games of
`--snakes` snakes driven by the student; DistillConfig's flags); PufferSnake, the planner and the student each drive
the ROI map once more for their milliseconds per agent-step (`planner.compute`). Then a fresh registry holds the
founders (PufferSnake, HeuristicSnake, RandomSnake), the planner genome and the distilled genome, and `run_tournament`
plays them at the season's settings (`arena_plan(SeasonConfig(), 'snake')`; `--snake-steps`, `--max-meetings` change
them), OpenSkill from scratch, at `--tournament-seed` and again, each in a fresh registry, at every seed of
`--check-seeds`; `significance` pools the planner's lead over PufferSnake across them (t-test of the mu gaps, sign test
of their head-to-head games).
The trained model is kept in `--work` (default: a temporary folder) and read back from there when present (resume).
Writes these keys of --out (default nbs/measured/dreaming.json; its other keys, other benches', are kept):
`world_model` ({"1": {model, baseline, n}, "5", "15"}), `planner` ({ordinal, mu, sigma, games, puffersnake_ordinal,
puffersnake_mu, puffersnake_sigma, distilled_ordinal, distilled_mu, distilled_sigma, kept_gain, head_to_head, compute,
beam, horizon, leaderboard, tournament, seed}),
`planner_checks` (the same from the tournaments at `--check-seeds`), `significance`, `distillation`, `roi`, the data,
training and machine.

    python bench/dreaming.py
    python bench/dreaming.py --steps 60 --per-style 2 --updates 3 --roi-steps 5 --snake-steps 20   # a smoke run
"""
import datetime, json, tempfile, time
from dataclasses import dataclass, asdict, field
from pathlib import Path
from typing import Annotated
import numpy as np
import pandas as pd
import torch
from safetensors.torch import save_file, load_file
from genome_lab.core import measured_dir, machine
from kit import Memo, parse, write_figures
from genome_lab.imagination.dreaming import (Trajectories, WorldConfig, WorldModel, DreamPlanner, DistillConfig, record_trajectories,
                                 train_world_model, open_loop_accuracy, planner_roi, register_planner, distill,
                                 register_distilled)
from genome_lab.tournaments.ranking import head_to_head, sign_test
from genome_lab.arenas.arena import SnakeArena
from genome_lab.arenas.policies import LinearLSTM, load_pufferlib_policy
from genome_lab.registry.store import Registry
from genome_lab.ecosystem.seasons import SeasonConfig
from genome_lab.tournaments.selection import arena_plan
from genome_lab.tournaments.tournament import run_tournament
from scipy.stats import ttest_1samp

@dataclass
class DreamingOptions:
    "What the bench records, trains, plans and rates, and where it writes."
    styles: Annotated[str, 'bot styles (30_sessions) recorded, comma-separated'] = \
        'puffer_greedy,puffer_t1,farmer,survivor,hunter,random'
    per_style: Annotated[int, 'snakes of each style on a map'] = 4
    steps: Annotated[int, 'recorded steps per snake'] = 1000
    train_seeds: Annotated[str, 'seeds of the training games, comma-separated'] = '1,2'
    heldout_seed: Annotated[int, 'seed of the held-out games'] = 3
    world: WorldConfig = field(default_factory=WorldConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    plan_beam: Annotated[int, "the tournament planner's beam"] = 2
    plan_horizon: Annotated[int, "the tournament planner's horizon"] = 6
    roi_beams: Annotated[str, 'beams of the return-against-compute grid'] = '1,4'
    roi_horizons: Annotated[str, 'horizons of the return-against-compute grid'] = '2,8'
    roi_gates: Annotated[str, "gated planners' gates (death probabilities), at the tournament planner's size"] = '0.1'
    roi_steps: Annotated[int, 'steps per point of the grid (18 snakes)'] = 150
    tournament_seed: Annotated[int, 'seed of the tournament'] = 0
    check_seeds: Annotated[str, 'seeds of further tournaments of the same entrants (a check), comma-separated'] = '1,2,3,4'
    snake_steps: Annotated[int, "steps per tournament game (0: the season's)"] = 0
    max_meetings: Annotated[int, "games until the top is stable or every pair met this often (0: the season's)"] = 0
    work: Annotated[str, 'folder of the trained world model, ROI grid, student and tournaments (resume); default: a temporary folder'] = ''
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'dreaming.json')

ARENA = {k: SnakeArena.game_settings[k] for k in ('width', 'height', 'num_food')} # the season's snake map (the arena's own)
ints = lambda s: [int(x) for x in s.split(',')]

def world_model(o:DreamingOptions, work:Path, train)->tuple: # (WorldModel, training record)
    "The model trained on `train`, or read back from `work` if a run with the same settings stored it."
    path, memo = work/'world.safetensors', Memo(work/'world.json', asdict(o.world), redo=True)
    if path.exists() and 'training' in memo:
        m = WorldModel(o.world.hidden, o.world.embed); m.load_state_dict(load_file(path))
        return m.eval(), memo['training']
    t0 = time.perf_counter()
    m, hist = train_world_model(train, o.world)
    save_file(m.state_dict(), path)
    memo['training'] = dict(world=asdict(o.world), seconds=time.perf_counter() - t0,
                            final_losses=hist.tail(50).mean().to_dict(), first_losses=hist.head(50).mean().to_dict())
    return m, memo['training']

def roi_grid(o:DreamingOptions, work:Path, model:WorldModel, prior, roi_map:dict)->list: # [{beam, horizon, gate, ...}]
    """PufferSnake, then the planner at every beam and horizon of the grid and gated, on one map (`planner_roi`); kept in
    `work` and read back from there when a run with the same model and settings measured it (resume)."""
    key = dict(world=asdict(o.world), beams=o.roi_beams, horizons=o.roi_horizons, gates=o.roi_gates, steps=o.roi_steps,
               beam=o.plan_beam, horizon=o.plan_horizon, seed=o.tournament_seed, arena=roi_map)
    return Memo(work/'roi.json', key, redo=True).step('roi', lambda: _roi_grid(o, model, prior, roi_map))

def _roi_grid(o:DreamingOptions, model:WorldModel, prior, roi_map:dict)->list:
    roi = [dict(beam=0, horizon=0, gate=0.0, **planner_roi(prior, o.tournament_seed, o.roi_steps, **roi_map))]
    grid = [(b, h, 0.0) for b in ints(o.roi_beams) for h in ints(o.roi_horizons)]
    for b, h, g in grid + [(o.plan_beam, o.plan_horizon, float(g)) for g in o.roi_gates.split(',') if g]:
        p = DreamPlanner.from_parts(model, prior, beam=b, horizon=h, gate=g)
        got = planner_roi(p, o.tournament_seed, o.roi_steps, **roi_map)
        roi.append(dict(beam=b, horizon=h, gate=g, model_steps=b*4*h, **got))
        print(roi[-1], flush=True)
    return roi

def student_of(o:DreamingOptions, work:Path, planner:DreamPlanner, train)->tuple: # (LinearLSTM, DAgger history)
    "The planner distilled (`distill`) on `train`, or read back from `work` if a run with the same settings stored it."
    key = dict(world=asdict(o.world), distill=asdict(o.distill), beam=o.plan_beam, horizon=o.plan_horizon,
               data=[o.styles, o.per_style, o.steps, o.train_seeds])
    path, memo = work/'student.safetensors', Memo(work/'student.json', key, redo=True)
    if path.exists() and 'rounds' in memo:
        s = LinearLSTM(**planner.prior.config); s.load_state_dict(load_file(path))
        return s.eval(), pd.DataFrame(memo['rounds'])
    t0 = time.perf_counter()
    s, hist = distill(planner, train, o.distill, **ARENA)
    print(hist.round(4).to_string(index=False), f"distilled in {time.perf_counter() - t0:.0f} s", sep='\n', flush=True)
    save_file(s.state_dict(), path); memo['rounds'] = hist.to_dict('records')
    return s, hist

def tournament(o:DreamingOptions, work:Path, planner:DreamPlanner, student, accuracy:dict, seed:int)->dict:
    """One season tournament of the founders, the planner genome and its distilled student in a fresh registry: the
    `planner` entry, kept in `work` and read back from there when a run with the same settings played it (resume)."""
    key = dict(world=asdict(o.world), distill=asdict(o.distill), beam=o.plan_beam, horizon=o.plan_horizon,
               data=[o.styles, o.per_style, o.steps, o.train_seeds], snake_steps=o.snake_steps,
               max_meetings=o.max_meetings)
    return Memo(work/f'tournament-{seed}.json', key, redo=True).step(
        'entry', lambda: _tournament(o, work, planner, student, accuracy, seed))

def _tournament(o:DreamingOptions, work:Path, planner:DreamPlanner, student, accuracy:dict, seed:int)->dict:
    reg = Registry(work/f'registry-{seed}-{time.time_ns()}')
    g = register_planner(reg, planner, world_model=accuracy)
    d = register_distilled(reg, student, g.id, **asdict(o.distill))
    puffer = reg.by_name('PufferSnake')
    season = SeasonConfig(**({'max_meetings': o.max_meetings} if o.max_meetings else {}),
                          arena_settings=dict(snake=dict(steps=o.snake_steps)) if o.snake_steps else {})
    kw, _ = arena_plan(season, 'snake')
    t0 = time.perf_counter()
    t = run_tournament(reg, arena='snake', seed=seed, progress=False, **kw)
    row = t.leaderboard.set_index('id')
    board = t.leaderboard[['name', 'mu', 'sigma', 'ordinal', 'score', 'games']]
    print(f"tournament at seed {seed}: {len(t.games)} games in {time.perf_counter() - t0:.0f} s",
          board.round(3).to_string(index=False), sep='\n', flush=True)
    ids = json.loads(reg.db.execute('SELECT settings FROM evaluations WHERE id=?', (t.evaluation,)).fetchone()[0])['ids']
    h2h = lambda a, b: head_to_head(t.games, t.results, ids.index(a), ids.index(b))
    entry = dict(ordinal=float(row.ordinal[g.id]), mu=float(row.mu[g.id]), sigma=float(row.sigma[g.id]),
                games=int(row.games[g.id]), puffersnake_ordinal=float(row.ordinal[puffer]),
                puffersnake_mu=float(row.mu[puffer]), puffersnake_sigma=float(row.sigma[puffer]),
                distilled_ordinal=float(row.ordinal[d.id]), distilled_mu=float(row.mu[d.id]),
                distilled_sigma=float(row.sigma[d.id]), distilled_games=int(row.games[d.id]),
                head_to_head=dict(planner_vs_puffersnake=h2h(g.id, puffer), distilled_vs_puffersnake=h2h(d.id, puffer),
                                  planner_vs_distilled=h2h(g.id, d.id)),
                beam=o.plan_beam, horizon=o.plan_horizon, seconds=time.perf_counter() - t0,
                leaderboard=board.to_dict('records'), tournament={**kw, 'until_stable': asdict(kw['until_stable'])},
                seed=seed)
    return entry

def significance(ratings:list)->dict:
    """The planner's lead over PufferSnake across independent tournaments (`ratings`, one `planner` entry each): the
    mean gap in mu with its standard error and one-sample t-test over tournaments, and the sign test of all their
    head-to-head games pooled."""
    gaps = np.array([r['mu'] - r['puffersnake_mu'] for r in ratings])
    pooled = {k: sum(r['head_to_head']['planner_vs_puffersnake'][k] for r in ratings) for k in ('wins', 'losses', 'ties')}
    se = float(gaps.std(ddof=1) / np.sqrt(len(gaps))) if len(gaps) > 1 else None
    return dict(tournaments=len(gaps), mu_gaps=gaps.tolist(), mean_mu_gap=float(gaps.mean()), se=se,
                t_p_value=float(ttest_1samp(gaps, 0).pvalue) if len(gaps) > 1 else None,
                head_to_head=pooled, sign_p_value=sign_test(pooled['wins'], pooled['losses']))

def main(argv=None):
    o = parse(DreamingOptions, doc=__doc__, argv=argv)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}", flush=True)
    styles, t0 = o.styles.split(','), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(o.work or tmp); work.mkdir(parents=True, exist_ok=True)
        rec = lambda s: record_trajectories(Path(tmp)/f'sessions-{s}', styles, o.per_style, o.steps, s, **ARENA)
        parts = [rec(s) for s in ints(o.train_seeds)]
        train = Trajectories.concat(parts)
        held = rec(o.heldout_seed)
        print(f"recorded {len(train)} training and {len(held)} held-out trajectories of {o.steps} steps "
              f"in {time.perf_counter() - t0:.0f} s", flush=True)
        model, training = world_model(o, work, train)
        acc = open_loop_accuracy(model, held, context=o.world.context)
        for k, v in acc.items():
            print(f"k={k}: model {v['model']:.4f}, copy-last-frame {v['baseline']:.4f} (n={v['n']})")
        prior = load_pufferlib_policy('snake')
        roi_map = dict(ARENA, num_snakes=18)
        roi = roi_grid(o, work, model, prior, roi_map)
        planner = DreamPlanner.from_parts(model, prior, beam=o.plan_beam, horizon=o.plan_horizon)
        student, dagger = student_of(o, work, planner, train)
        compute = {name: planner_roi(p, o.tournament_seed, o.roi_steps, **roi_map)
                   for name, p in (('puffersnake', prior), ('planner', planner), ('distilled', student))}
        print({k: round(v['ms_per_step'], 4) for k, v in compute.items()}, flush=True)
        rate = lambda seed: tournament(o, work, planner, student, acc, seed)
        rating, checks = rate(o.tournament_seed), [rate(s) for s in (ints(o.check_seeds) if o.check_seeds else [])]
    gains = [(r['distilled_ordinal'] - r['puffersnake_ordinal']) / gap if (gap := r['ordinal'] - r['puffersnake_ordinal']) > 0
             else None for r in [rating] + checks]   # the share of the planner's gain the student kept (none: no gain)
    rating |= dict(kept_gain=gains[0], compute=compute)
    record = dict(world_model=acc, planner=rating, planner_checks=checks, significance=significance([rating] + checks),
                  distillation=dict(settings=asdict(o.distill), rounds=dagger.to_dict('records'), kept_gain=gains),
                  roi=roi,
                  roi_settings=dict(roi_map, steps=o.roi_steps),
                  data=dict(styles=styles, per_style=o.per_style, steps=o.steps, train_seeds=ints(o.train_seeds),
                            heldout_seed=o.heldout_seed, arena=ARENA, train_trajectories=len(train),
                            heldout_trajectories=len(held)),
                  training=training, seconds=time.perf_counter() - t0, machine=machine(),
                  date=str(datetime.date.today()))
    write_figures(o.out, record)   # other benches' keys (dream_policy, world_model_tetris) kept
    for r in [rating] + checks:
        print(f"seed {r['seed']}: planner ordinal {r['ordinal']:.2f} (mu {r['mu']:.2f}, sigma {r['sigma']:.2f}, "
              f"{r['games']} games); PufferSnake {r['puffersnake_ordinal']:.2f} (mu {r['puffersnake_mu']:.2f}, "
              f"sigma {r['puffersnake_sigma']:.2f}); gap {r['ordinal'] - r['puffersnake_ordinal']:+.2f}; distilled "
              f"{r['distilled_ordinal']:.2f}; head to head {r['head_to_head']}")
    print(f"significance: {record['significance']}")
    print(f"wrote {o.out}")

if __name__ == '__main__': main()
