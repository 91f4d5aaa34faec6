"""Clone-versus-teacher score ratio: PufferLib's snake is recorded, cloned (and DAgger-ed per the preset) and both
are evaluated in the arena with `genome_lab.evaluation.evaluate` (greedy, first episode of every snake).

    python bench/cloning.py                      # the `full` preset on PufferLib's training map (minutes)
    python bench/cloning.py --preset tiny --width 96 --height 64 --snakes 32 --food 400 --steps 200 --seeds 0

Prints mean, std and n of both scores, their ratio, and the costs; figures are taken with one torch thread.
"""
import argparse, json, sys, tempfile, time
from dataclasses import replace, asdict
import numpy as np
import torch
from genome_lab.cloning import CLONE_PRESETS, clone, compare_scores
from genome_lab.policies import load_pufferlib_policy
from genome_lab.sessions import load_sessions, record_bot_sessions


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--preset', default='full', choices=sorted(CLONE_PRESETS))
    p.add_argument('--width', type=int, default=640); p.add_argument('--height', type=int, default=360)
    p.add_argument('--snakes', type=int, default=256); p.add_argument('--food', type=int, default=4096)
    p.add_argument('--steps', type=int, default=2000, help='steps of each recorded teacher session')
    p.add_argument('--seeds', type=int, nargs='+', default=[0], help='evaluation seeds (n = snakes x seeds)')
    p.add_argument('--epochs', type=int, default=None); p.add_argument('--dagger-rounds', type=int, default=None)
    p.add_argument('--max-steps', type=int, default=20_000)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--json', default=None, help='also write the figures to this file')
    p.add_argument('--save', default=None, help="save the clone's parameters to this safetensors file")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    cfg = CLONE_PRESETS[a.preset]
    if a.epochs is not None: cfg = replace(cfg, epochs=a.epochs)
    if a.dagger_rounds is not None: cfg = replace(cfg, dagger_rounds=a.dagger_rounds)
    kw = dict(width=a.width, height=a.height, num_snakes=a.snakes, num_food=a.food)
    teacher = load_pufferlib_policy('snake')
    t0 = time.perf_counter()
    root, droot = tempfile.mkdtemp(), tempfile.mkdtemp()
    ids = record_bot_sessions(root, ['puffer_greedy'], per_style=a.snakes, steps=a.steps, seed=1, progress=False, **kw)
    sessions = load_sessions(root, ids)
    t_rec = time.perf_counter() - t0
    t0 = time.perf_counter()
    student, hist, dag = clone(sessions, cfg, teacher=teacher, dagger_root=droot, progress=False, **kw)
    t_train = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = compare_scores(student, teacher, seeds=a.seeds, max_steps=a.max_steps, **kw)
    t_eval = time.perf_counter() - t0
    print(f"config: {asdict(cfg)}; arena {kw}; {len(sessions)} teacher sessions x {a.steps} steps; "
          f"{len(dag)} DAgger sessions; torch threads {a.threads}")
    print(hist.round(4).to_string(index=False))
    if 'select/score' in hist: print(f"kept: the iterate with the best select/score on seeds {cfg.select_seeds}")
    for who in ('teacher', 'clone'):
        r = scores.loc[who]
        print(f"{who:8s} score {r['mean']:.2f} ± {r['std']:.2f} (n={int(r['n'])}, censored={int(r['censored'])})")
    print(f"ratio clone/teacher: {scores.attrs['ratio']:.3f}")
    print(f"seconds: record {t_rec:.1f}, train {t_train:.1f}, evaluate {t_eval:.1f}")
    if a.save:
        from safetensors.torch import save_file
        save_file({k: v.contiguous() for k, v in student.state_dict().items()}, a.save)
    if a.json:
        out = dict(config=asdict(cfg), arena=kw, seeds=a.seeds, ratio=scores.attrs['ratio'],
                   scores=scores.to_dict(orient='index'), history=hist.to_dict(orient='records'),
                   seconds=dict(record=t_rec, train=t_train, evaluate=t_eval))
        with open(a.json, 'w') as f: json.dump(out, f, indent=1, default=float)
    return 0


if __name__ == '__main__':
    sys.exit(main())
