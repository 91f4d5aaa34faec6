"""Clone-versus-teacher score ratio on maps the clone never trained on: PufferLib's snake is recorded on the
`--record-seeds` maps, cloned (and DAgger-ed per the preset, with the iterate selection on the preset's seeds), and
teacher and clone are evaluated in the arena on the `--eval-seeds` maps, which must differ from every recording,
DAgger and selection seed: first episodes from reset (`evaluate`, greedy) and every death in the `--window` of
continuous play (`evaluate_continuous`). The teacher is the baseline, measured in the same run on the same maps.

    python bench/cloning.py --json nbs/measured/cloning.json   # the `full` preset on PufferLib's training map (an hour or more)
    python bench/cloning.py --preset tiny --width 96 --height 64 --snakes 32 --food 400 --steps 200 --eval-seeds 10 11 --window 100 300

Prints mean, std, n and the standard error between maps of both scores in both protocols, the ratios with their
standard error between maps (teacher and clone play the same maps), and the costs; one torch thread by default.
"""
import os, shlex, sys, tempfile, time
from dataclasses import asdict, dataclass, field, replace
from typing import Annotated
from datetime import datetime, timezone
import torch
from genome_lab.core import atomic_write_json
from genome_lab.players.cloning import CLONE_PRESETS, clone, compare_scores, dagger_seeds, training_seeds
from genome_lab.arenas.policies import load_pufferlib_policy
from genome_lab.players.sessions import load_sessions, record_bot_sessions
from kit import parse


several = lambda *v: field(default_factory=lambda: list(v))   # a list field's default

@dataclass
class CloningBench:
    "The cloning bench's settings."
    preset: Annotated[str, f"the clone's preset: one of {', '.join(sorted(CLONE_PRESETS))}"] = 'full'
    width: Annotated[int, 'map width'] = 640
    height: Annotated[int, 'map height'] = 360
    snakes: Annotated[int, 'snakes per map'] = 256
    food: Annotated[int, 'food per map'] = 4096
    record_seeds: Annotated[list[int], 'maps the teacher is recorded on (all its snakes)'] = several(1, 2)
    steps: Annotated[int, 'steps of each recorded teacher session'] = 1000
    eval_seeds: Annotated[list[int], 'evaluation maps, never trained on'] = several(*range(10, 18))
    window: Annotated[list[int], 'START STOP: continuous play counts every death at steps START < t <= STOP'] = several(3000, 9000)
    epochs: Annotated[int, "epochs (-1: the preset's)"] = -1
    dagger_rounds: Annotated[int, "DAgger rounds (-1: the preset's)"] = -1
    max_steps: Annotated[int, 'step cap of the first-episode evaluation'] = 20_000
    threads: Annotated[int, 'torch threads'] = 1
    json: Annotated[str, 'also write the figures to this file (nbs/measured/cloning.json)'] = ''
    save: Annotated[str, "save the clone's parameters to this safetensors file"] = ''

    def config(self): # the preset with --epochs and --dagger-rounds where given
        cfg = CLONE_PRESETS[self.preset]
        if self.epochs >= 0: cfg = replace(cfg, epochs=self.epochs)
        return replace(cfg, dagger_rounds=self.dagger_rounds) if self.dagger_rounds >= 0 else cfg

    def __post_init__(self):
        if self.preset not in CLONE_PRESETS: raise ValueError(f"--preset {self.preset!r}: choose one of {sorted(CLONE_PRESETS)}")
        if len(self.window) != 2: raise ValueError(f"--window takes START STOP, not {self.window}")
        if seen := training_seeds(cfg := self.config(), self.record_seeds) & set(self.eval_seeds):
            raise ValueError(f"evaluation seeds {sorted(seen)} are maps the clone trains on (recording {self.record_seeds}, "
                             f"DAgger {dagger_seeds(cfg)}, selection {list(cfg.select_seeds)}): choose other --eval-seeds")
        if len(set(self.eval_seeds)) < len(self.eval_seeds) or len(set(self.record_seeds)) < len(self.record_seeds):
            raise ValueError("--eval-seeds and --record-seeds must not repeat a seed (a seed is a map)")


