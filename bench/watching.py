"""Learning from watching (22_watching, issue 32): games of `--genomes` are filmed as H.264 clips (one per snake, its
head marked), `--label-frac` of the clips keep their true actions, an inverse dynamics model (IDM) is trained on those
and scored on every other clip against the true actions (per genome, with a confusion matrix and failure modes). Then
the first genome's unlabelled clips are pseudo-labelled by the IDM and cloned (21_cloning's `train_clone`); the
baseline is a clone of the true actions of the same snakes' games, trained with the same settings in the same run, and
both are scored on `--eval-seeds` maps they never saw (`compare_scores`, greedy: first episodes from reset and every
death in the `--window` of continuous play, as bench/cloning.py).

    python bench/watching.py --json nbs/measured/watching.json
    python bench/watching.py --seeds 1 --steps 100 --eval-seeds 10 --clone-epochs 1   # a smoke run

Prints the figures and the costs; one torch thread by default.
"""
import argparse, os, shlex, sys, tempfile, time
from dataclasses import asdict
from datetime import datetime, timezone
import numpy as np
import pandas as pd
import torch
from genome_lab.core import atomic_write_json
from genome_lab.arenas import SNAKE_CELLS
from genome_lab.cloning import CloneConfig, session_sequences, compare_scores
from genome_lab.sessions import load_sessions
from genome_lab.watching import (ClipConfig, film, decode_clip, clip_dataset, train_idm,
                                 video_to_trajectory, failure_modes, clone_sequences, FAILURE_MODES)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--genomes', nargs='+', default=['puffer_greedy', 'farmer'],
                   help='bot styles (20_sessions) filmed; the first is cloned')
    p.add_argument('--seeds', type=int, nargs='+', default=list(range(1, 9)),
                   help='one filmed game per genome and seed')
    p.add_argument('--steps', type=int, default=400, help='actions per filmed game')
    p.add_argument('--snakes', type=int, default=8); p.add_argument('--food', type=int, default=60)
    p.add_argument('--width', type=int, default=48); p.add_argument('--height', type=int, default=32)
    p.add_argument('--crf', type=int, default=23, help="libx264's constant rate factor of the clips")
    p.add_argument('--label-frac', type=float, default=0.1, help='fraction of the clips that keep their true actions')
    p.add_argument('--idm-epochs', type=int, default=10)
    p.add_argument('--clone-epochs', type=int, default=10)
    p.add_argument('--eval-seeds', type=int, nargs='+', default=list(range(100, 116)),
                   help='evaluation maps, never filmed')
    p.add_argument('--max-steps', type=int, default=20_000, help='step cap of the first-episode evaluation')
    p.add_argument('--window', type=int, nargs=2, default=[1000, 3000], metavar=('START', 'STOP'),
                   help='continuous play counts every death at steps START < t <= STOP (0 0: first episodes only)')
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--json', default=None, help='also write the figures to this file (nbs/measured/watching.json)')
    a = p.parse_args(argv)
    if set(a.eval_seeds) & set(a.seeds): p.error(f"--eval-seeds {sorted(set(a.eval_seeds) & set(a.seeds))} were filmed")
    if not 0 < a.label_frac <= 1: p.error("--label-frac must lie in (0, 1]")
    return a


