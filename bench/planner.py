"""The snake planners against PufferSnake by the project's lead rule (74_planner, issue 54): the one-step shield, the
search over the arena's own simulator, the same kind of search over a learned world model, and the student distilled
from the simulator's search by DAgger, which plays with no search at all.

Every check is `lead_check` (20_tournament): head-to-head games at the snake arena's season settings (80x48, 1000
steps, 6 snakes each) at each of the 3 held-out `CHECK_SEEDS`, `--games` games a seed; a lead when the challenger
places above the founder in more games than below at every seed and the pooled one-sided sign test gives p < 0.01.
The simulator's planner is also checked against the shield (the baseline every search must lead). The world model
is trained as bench/dreaming.py trains it (its recordings and `WorldConfig`), and its planner is 70_dreaming's
`DreamPlanner` at the settings of that bench's tournament (beam 2, horizon 6, searching where the model fears a
death: gate 0.1). Speeds: snake-moves a second of each challenger's games (both genomes' snakes), and for the
simulator's planner the share of its moves it searched. The student's DAgger games are seeded apart from the checks,
and its recipe is chosen on validation games at --dagger-validation seeds (40 a seed, the same rule), played before
its check and kept beside it (`validation`): the check's seeds choose nothing.

Writes `planner` of --out (default nbs/measured/climb.json; its other keys are kept): {shield, true_simulator,
world_model, student}, each {checks, leads: {founder: {wins, losses, p, lead, ...}}, moves_per_s, ...}. Resumable: a
rerun with the same settings skips the checks done (kept in --work).

    OMP_NUM_THREADS=1 python bench/planner.py
    OMP_NUM_THREADS=1 python bench/planner.py --games 4 --dagger-rounds 1 --dagger-steps 50 --world-updates 5 --out /tmp/p.json   # a smoke run
"""
import time
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Annotated
import torch
from safetensors.torch import save_file, load_file
from genome_lab.core import measured_dir, machine
from genome_lab.arenas.policies import LinearLSTM, load_pufferlib_policy
from genome_lab.arenas.arena import SnakeArena
from genome_lab.tournaments.tournament import lead_check
from genome_lab.imagination.planner import ShieldedLSTM, SimPlanner, distill_planner
from genome_lab.imagination.dreaming import (DistillConfig, DreamPlanner, Trajectories, WorldConfig, record_trajectories,
                                             open_loop_accuracy)
from kit import Memo, parse, write_figures
from dreaming import DreamingOptions, world_model, ARENA

@dataclass
class PlannerBench:
    "The planner bench's settings."
    games: Annotated[int, 'head-to-head games at each check seed'] = 40
    horizon: Annotated[int, "the simulator planner's look-ahead steps"] = 8
    dagger_rounds: Annotated[int, "the student's DAgger rounds"] = 16
    dagger_steps: Annotated[int, 'steps of each DAgger game'] = 500
    dagger_snakes: Annotated[int, 'snakes on each DAgger map'] = 18
    dagger_epochs: Annotated[int, 'passes over all labelled games after each round'] = 2
    dagger_lr: Annotated[float, "the student's learning rate (Adam; 3e-4 chosen on the validation seeds over 1e-4 and 1e-3)"] = 3e-4
    dagger_validation: Annotated[str, "seeds of the student's validation games, before its check (a recipe is chosen on these, never on the check's)"] = '101,202,303'
    world_updates: Annotated[int, "the world model's gradient steps (bench/dreaming.py's WorldConfig: 800)"] = 800
    work: Annotated[str, 'folder of the kept checks, world model and student (a rerun resumes)'] = 'runs/planner'
    out: Annotated[str, 'the figures file (default nbs/measured/climb.json)'] = ''

def moves_per_s(checks:list)->float: # snake-moves a second over the challenger's check games
    "Snake-moves a second of a challenger's check games: 2 genomes x the season's 6 snakes x 1000 steps a game."
    return sum(c['games'] * 2 * 6 * 1000 for c in checks) / sum(c['seconds'] for c in checks)

