"""The replicator's bar measured as written: the design's loop against PPO over 3 seeds each, every policy read alike.

The bar (DESIGN's replicator + hypernetwork; the plan's Phase 5: "> 0.5x PPO performance within 10x evaluations"),
read by `replicator_bar` (31_hypernetwork): per replicator seed, its smoothed score at its last reading A against
the mean of the PPO seeds' smoothed scores at A / 10; the mean ratio with a Student-t 95% interval; met, not met or
undecided at 0.5.

Protocol (every setting not named is the default of `ReplicatorConfig` / `PPOConfig`):
- replicator: `ReplicatorConfig()` with seeds 0, 1, 2 (the pretrained full-size decoder, `pretrained_decoder`, kept
  in --run-dir/decoders; 32 genomes, each developed into 2 mirrored policies played by 4 snakes for 2,048 steps a
  generation: 524,288 agent-steps), to --generations, read every `eval_interval` (10) generations and at the start;
- PPO: PuffeRL from PufferLib's initialisation in self-play on the same map (`PPOConfig`, 256 snakes, its learning
  rate annealed over --ppo-total agent-steps), seeds 0, 1, 2, read at 0 and every --ppo-read agent-steps (a tenth of
  the replicator's agent-steps between its readings) up to a tenth of the replicator's last reading;
- one reading for both (`read_policy`): the policy on maps 1-4 of PufferLib's map, greedy and sampled, 64 snakes each,
  each snake's first episode scored by its length at death or at the 5,000-step cap; the score is the mean of the
  greedy and sampled means; every curve smoothed by the trailing mean of its last `BAR_SMOOTHING` (3) readings, a rule
  fixed in the package before any run and written into --out;
- agent-steps counted: every snake-step of training games (replicator) or of PuffeRL's collection (PPO); the readings'
  games count for neither;
- rounds of --round generations: PPO and every seed advance (in --workers processes of one torch thread), each run
  checkpointed in --run-dir (a rerun of the command resumes), then --out is rewritten: the curves, every generation's
  in-loop diagnostics (`diagnostics`), each seed's mixture, the bar on the readings so far, the seconds spent.
Writes --out (nbs/measured/replicator_bar.json). Usage: nice -n 15 python bench/replicator_bar.py --run-dir DIR [--generations 400]
"""
import datetime, json, math, multiprocessing, os, subprocess, sys, time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated
import numpy as np
import torch
from genome_lab.core import atomic_write_json, measured_dir, machine, run_lock, save_state
from kit import parse, read_figures
from genome_lab.evolution.hypernetwork import pretrained_decoder
from genome_lab.evolution.replicator_run import (ReplicatorConfig, train_replicator, checkpoint_meta, read_policy, replicator_bar,
                                       BAR_SMOOTHING, LOOP_FILE)
from genome_lab.rl.training import PPOConfig
from genome_lab.rl.ppo_run import PPORun

DIAGNOSTICS = ('surrogate/r2', 'surrogate/trust', 'replicator/step', 'replicator/kl', 'replicator/mean_shift',
               'policy/distance_ratio', 'charts/fitness_mean', 'charts/fitness_best', 'replicator/entropy')

@dataclass
class Options:
    "The bench's settings."
    seeds: Annotated[int, 'replicator runs (seeds 0, 1, ...)'] = 3
    ppo_seeds: Annotated[int, 'PPO runs (seeds 0, 1, ...)'] = 3
    generations: Annotated[int, 'generations of each replicator run'] = 400
    round: Annotated[int, 'generations per round (every run advances, then --out is written)'] = 20
    ppo_total: Annotated[int, "agent-steps PPO's learning rate is annealed over"] = 100_000_000
    factor: Annotated[float, "the replicator may spend this many times PPO's agent-steps"] = 10.0
    workers: Annotated[int, 'processes a round runs at once (1: one run after another)'] = 3
    max_hours: Annotated[float, 'start no round after this many hours of this call (0: no limit)'] = 0.0
    run_dir: Annotated[str, 'checkpoints of every run and the decoder cache (a rerun resumes them)'] = 'runs/replicator_bar'
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'replicator_bar.json')

REPLICATOR = ReplicatorConfig()   # the design's loop; every seed's settings but `seed` and `generations`
PPO_SETTINGS = {}   # `PPOConfig`'s settings but its schedule, seed and keeping (none: its defaults, PufferLib's training map)

def replicator_config(seed:int, generations:int)->ReplicatorConfig: return replace(REPLICATOR, generations=generations, seed=seed)

