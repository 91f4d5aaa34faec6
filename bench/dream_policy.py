"""A dream policy's sample efficiency (72_dream_policy, issue 33): PuffeRL pretrains PufferLib's snake model in dreams of
the world model, then trains it in the real arena; the control trains the same initialisation (same seed) in the real
arena only. Sample efficiency is the real agent-steps until the training score (mean length at death, smoothed over
`--window` reports of 128 steps) first reaches a fixed score.

The world model is `bench/dreaming.py`'s (WorldConfig's flags), read back from `--world-work` when a run with the same
settings stored it there, else trained here on the same recorded games (`--styles`, `--per-style`, `--steps`,
`--train-seeds`); the dreams start from those games' spawn frames (`start_frames`). For each seed of `--seeds` the
control runs first (`real_phase` for `--real-steps` on `--num-envs` maps of `--num-snakes` snakes, the season's map
size), all of them before any dream run: the threshold is then fixed from the controls' curves alone (`--threshold`, or
if 0 the controls' mean smoothed score at half the real budget). Then each seed's dream run: `dream_pretrain` for
`--dream-steps` agent-steps in `--dreams` dreams, then `real_phase` from its weights with the same settings. Each
seed's row also gives each arm's first, last and best smoothed score and its mean length at death over the whole
run. Each run is kept in `--work` and read back when a run with the same settings stored it (resume).
Writes the `dream_policy` key of --out (default nbs/measured/dreaming.json), keeping the file's other keys.

    python bench/dream_policy.py --world-work /tmp/dreaming3_work
    python bench/dream_policy.py --seeds 1 --dream-steps 8192 --real-steps 16384 --window 2 --steps 60 --updates 3  # smoke
"""
import datetime, json, sys, tempfile, time
from dataclasses import dataclass, asdict, field
from pathlib import Path
from typing import Annotated
import numpy as np
import pandas as pd
import torch
from genome_lab.core import measured_dir, machine
from genome_lab.imagination.dreaming import WorldConfig, Trajectories, record_trajectories, start_frames
from genome_lab.imagination.dream_policy import dream_pretrain, real_phase, steps_to_score, smoothed_score
from genome_lab.rl.training import PPOConfig, PPOHyper
sys.path.insert(0, str(Path(__file__).parent))
from kit import Memo, parse, write_figures
from dreaming import DreamingOptions, ARENA, ints, world_model   # bench/dreaming.py: its world model, kept in its work

@dataclass
class DreamPolicyOptions:
    "The world model's games, the dream and real phases, the seeds and where the bench writes."
    styles: Annotated[str, 'bot styles (30_sessions) recorded, comma-separated'] = \
        'puffer_greedy,puffer_t1,farmer,survivor,hunter,random'
    per_style: Annotated[int, 'snakes of each style on a map'] = 4
    steps: Annotated[int, 'recorded steps per snake'] = 1000
    train_seeds: Annotated[str, "seeds of the world model's games, comma-separated"] = '1,2'
    world: WorldConfig = field(default_factory=WorldConfig)
    world_work: Annotated[str, "bench/dreaming.py's work folder with the trained world model (else trained here)"] = ''
    seeds: Annotated[str, 'seeds of the runs (each: a control and a dream run), comma-separated'] = '1,2'
    dream_steps: Annotated[int, 'agent-steps of PPO in dreams'] = 500_000
    dreams: Annotated[int, 'dreams stepped at once'] = 64
    dream_max_steps: Annotated[int, 'steps before a dream is truncated'] = 200
    real_steps: Annotated[int, 'agent-steps of PPO in the real arena, each run'] = 2_000_000
    num_envs: Annotated[int, 'real maps'] = 2
    num_snakes: Annotated[int, 'snakes per real map, all driven by the learner'] = 32
    bptt_horizon: Annotated[int, "PuffeRL's segment length"] = 64
    minibatch_size: Annotated[int, "PuffeRL's minibatch"] = 4096
    window: Annotated[int, 'reports the training score is smoothed over'] = 16
    threshold: Annotated[float, "the fixed score (0: the controls' mean smoothed score at half the real budget)"] = 0.0
    work: Annotated[str, 'folder of the runs (resume); default: a temporary folder'] = ''
    out: Annotated[str, 'JSON whose dream_policy key is written'] = str(measured_dir()/'dreaming.json')

def run(o:DreamPolicyOptions, work:Path, cfg:PPOConfig, arm:str, model=None, starts=None)->dict:
    "One run of `arm` ('control' or 'dream') at `cfg.seed`, kept in `work` (resume)."
    key = dict(cfg=asdict(cfg), world=asdict(o.world),
               dream=[o.dream_steps, o.dreams, o.dream_max_steps] if arm == 'dream' else None)
    return Memo(work/f'{arm}-{cfg.seed}.json', key, redo=True).step('run', lambda: _run(o, cfg, arm, model, starts))

