"""The replicator's bar measured as written: the design's loop against PPO over 3 seeds each, every policy read alike.

The bar (DESIGN's replicator + hypernetwork; the plan's Phase 5: "> 0.5x PPO performance within 10x evaluations"),
read by `replicator_bar` (41_hypernetwork): per replicator seed, its smoothed score at its last reading A against
the mean of the PPO seeds' smoothed scores at A / 10; the mean ratio with a Student-t 95% interval; met, not met or
undecided at 0.5.

Protocol (every setting not named is the default of `ReplicatorConfig` / `PPOConfig`), for one of two comparisons
(issue 55), each in its own folder of --run-dir and its own key of `comparisons` in --out:
- --comparison scratch: the replicator with an untrained decoder against PuffeRL from PufferLib's initialisation in
  self-play on PufferLib's map (`PPOConfig`, 256 snakes); --comparison pretrained: the replicator with the decoder
  pretrained on PufferSnake's lines (`pretrained_decoder`, kept in --run-dir/decoders) against PuffeRL fine-tuning
  PufferSnake with the ppo producer's recipe (`finetune_recipe`, self-play on the season's maps);
- replicator: seeds 0, 1, 2 at --size (GENOMESxSNAKESxSTEPS: each genome developed into 2 mirrored policies played by
  SNAKES snakes for STEPS steps a generation; bench/replicator_sizes.py chose 16x2x512 for 2 cores, the design's
  32x4x2048 is a GPU preset), to --generations, read every --read-every generations and at the start;
- PPO: seeds 0, 1, 2, its learning rate annealed over --ppo-total agent-steps, read at 0 and every --ppo-read
  agent-steps (a tenth of the replicator's agent-steps between its readings) up to a tenth of the replicator's last;
- one reading for both (`read_policy` at --reading MAPSxSNAKESxMAX_STEPS): the policy on maps 1.. of PufferLib's map,
  greedy and sampled, each snake's first episode scored by its length at death or at the step cap; the score is the
  mean of the greedy and sampled means; every curve smoothed by the trailing mean of its last `BAR_SMOOTHING` (3)
  readings, a rule fixed in the package before any run and written into --out;
- agent-steps counted: every snake-step of training games (replicator) or of PuffeRL's collection (PPO); the readings'
  games count for neither;
- rounds of --round generations: PPO and every seed advance (in --workers processes of one torch thread), each run
  checkpointed (a rerun of the command resumes), then the comparison's key of --out is rewritten: the curves, every
  generation's in-loop diagnostics (`diagnostics`), each seed's mixture, the bar on the readings so far ("pending"
  below `BAR_GENERATIONS`), the seconds spent.
Writes `comparisons.<comparison>` of --out (nbs/measured/replicator_bar.json; its other keys kept). Usage:
    nice -n 15 python bench/replicator_bar.py --comparison scratch --generations 400 --max-hours 1.9
"""
import datetime, json, math, multiprocessing, os, subprocess, sys, time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated
import numpy as np
import torch
from genome_lab.core import atomic_write_json, measured_dir, machine, run_lock, save_state
from kit import parse, read_figures, write_figures
from genome_lab.evolution.hypernetwork import pretrained_decoder, PretrainConfig
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.evolution.replicator_run import (ReplicatorConfig, train_replicator, checkpoint_meta, read_policy, replicator_bar,
                                       BAR_SMOOTHING, LOOP_FILE)
from genome_lab.rl.training import PPOConfig, finetune_recipe
from genome_lab.rl.ppo_run import PPORun

DIAGNOSTICS = ('surrogate/r2', 'surrogate/trust', 'replicator/step', 'replicator/kl', 'replicator/mean_shift',
               'policy/distance_ratio', 'charts/fitness_mean', 'charts/fitness_best', 'replicator/entropy')

COMPARISONS = ('scratch', 'pretrained')