def ppo_config(o:Options, seed:int)->PPOConfig:
    return PPOConfig(total_timesteps=o.ppo_total, seed=seed, keep_every=o.ppo_total, checkpoint_every=o.ppo_total, **PPO_SETTINGS)

def per_generation()->int: # agent-steps of one replicator generation
    return 2 * REPLICATOR.population * REPLICATOR.agents_each * REPLICATOR.steps

def ppo_read(o:Options)->int: # PPO's agent-steps between readings: the replicator's between its readings, over the factor
    return max(1, int(REPLICATOR.eval_interval * per_generation() / o.factor))

def ppo_until(o:Options, generations:int)->int: # the PPO agent-steps a replicator reading at `generations` needs
    return math.ceil(generations * per_generation() / o.factor / ppo_read(o)) * ppo_read(o)

def reading_settings()->dict: # one reading for both methods: the replicator's own
    c = REPLICATOR
    return dict(maps=c.eval_maps, snakes=c.eval_snakes, max_steps=c.eval_max_steps, window=BAR_SMOOTHING)

def advance_ppo(o:Options, seed:int, until:int)->list: # the PPO seed's readings, trained (or resumed) to `until` agent-steps
    "Train PPO seed `seed` to the next reading, save, read it (`read_policy`), until `until`; a kill loses no reading it saved."
    d = Path(o.run_dir)/f'ppo{seed}'
    run = PPORun(ppo_config(o, seed), d, resume=(d/'checkpoint.safetensors').exists(), display=None)
    path, r = d/'readings.json', reading_settings()
    curve = json.loads(path.read_text()) if path.exists() else []
    try:
        while True:
            if not curve or curve[-1]['agent_steps'] < run.agent_steps:   # the checkpoint's policy, not read yet
                curve.append(dict(agent_steps=run.agent_steps, **read_policy(run.policy(), r['maps'], r['snakes'], r['max_steps'])))
                atomic_write_json(path, curve)
            nxt = (run.agent_steps // ppo_read(o) + 1) * ppo_read(o)
            if nxt > until: break
            run.train_for(nxt - run.agent_steps); save_state(run.path, 'ppo', run.state_dict())
    finally: run.close()
    return curve

def advance_replicator(o:Options, seed:int, generations:int)->dict: # {'curve', 'history', 'mixture'}
    "Advance replicator seed `seed` to `generations` (`train_replicator`, its checkpoint in --run-dir/seed<seed>)."
    d = Path(o.run_dir)/f'seed{seed}'
    loop = train_replicator(replicator_config(seed, generations), d, resume=(d/LOOP_FILE).exists(),
                            cache_dir=Path(o.run_dir)/'decoders', every_s=600.0, progress=False)
    m = loop.pm.dist
    return dict(curve=loop.curve, history=loop.history,
                mixture=dict(generation=loop.generation, weights=m.w.tolist(), means=m.means.tolist(), vars=m.vars.tolist()))

def diagnostics(histories:dict)->dict: # the in-loop diagnostics of every seed, and what they add up to
    "Per seed, every generation's `DIAGNOSTICS`; over all seeds' generations, the share with the gate open (R^2 > 0), moving (KL > 0), the distance ratio at least 2."
    r4 = lambda v: None if v is None or not math.isfinite(v) else round(float(v), 4)
    series = {s: {k: [r4(h.get(k)) for h in hist] for k in DIAGNOSTICS} for s, hist in histories.items()}
    every = [h for hist in histories.values() for h in hist]
    share = lambda ok: float(np.mean([bool(ok(h)) for h in every])) if every else float('nan')
    ratio = np.array([h['policy/distance_ratio'] for h in every], float)
    return dict(generations=len(every), gate_open_share=share(lambda h: h['surrogate/r2'] > 0),
                trust_above_0_share=share(lambda h: h['surrogate/trust'] > 0), moving_share=share(lambda h: h['replicator/kl'] > 0),
                distance_ratio_at_least_2_share=share(lambda h: h['policy/distance_ratio'] >= 2),
                distance_ratio_min=float(ratio.min()) if len(ratio) else None, distance_ratio_mean=float(ratio.mean()) if len(ratio) else None,
                kl_total={s: float(np.nansum([h['replicator/kl'] for h in hist])) for s, hist in histories.items()},
                seconds_per_generation={s: float(np.median([h['seconds'] for h in hist])) for s, hist in histories.items() if hist},
                series=series)

def one_thread(): torch.set_num_threads(1)   # each worker process

def advance_round(o:Options, pool, generations:int)->tuple: # ({'seed s': PPO readings}, {'seed s': replicator dict})
    "Advance every PPO seed to the agent-steps a reading at `generations` needs and every replicator seed to `generations`."
    call = (lambda f, *a: pool.submit(f, *a)) if pool else (lambda f, *a: _Done(f(*a)))
    ppo = {f'seed {s}': call(advance_ppo, o, s, ppo_until(o, generations)) for s in range(o.ppo_seeds)}
    rep = {f'seed {s}': call(advance_replicator, o, s, generations) for s in range(o.seeds)}
    return {k: f.result() for k, f in ppo.items()}, {k: f.result() for k, f in rep.items()}

class _Done:
    def __init__(self, v): self.v = v
    def result(self): return self.v

def commit()->str: # the code's commit: a frozen copy's COMMIT file (the long run's), else the checkout's HEAD
    frozen = Path(__file__).resolve().parent.parent/'COMMIT'
    if frozen.exists(): return frozen.read_text().strip()
    try: return subprocess.run(['git', 'rev-parse', 'HEAD'], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    except OSError: return ''

def main():
    o = parse(Options, doc=__doc__)
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    res = dict(options=asdict(o), machine=machine(), date=str(datetime.date.today()), commit=commit(),
               replicator_config=asdict(replicator_config(0, o.generations)), ppo_config=asdict(ppo_config(o, 0)),
               agent_steps_per_generation=per_generation(), ppo_read=ppo_read(o), reading=reading_settings(), rounds=[])
    t = time.perf_counter()
    if REPLICATOR.pretrain.pretrain_steps:   # built once, before the workers read it
        pretrained_decoder(REPLICATOR.hypernet, REPLICATOR.pretrain, Path(o.run_dir)/'decoders')
    print(f"decoder ready: {time.perf_counter() - t:.0f} s", flush=True)
    pool = (ProcessPoolExecutor(o.workers, mp_context=multiprocessing.get_context('spawn'), initializer=one_thread)
            if o.workers > 1 else None)
    with run_lock(Path(o.run_dir)/'.lock'):
        ck = [Path(o.run_dir)/f'seed{s}'/LOOP_FILE for s in range(o.seeds)]
        done = min(checkpoint_meta(p)['generation'] if p.exists() else 0 for p in ck)   # a rerun resumes from the rounds done
        if done: res['rounds'] = read_figures(o.out).get('rounds', [])
        start = time.perf_counter()
        for g in range(o.round * (done // o.round + 1), o.generations + o.round, o.round):
            if o.max_hours and time.perf_counter() - start > 3600 * o.max_hours:
                print(f"stopped before generation {g}: --max-hours {o.max_hours:g}", flush=True); break
            g, t0 = min(g, o.generations), time.perf_counter()
            ppo, rep = advance_round(o, pool, g)
            runs = {k: v['curve'] for k, v in rep.items()}
            try: bar = replicator_bar(runs, ppo, factor=o.factor, window=BAR_SMOOTHING, generations=g)   # pending below BAR_GENERATIONS
            except ValueError as e: bar = dict(error=str(e))
            res['rounds'].append(dict(generations=g, seconds=time.perf_counter() - t0, load=os.getloadavg()))
            res.update(generations=g, ppo_curves=ppo, replicator_curves=runs, bar=bar,
                       diagnostics=diagnostics({k: v['history'] for k, v in rep.items()}),
                       mixtures={k: v['mixture'] for k, v in rep.items()})
            atomic_write_json(o.out, res)
            dg = res['diagnostics']
            print(f"generation {g} ({g * per_generation():,} agent-steps; PPO to {ppo_until(o, g):,}): " +
                  ('; '.join(f"{k} {v['score']:.2f} / PPO {v['ppo_score']:.2f} = {v['ratio']:.3f}" for k, v in bar['per_run'].items())
                   + f"; mean {bar['mean']:.3f}, 95% interval {bar['ci95'][0]:.3f}-{bar['ci95'][1]:.3f}: {bar['verdict']}"
                   if 'per_run' in bar else bar['error']) +
                  f" | gate open {dg['gate_open_share']:.3f}, moving {dg['moving_share']:.3f}, distance ratio min {dg['distance_ratio_min']:.2f}"
                  f" | {res['rounds'][-1]['seconds']:.0f} s, per generation {dg['seconds_per_generation']}, load {os.getloadavg()[0]:.1f}", flush=True)
    if pool is not None: pool.shutdown()
    print(f"wrote {o.out}")

if __name__ == '__main__': main()