def _run(o:DreamPolicyOptions, cfg:PPOConfig, arm:str, model, starts)->dict:
    rec, start = dict(arm=arm, seed=cfg.seed), None
    if arm == 'dream':
        start, dlog, secs = dream_pretrain(model, starts, cfg, o.dream_steps, o.dreams, o.dream_max_steps)
        rec |= dict(dream_steps=o.dream_steps, dream_seconds=secs, dream_reports=dlog.to_dict('records'))
    with tempfile.TemporaryDirectory() as tmp: curve, secs = real_phase(cfg, Path(tmp)/'run', start)
    rec |= dict(real_seconds=secs, curve=curve[['agent_steps', 'score', 'n', 'episode_return']].to_dict('records'))
    print(f"{arm} seed {cfg.seed}: {secs:.0f} s real" + (f", {rec['dream_seconds']:.0f} s dreaming" if start else '') +
          f"; smoothed score first {smoothed_score(curve, o.window).dropna().iloc[0]:.3f}, "
          f"last {smoothed_score(curve, o.window).iloc[-1]:.3f}", flush=True)
    return rec

def main():
    o = parse(DreamPolicyOptions, doc=__doc__)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}", flush=True)
    t0 = time.perf_counter()
    hyper = PPOHyper(bptt_horizon=o.bptt_horizon, minibatch_size=o.minibatch_size)
    cfgs = [PPOConfig(total_timesteps=o.real_steps, num_envs=o.num_envs, num_snakes=o.num_snakes, seed=s, hyper=hyper,
                      **ARENA) for s in ints(o.seeds)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(o.work or tmp); work.mkdir(parents=True, exist_ok=True)
        controls = [run(o, work, c, 'control') for c in cfgs]
        curves = lambda runs: [pd.DataFrame(r['curve']) for r in runs]
        half = lambda c: smoothed_score(c, o.window).bfill()[(c.agent_steps - o.real_steps / 2).abs().idxmin()]
        threshold = o.threshold or float(np.mean([half(c) for c in curves(controls)]))
        print(f"threshold {threshold:.4f} (fixed from the controls before any dream run)", flush=True)
        parts = [record_trajectories(Path(tmp)/f'sessions-{s}', o.styles.split(','), o.per_style, o.steps, s,
                                     **ARENA) for s in ints(o.train_seeds)]
        train = Trajectories.concat(parts)
        wo = DreamingOptions(styles=o.styles, per_style=o.per_style, steps=o.steps, train_seeds=o.train_seeds,
                             world=o.world)
        wwork = Path(o.world_work or work); wwork.mkdir(parents=True, exist_ok=True)
        model, _ = world_model(wo, wwork, train)
        dreams = [run(o, work, c, 'dream', model, start_frames(train)) for c in cfgs]
    rows, mean_score = [], lambda c: float((c.score * c.n).sum() / c.n.sum())   # all the run's deaths
    for c, d in zip(curves(controls), curves(dreams)):
        sc, sd = steps_to_score(c, threshold, o.window), steps_to_score(d, threshold, o.window)
        rows.append(dict(control_steps=sc, dream_steps_to_score=sd, ratio=sc / sd if sc and sd else None,
                         control_first=float(smoothed_score(c, o.window).dropna().iloc[0]),
                         dream_first=float(smoothed_score(d, o.window).dropna().iloc[0]),
                         control_last=float(smoothed_score(c, o.window).iloc[-1]),
                         dream_last=float(smoothed_score(d, o.window).iloc[-1]),
                         control_best=float(smoothed_score(c, o.window).max()),
                         dream_best=float(smoothed_score(d, o.window).max()),
                         control_mean=mean_score(c), dream_mean=mean_score(d)))
    capped = lambda v: o.real_steps if v is None else v   # a run that never reached the threshold: its whole budget
    mean_c = np.mean([capped(r['control_steps']) for r in rows])
    mean_d = np.mean([capped(r['dream_steps_to_score']) for r in rows])
    for s, r in zip(ints(o.seeds), rows): print(f"seed {s}: {r}")
    rec = dict(threshold=threshold, threshold_rule='given' if o.threshold else
               "the controls' mean smoothed score at half the real budget, fixed before any dream run",
               seeds=ints(o.seeds), per_seed=rows, mean_control_steps=float(mean_c), mean_dream_steps=float(mean_d),
               ratio=float(mean_c / mean_d),
               censored=sum(r[k] is None for r in rows for k in ('control_steps', 'dream_steps_to_score')),
               dream_cost=dict(dream_steps=o.dream_steps, seconds=[d['dream_seconds'] for d in dreams]),
               real_seconds=dict(control=[c['real_seconds'] for c in controls],
                                 dream=[d['real_seconds'] for d in dreams]),
               runs=controls + dreams,
               settings={k: v for k, v in asdict(o).items() if k not in ('work', 'out', 'world_work')},
               arena=ARENA, seconds=time.perf_counter() - t0, machine=machine(), date=str(datetime.date.today()))
    write_figures(o.out, dict(dream_policy=rec))
    print(f"ratio (control / dream, mean real agent-steps to {threshold:.4f}): {rec['ratio']:.4f}; wrote {o.out}")

if __name__ == '__main__': main()