@dataclass
class Options:
    "The bench's settings."
    comparison: Annotated[str, "'scratch': an untrained decoder against PPO from PufferLib's initialisation; 'pretrained': the decoder pretrained on PufferSnake's lines against PPO fine-tuning PufferSnake (the ppo producer's recipe)"] = 'pretrained'
    size: Annotated[str, "GENOMESxSNAKESxSTEPS of a replicator generation (bench/replicator_sizes.py; the design's 32x4x2048 is a GPU preset)"] = '16x2x512'
    reading: Annotated[str, 'MAPSxSNAKESxMAX_STEPS of every reading, both methods alike'] = '4x64x5000'
    read_every: Annotated[int, 'replicator generations between readings (PPO: the matching tenth of the agent-steps)'] = 20
    seeds: Annotated[int, 'replicator runs (seeds 0, 1, ...)'] = 3
    ppo_seeds: Annotated[int, 'PPO runs (seeds 0, 1, ...)'] = 3
    generations: Annotated[int, 'generations of each replicator run'] = 400
    round: Annotated[int, 'generations per round (every run advances, then --out is written)'] = 20
    ppo_total: Annotated[int, "agent-steps PPO's learning rate is annealed over"] = 100_000_000
    factor: Annotated[float, "the replicator may spend this many times PPO's agent-steps"] = 10.0
    workers: Annotated[int, 'processes a round runs at once (1: one run after another)'] = 3
    max_hours: Annotated[float, 'start no round after this many hours of this call (0: no limit)'] = 0.0
    run_dir: Annotated[str, "checkpoints of every run and the decoder cache, in a folder per comparison (a rerun resumes them)"] = 'runs/replicator_bar'
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'replicator_bar.json')

REPLICATOR = ReplicatorConfig()   # the design's loop; every setting but the size, the reading, the pretraining, `seed` and `generations`
PPO_SETTINGS = {}   # `PPOConfig`'s settings over each comparison's (none: PufferLib's training map from scratch, the recipe's maps fine-tuning)

def numbers(text:str)->tuple: return tuple(int(x) for x in text.split('x'))   # '16x2x512' -> (16, 2, 512)

def replicator_config(o:Options, seed:int, generations:int)->ReplicatorConfig:
    "The comparison's replicator: `REPLICATOR` at --size and --reading, its decoder pretrained ('pretrained') or not ('scratch')."
    (genomes, snakes, steps), (maps, eval_snakes, max_steps) = numbers(o.size), numbers(o.reading)
    pretrain = REPLICATOR.pretrain if o.comparison == 'pretrained' else PretrainConfig(pretrain_steps=0)
    return replace(REPLICATOR, population=genomes, agents_each=snakes, steps=steps, eval_interval=o.read_every, eval_maps=maps,
                   eval_snakes=eval_snakes, eval_max_steps=max_steps, pretrain=pretrain, generations=generations, seed=seed)

def ppo_config(o:Options, seed:int)->PPOConfig:
    "The comparison's PPO: from PufferLib's initialisation ('scratch'), or fine-tuning PufferSnake with the ppo producer's recipe ('pretrained')."
    keep = dict(total_timesteps=o.ppo_total, seed=seed, keep_every=o.ppo_total, checkpoint_every=o.ppo_total)
    if o.comparison == 'scratch': return PPOConfig(**keep, **PPO_SETTINGS)
    return replace(finetune_recipe('PufferSnake', device='cpu', mode='self-play', **keep), **PPO_SETTINGS)

def per_generation(o:Options)->int: # agent-steps of one replicator generation
    c = replicator_config(o, 0, 0)
    return 2 * c.population * c.agents_each * c.steps

def ppo_read(o:Options)->int: # PPO's agent-steps between readings: the replicator's between its readings, over the factor
    return max(1, int(o.read_every * per_generation(o) / o.factor))

def ppo_until(o:Options, generations:int)->int: # the PPO agent-steps a replicator reading at `generations` needs
    return math.ceil(generations * per_generation(o) / o.factor / ppo_read(o)) * ppo_read(o)

def reading_settings(o:Options)->dict: # one reading for both methods: the replicator's own
    c = replicator_config(o, 0, 0)
    return dict(maps=c.eval_maps, snakes=c.eval_snakes, max_steps=c.eval_max_steps, window=BAR_SMOOTHING)

def run_dir(o:Options)->Path: return Path(o.run_dir)/o.comparison   # each comparison's runs and PPO registry