def main(argv=None):
    a = parse(argv)
    torch.set_num_threads(a.threads)
    root = tempfile.mkdtemp()
    cfg = ClipConfig(width=a.width, height=a.height, num_snakes=a.snakes, num_food=a.food, steps=a.steps, crf=a.crf)
    t0 = time.perf_counter()
    index = film(root, a.genomes, a.seeds, cfg, a.label_frac)
    t_film = time.perf_counter() - t0
    truth = {s.id: s for s in load_sessions(f'{root}/sessions')}
    lab, held = index[index.labelled], index[~index.labelled]
    t0 = time.perf_counter()
    idm, hist = train_idm(clip_dataset(root, lab, augment=True), epochs=a.idm_epochs)
    t_idm = time.perf_counter() - t0
    rows, seqs = [], {}
    for r in held.itertuples():
        tj = video_to_trajectory(decode_clip(f'{root}/{r.path}'), idm, r.scale)
        s = truth[r.session]
        view_ok = (tj['obs'] == s.obs().reshape(-1, SNAKE_CELLS)).all(1)
        rows.append(pd.DataFrame(dict(genome=r.genome, clip=r.clip, true=s.frame.action.to_numpy(), idm=tj['action'],
                                      mode=failure_modes(s, view_ok), view_ok=view_ok)))
        seqs[r.clip] = (torch.from_numpy(tj['obs']), torch.from_numpy(tj['action']), r.clip)
    steps = pd.concat(rows, ignore_index=True); steps['right'] = steps.true == steps.idm
    acc = steps.groupby('genome').right.mean()
    conf = pd.crosstab(steps.true, steps.idm)
    modes = steps.groupby('mode').right.agg(['size', 'mean']).reindex(FAILURE_MODES).fillna(0)
    print(f"clips {len(index)} ({len(lab)} labelled, {len(lab) / len(index):.3f}); {cfg}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(hist.round(4).to_string(index=False))
    print(f"IDM held-out accuracy: overall {steps.right.mean():.4f} (n={len(steps)}); "
          f"per genome {acc.round(4).to_dict()}")
    print(f"views read from the video equal to the true observations: {steps.view_ok.mean():.4f} of steps")
    print("confusion (rows true, columns IDM):\n" + conf.to_string())
    print("failure modes:\n" + modes.rename(columns={'mean': 'accuracy'}).to_string())
    first = held[held.genome == a.genomes[0]]
    ccfg = CloneConfig(epochs=a.clone_epochs)
    t0 = time.perf_counter()
    video_clone, vh = clone_sequences([seqs[c] for c in first['clip']], ccfg)
    true_clone, th = clone_sequences(session_sequences([truth[s] for s in first.session]), ccfg)
    t_clone = time.perf_counter() - t0
    kw = dict(width=a.width, height=a.height, num_snakes=a.snakes, num_food=a.food)
    t0 = time.perf_counter()
    scores = compare_scores(video_clone, true_clone, seeds=a.eval_seeds, max_steps=a.max_steps,
                            window=tuple(a.window) if a.window[1] else None, **kw)
    t_eval = time.perf_counter() - t0
    scores = scores.rename(index={'teacher': 'true-action clone', 'clone': 'video clone'})
    for (protocol, who), r in scores.iterrows():
        print(f"{protocol} {who}: score {r['mean']:.2f} ± {r['std']:.2f} (n={int(r['n'])}, "
              f"censored={int(r['censored'])}, s.e. between maps {r['map_sem']:.2f})")
    for protocol, r in scores.attrs['ratio'].items():
        print(f"video clone / true-action clone ({protocol}): {r:.3f} "
              f"(s.e. between maps {scores.attrs['ratio_sem'][protocol]:.3f})")
    ratio, ratio_sem = scores.attrs['ratio']['first episodes'], scores.attrs['ratio_sem']['first episodes']
    print(f"clone validation accuracy (last epoch): video {vh['val/charts/accuracy'].iloc[-1]:.4f}, "
          f"true {th['val/charts/accuracy'].iloc[-1]:.4f}")
    secs = dict(film=t_film, idm=t_idm, clones=t_clone, evaluate=t_eval)
    print('seconds: ' + ', '.join(f'{k} {v:.1f}' for k, v in secs.items()))
    if a.json:
        out = dict(command=shlex.join(['python', 'bench/watching.py', *(sys.argv[1:] if argv is None else argv)]),
                   finished=datetime.now(timezone.utc).isoformat(timespec='seconds'), torch_threads=a.threads,
                   load_average=os.getloadavg()[0], clips=asdict(cfg), genomes=a.genomes, seeds=a.seeds,
                   n_clips=len(index), n_labelled=len(lab),
                   idm_accuracy={'snake': float(steps.right.mean())}, idm_accuracy_per_genome=acc.to_dict(),
                   idm_n=len(steps), labelled_fraction=len(lab) / len(index), view_accuracy=float(steps.view_ok.mean()),
                   confusion=conf.to_dict(),
                   failure_modes=modes.rename(columns={'mean': 'accuracy'}).to_dict(orient='index'),
                   idm_history=hist.to_dict(orient='records'), clone_config=asdict(ccfg), eval_seeds=a.eval_seeds,
                   max_steps=a.max_steps, window=a.window, video_clone_ratio=ratio, video_clone_ratio_sem=ratio_sem,
                   ratios=scores.attrs['ratio'], ratios_sem=scores.attrs['ratio_sem'],
                   baseline='clone of the true actions of the same clips\' snakes (same games, same CloneConfig)',
                   scores=[dict(protocol=p, policy=w, **r) for (p, w), r in scores.to_dict(orient='index').items()],
                   seconds=secs)
        atomic_write_json(a.json, out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