def record(a, kw)->list: # teacher sessions of every --record-seeds map
    root = tempfile.mkdtemp()
    ids = [i for s in a.record_seeds
           for i in record_bot_sessions(root, ['puffer_greedy'], per_style=a.snakes, steps=a.steps, seed=s, progress=False, **kw)]
    return load_sessions(root, ids)


def report(scores)->list: # printed lines
    lines = []
    for (protocol, who), r in scores.iterrows():
        lines.append(f"{protocol:15s} {who:8s} score {r['mean']:.2f} ± {r['std']:.2f} (n={int(r['n'])}, censored={int(r['censored'])}, "
                     f"{len(r['per_map'])} maps, s.e. between maps {r['map_sem']:.2f}; per map {[round(x, 2) for x in r['per_map']]})")
    for protocol, ratio in scores.attrs['ratio'].items():
        lines.append(f"ratio clone/teacher ({protocol}): {ratio:.3f} (per-map ratios: s.e. between maps {scores.attrs['ratio_sem'][protocol]:.3f})")
    return lines


def main(argv=None):
    a = parse(CloningBench, doc=__doc__, argv=argv); cfg = a.config()
    torch.set_num_threads(a.threads)
    kw = dict(width=a.width, height=a.height, num_snakes=a.snakes, num_food=a.food)
    teacher = load_pufferlib_policy('snake')
    t0 = time.perf_counter(); sessions = record(a, kw); t_rec = time.perf_counter() - t0
    t0 = time.perf_counter()
    student, hist, dag = clone(sessions, cfg, teacher=teacher, dagger_root=tempfile.mkdtemp(), progress=False, **kw)
    t_train = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = compare_scores(student, teacher, seeds=a.eval_seeds, max_steps=a.max_steps, window=tuple(a.window), **kw)
    t_eval = time.perf_counter() - t0
    print(f"config: {asdict(cfg)}; arena {kw}; torch threads {a.threads}; load average {os.getloadavg()[0]:.1f}")
    print(f"training maps: recording {a.record_seeds} ({len(sessions)} teacher sessions x {a.steps} steps), DAgger "
          f"{dagger_seeds(cfg)} ({len(dag)} sessions), selection {list(cfg.select_seeds)}; evaluation maps {a.eval_seeds}")
    print(hist.round(4).to_string(index=False))
    if 'select/score' in hist: print(f"kept: the iterate with the best select/score on seeds {list(cfg.select_seeds)}")
    print('\n'.join(report(scores)))
    print(f"seconds: record {t_rec:.1f}, train {t_train:.1f}, evaluate {t_eval:.1f}")
    if a.save:
        from safetensors.torch import save_file
        save_file({k: v.contiguous() for k, v in student.state_dict().items()}, a.save)
    if a.json:
        out = dict(command=shlex.join(['python', 'bench/cloning.py', *(sys.argv[1:] if argv is None else argv)]),
                   finished=datetime.now(timezone.utc).isoformat(timespec='seconds'), torch_threads=a.threads,
                   load_average=os.getloadavg()[0], config=asdict(cfg), arena=kw, record_seeds=a.record_seeds, record_steps=a.steps,
                   sessions=len(sessions), dagger_seeds=dagger_seeds(cfg), select_seeds=list(cfg.select_seeds),
                   eval_seeds=a.eval_seeds, window=a.window, max_steps=a.max_steps,
                   scores=[dict(protocol=p, policy=w, **r) for (p, w), r in scores.to_dict(orient='index').items()],
                   ratio=scores.attrs['ratio'], ratio_sem=scores.attrs['ratio_sem'], history=hist.to_dict(orient='records'),
                   seconds=dict(record=t_rec, train=t_train, evaluate=t_eval))
        atomic_write_json(a.json, out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