def main():
    o = parse(PlannerBench, doc=__doc__)
    torch.set_num_threads(1)
    work = Path(o.work); work.mkdir(parents=True, exist_ok=True)
    memo = Memo(work/'planner_state.json', dict(games=o.games, horizon=o.horizon, world_updates=o.world_updates))
    dagger = {k: v for k, v in asdict(o).items() if k.startswith('dagger')}
    taught = Memo(work/'student_state.json', dict(games=o.games, horizon=o.horizon, **dagger), redo=True)
    puffer = load_pufferlib_policy('snake')
    shield = ShieldedLSTM.of(puffer)
    planner = SimPlanner.from_prior(puffer, horizon=o.horizon)
    def check(name, challenger, founders, kept=memo): # the rule's checks, kept in a memo
        t0 = time.perf_counter()
        out = kept.step(name, lambda: lead_check(challenger, founders, 'snake', games=o.games))
        said = '; '.join(f"{f} {v['wins']}-{v['losses']} p {v['p']:.3g} lead {v['lead']}" for f, v in out['leads'].items())
        print(f"{name}: {said} ({time.perf_counter() - t0:.0f} s)", flush=True)
        return out
    rec = {}
    s = check('shield', shield, {'PufferSnake': puffer})
    rec['shield'] = dict(s, moves_per_s=moves_per_s(s['checks']), of='PufferSnake')
    planner.stats.update(plans=0, searched=0, changed=0, seconds=0.0)
    s = check('true_simulator', planner, {'PufferSnake': puffer, 'shield': shield})
    rec['true_simulator'] = dict(s, moves_per_s=moves_per_s(s['checks']), horizon=o.horizon,
                                 searched=memo.step('searched', lambda: dict(planner.stats)))
    # the world model, as bench/dreaming.py makes it; its planner as that bench's tournament planner
    dopt = DreamingOptions(world=WorldConfig(updates=o.world_updates))
    rec_traj = lambda seed: record_trajectories(work/f'sessions-{seed}', dopt.styles.split(','), dopt.per_style, dopt.steps,
                                                seed, **ARENA)
    kept = (work/'world.safetensors').exists()   # else recorded and trained now (`world_model` keeps it)
    model, training = world_model(dopt, work, None if kept else
                                  Trajectories.concat([rec_traj(int(x)) for x in dopt.train_seeds.split(',')]))
    accuracy = memo.step('world_accuracy', lambda: open_loop_accuracy(model, rec_traj(dopt.heldout_seed), context=dopt.world.context))
    dream = DreamPlanner.from_parts(model, puffer, beam=dopt.plan_beam, horizon=dopt.plan_horizon, gate=0.1)
    s = check('world_model', dream, {'PufferSnake': puffer})
    rec['world_model'] = dict(s, moves_per_s=moves_per_s(s['checks']), accuracy=accuracy, training=training,
                              beam=dopt.plan_beam, horizon=dopt.plan_horizon, gate=0.1)
    # the student: DAgger from the simulator's planner, kept in the work folder
    path, student = work/'student.safetensors', LinearLSTM(**puffer.config)
    if path.exists() and 'dagger' in taught: student.load_state_dict(load_file(path))
    else:
        t0 = time.perf_counter()
        cfg = DistillConfig(rounds=o.dagger_rounds, snakes=o.dagger_snakes, game_steps=o.dagger_steps, epochs=o.dagger_epochs,
                            imitation_lr=o.dagger_lr, dagger_seed=1000)
        student, hist = distill_planner(SimPlanner.from_prior(puffer, horizon=o.horizon, seed=1000), cfg,
                                        width=ARENA['width'], height=ARENA['height'], num_food=ARENA['num_food'],
                                        max_snake_length=SnakeArena.game_settings['max_snake_length'])
        save_file(student.state_dict(), path)
        taught['dagger'] = dict(settings=asdict(cfg), seconds=time.perf_counter() - t0, history=hist.to_dict('records'))
    student.eval()
    seeds = tuple(int(x) for x in o.dagger_validation.split(','))
    v = taught.step('validation', lambda: lead_check(student, {'PufferSnake': puffer}, 'snake', seeds=seeds, games=o.games))
    print(f"student validation at seeds {seeds}: " + '; '.join(f"{f} {l['wins']}-{l['losses']} p {l['p']:.3g}" for f, l in v['leads'].items()), flush=True)
    s = check('student', student, {'PufferSnake': puffer}, taught)
    rec['student'] = dict(s, moves_per_s=moves_per_s(s['checks']), distillation=taught['dagger'],
                          validation=dict(seeds=list(seeds), checks=v['checks'], leads=v['leads']))
    path = Path(o.out or measured_dir()/'climb.json')
    write_figures(path, dict(planner=rec | dict(machine=machine(), settings=asdict(o))))
    print(f"wrote planner into {path}")

if __name__ == '__main__': main()