def advance_ppo(o:Options, seed:int, until:int)->list: # the PPO seed's readings, trained (or resumed) to `until` agent-steps
    "Train PPO seed `seed` to the next reading, save, read it (`read_policy`), until `until`; a kill loses no reading it saved."
    d, cfg = run_dir(o)/f'ppo{seed}', ppo_config(o, seed)
    reg = None
    if cfg.start:   # the fine-tune's start genome, from a registry of the founders beside the runs
        reg = Registry(run_dir(o)/'registry'); seed_founders(reg)
    run = PPORun(cfg, d, reg, resume=(d/'checkpoint.safetensors').exists(), display=None)
    path, r = d/'readings.json', reading_settings(o)
    curve = json.loads(path.read_text()) if path.exists() else []
    try:
        while True:
            if not curve or curve[-1]['agent_steps'] < run.agent_steps:   # the checkpoint's policy, not read yet
                curve.append(dict(agent_steps=run.agent_steps, **read_policy(run.policy(), r['maps'], r['snakes'], r['max_steps'])))
                atomic_write_json(path, curve)
            nxt = (run.agent_steps // ppo_read(o) + 1) * ppo_read(o)
            if nxt > until: break
            run.train_for(nxt - run.agent_steps); save_state(run.path, 'ppo', run.state_dict())
    finally:
        run.close()
        if reg is not None: reg.close()
    return curve

def advance_replicator(o:Options, seed:int, generations:int)->dict: # {'curve', 'history', 'mixture'}
    "Advance replicator seed `seed` to `generations` (`train_replicator`, its checkpoint in --run-dir/seed<seed>)."
    d = run_dir(o)/f'seed{seed}'
    loop = train_replicator(replicator_config(o, seed, generations), d, resume=(d/LOOP_FILE).exists(),
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
    if o.comparison not in COMPARISONS: raise SystemExit(f"--comparison must be one of {', '.join(COMPARISONS)}, not {o.comparison!r}")
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    res = dict(options=asdict(o), machine=machine(), date=str(datetime.date.today()), commit=commit(),
               replicator_config=asdict(rc := replicator_config(o, 0, o.generations)), ppo_config=asdict(ppo_config(o, 0)),
               agent_steps_per_generation=per_generation(o), ppo_read=ppo_read(o), reading=reading_settings(o), rounds=[])
    t = time.perf_counter()
    if rc.pretrain.pretrain_steps:   # built once, before the workers read it
        pretrained_decoder(rc.hypernet, rc.pretrain, Path(o.run_dir)/'decoders')
    print(f"decoder ready: {time.perf_counter() - t:.0f} s", flush=True)
    pool = (ProcessPoolExecutor(o.workers, mp_context=multiprocessing.get_context('spawn'), initializer=one_thread)
            if o.workers > 1 else None)
    with run_lock(run_dir(o)/'.lock'):
        ck = [run_dir(o)/f'seed{s}'/LOOP_FILE for s in range(o.seeds)]
        done = min(checkpoint_meta(p)['generation'] if p.exists() else 0 for p in ck)   # a rerun resumes from the rounds done
        kept = read_figures(o.out).get('comparisons', {})
        if done: res['rounds'] = kept.get(o.comparison, {}).get('rounds', [])
        start = time.perf_counter()
        for g in range(o.round * (done // o.round + 1), o.generations + o.round, o.round):
            if o.max_hours and time.perf_counter() - start > 3600 * o.max_hours:
                print(f"stopped before generation {g}: --max-hours {o.max_hours:g}", flush=True); break
            g, t0 = min(g, o.generations), time.perf_counter()
            ppo, rep = advance_round(o, pool, g)
            runs = {k: v['curve'] for k, v in rep.items()}
            if not ppo: bar = dict(error='no PPO runs (--ppo-seeds 0): this run measures the loop over its generations, not the bar')
            else:
                try: bar = replicator_bar(runs, ppo, factor=o.factor, window=BAR_SMOOTHING, generations=g)   # pending below BAR_GENERATIONS
                except ValueError as e: bar = dict(error=str(e))
            res['rounds'].append(dict(generations=g, seconds=time.perf_counter() - t0, load=os.getloadavg()))
            res.update(generations=g, ppo_curves=ppo, replicator_curves=runs, bar=bar,
                       diagnostics=diagnostics({k: v['history'] for k, v in rep.items()}),
                       mixtures={k: v['mixture'] for k, v in rep.items()})
            write_figures(o.out, dict(comparisons=read_figures(o.out).get('comparisons', {}) | {o.comparison: res}))
            dg = res['diagnostics']
            print(f"generation {g} ({g * per_generation(o):,} agent-steps; PPO to {ppo_until(o, g):,}): " +
                  ('; '.join(f"{k} {v['score']:.2f} / PPO {v['ppo_score']:.2f} = {v['ratio']:.3f}" for k, v in bar['per_run'].items())
                   + f"; mean {bar['mean']:.3f}, 95% interval {bar['ci95'][0]:.3f}-{bar['ci95'][1]:.3f}: {bar['verdict']}"
                   if 'per_run' in bar else bar['error']) +
                  f" | gate open {dg['gate_open_share']:.3f}, moving {dg['moving_share']:.3f}, distance ratio min {dg['distance_ratio_min']:.2f}"
                  f" | {res['rounds'][-1]['seconds']:.0f} s, per generation {dg['seconds_per_generation']}, load {os.getloadavg()[0]:.1f}", flush=True)
    if pool is not None: pool.shutdown()
    print(f"wrote {o.out}")

if __name__ == '__main__': main()
