"""Seed 001's bar over 3 seeds on this machine: the replicator's score as a fraction of a same-machine PPO curve at a tenth
of its agent-steps (`seed001_bar`), in a protocol that fits about an hour of one shared core (issue 38).

Protocol (every setting not named is the default of `ReplicatorConfig` / `PPOConfig`):
- replicator: `ReplicatorConfig()` (population 32 genomes, each developed twice by mirrored noise, 4 snakes per policy,
  2,048 arena steps per generation: 524,288 agent-steps per generation on PufferLib's 640x360 map with 4,096 food),
  seeds `--seeds`, read every `--eval-interval` generations (`evaluate_best`: the mean genome, greedy, 64 snakes, map
  seed 1, length at death, cap 20,000 steps), to `--generations`;
- PPO: PuffeRL from PufferLib's initialisation in self-play on the same map (`PPOConfig`, 256 snakes), its learning
  rate annealed over `--ppo-total` agent-steps (the 100M of `bench/ppo_curve.py`'s run, so its curve's schedule is that
  run's), kept and read the same way every `--ppo-keep` agent-steps, trained only as far as the replicator's readings
  need (a tenth of their agent-steps);
- the runs advance in rounds of `--round` generations (PPO first, then each seed; or all at once in `--workers`
  processes of one torch thread each), so a kill leaves every seed at the
  same horizon; each round checkpoints every run (a rerun with the same flags resumes) and rewrites --out with
  `seed001_bar`'s verdict on the curves so far. Agent-steps counted: every snake-step of training games (replicator)
  or of PuffeRL's collection (PPO); the readings' games are not counted for either.
After the rounds (or alone, `--modes-only`) `latent_modes` adds the modes of every seed's mixture at its last checkpoint.
Writes --out (nbs/measured/seed001_bar.json). Usage: nice -n 10 python bench/seed001_bar.py [--generations 200] [--round 20]
"""
import datetime, json, math, multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated
import psutil, torch
from genome_lab.core import atomic_write_json, measured_dir, config_parser, config_from_args, machine, run_lock
from genome_lab.hypernetwork import ReplicatorConfig, ReplicatorTrainingLoop, seed001_bar, checkpoint_meta, probe_views
from genome_lab.training import PPOConfig, PPORun
from genome_lab.evaluation import evaluate
sys.path.insert(0, str(Path(__file__).parent))
from hypernetwork import play

@dataclass
class Options:
    "The bench's settings."
    seeds: Annotated[int, 'replicator runs (seeds 0, 1, ...)'] = 3
    generations: Annotated[int, 'generations of each replicator run'] = 200
    round: Annotated[int, 'generations per round (every run advances, then --out is written)'] = 20
    eval_interval: Annotated[int, "generations between readings of a replicator run's mean genome"] = 10
    ppo_total: Annotated[int, "agent-steps PPO's learning rate is annealed over"] = 100_000_000
    ppo_keep: Annotated[int, 'agent-steps between readings of the PPO run'] = 500_000
    factor: Annotated[float, 'the replicator may spend this many times PPO\'s agent-steps'] = 10.0
    backbone: Annotated[str, "the hypernetwork's denoiser ('transformer', the default, or 'mlp')"] = 'transformer'
    max_seconds: Annotated[float, "start no round that would end past this many seconds (0: no limit)"] = 0.0
    workers: Annotated[int, 'processes a round runs at once (PPO and every seed; 1: one after another)'] = 1
    run_dir: Annotated[str, 'checkpoints of every run (a rerun resumes them)'] = 'runs/seed001_bar'
    modes_only: Annotated[bool, "only add the latent modes of the runs' last checkpoints to --out?"] = False
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'seed001_bar.json')

def replicator_config(o:Options, seed:int, generations:int)->ReplicatorConfig:
    c = ReplicatorConfig(generations=generations, eval_interval=o.eval_interval, seed=seed)
    return replace(c, hypernet=replace(c.hypernet, backbone=o.backbone))

def ppo_config(o:Options)->PPOConfig:
    return PPOConfig(total_timesteps=o.ppo_total, keep_every=o.ppo_keep)

def ppo_until(o:Options, agent_steps:int)->int: # the PPO agent-steps a replicator reading at `agent_steps` needs
    return math.ceil(agent_steps / o.factor / o.ppo_keep) * o.ppo_keep

def advance_ppo(o:Options, until:int)->list: # the PPO curve, trained (or resumed) to `until` agent-steps
    d = Path(o.run_dir)/'ppo'
    run = PPORun(ppo_config(o), d, resume=(d/'checkpoint.safetensors').exists(), display=None)
    if run.agent_steps < until: run.run(until=until)
    else: run.close()
    return run.curve

def advance_replicator(o:Options, seed:int, generations:int)->list: # the run's curve, trained (or resumed) to `generations`
    d = Path(o.run_dir)/f'seed{seed}'
    loop = ReplicatorTrainingLoop(replicator_config(o, seed, generations), d, resume=(d/'checkpoint.safetensors').exists())
    loop.run(progress=False)
    return loop.curve

def cpu_seconds()->float: # CPU seconds of this process and its live workers
    me = psutil.Process()
    return sum(sum(p.cpu_times()[:2]) for p in [me, *me.children(recursive=True)])

def one_thread(): torch.set_num_threads(1)   # each worker process, as the sequential bench

def advance_round(o:Options, pool, ppo_steps:int, generations:int)->tuple: # (PPO curve, {'seed s': replicator curve})
    "Advance PPO to `ppo_steps` and every seed to `generations`: in `pool`'s processes at once, or one after another."
    if pool is None:
        return advance_ppo(o, ppo_steps), {f'seed {s}': advance_replicator(o, s, generations) for s in range(o.seeds)}
    ppo = pool.submit(advance_ppo, o, ppo_steps)
    runs = {f'seed {s}': pool.submit(advance_replicator, o, s, generations) for s in range(o.seeds)}
    return ppo.result(), {k: f.result() for k, f in runs.items()}

def latent_modes(loop:ReplicatorTrainingLoop, snakes:int=64, seed:int=202)->dict: # the run's mixture components, each decoded and played
    """The modes of a run's latent distribution (its `GaussianMixture`'s components): weight, mean genome, the decoded
    policy's length at death (`snakes` snakes, map seed `seed`, not the readings' seed) and habits (`play`: adjacent food
    taken, what deaths ran into), and how often two modes' policies choose the same first move on 256 fixed views."""
    d = loop.pm.dist
    params = loop.pm.develop_mean(d.means)
    pols = [loop.pm.hn.policy(params, k) for k in range(len(d.means))]
    views = probe_views()
    with torch.no_grad(): acts = torch.stack([p(views)[0].argmax(-1) for p in pols])
    rows = []
    for k, pol in enumerate(pols):
        s = evaluate(pol, 'snake', seed=seed, max_steps=20_000, progress=False, num_snakes=snakes).stats()['score']
        rows.append(dict(weight=float(d.w[k]), genome=[round(float(v), 3) for v in d.means[k]],
                         distance_to_mean=float((d.means[k] - d.mean()).norm()), score=s['mean'], std=s['std'], n=int(s['n']),
                         play=play(pol, snakes=snakes, steps=1000)))
    return dict(generation=loop.generation, modes=rows, same_move=(acts[:, None] == acts[None]).float().mean(-1).tolist())

def main():
    o = config_from_args(Options, config_parser(Options, description=__doc__.splitlines()[0]).parse_args())
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    per_gen = replicator_config(o, 0, 1).population * 2 * ReplicatorConfig().agents_each * ReplicatorConfig().steps
    res = dict(options=asdict(o), machine=machine(), date=str(datetime.date.today()),
               replicator_config=asdict(replicator_config(o, 0, o.generations)), ppo_config=asdict(ppo_config(o)),
               agent_steps_per_generation=per_gen, rounds=[])
    if o.modes_only:
        res = json.loads(Path(o.out).read_text())
        with run_lock(Path(o.run_dir)/'.lock'): add_modes(o, res)
        return
    pool = (ProcessPoolExecutor(o.workers, mp_context=multiprocessing.get_context('spawn'), initializer=one_thread)
            if o.workers > 1 else None)
    with run_lock(Path(o.run_dir)/'.lock'):
        done = [Path(o.run_dir)/f'seed{s}'/'checkpoint.safetensors' for s in range(o.seeds)]
        done = min(checkpoint_meta(p)['generation'] if p.exists() else 0 for p in done)   # a rerun resumes from the rounds done
        if done and Path(o.out).exists(): res['rounds'] = json.loads(Path(o.out).read_text()).get('rounds', [])
        start = time.perf_counter()
        for g in range(o.round * (done // o.round + 1), o.generations + o.round, o.round):
            if o.max_seconds and res['rounds'] and time.perf_counter() - start + res['rounds'][-1]['seconds'] > o.max_seconds:
                print(f"stopped before generation {g}: --max-seconds {o.max_seconds:g}", flush=True); break
            g = min(g, o.generations); t0, c0 = time.perf_counter(), cpu_seconds()
            ppo, runs = advance_round(o, pool, ppo_until(o, g * per_gen), g)
            bar = seed001_bar(runs, ppo, factor=o.factor)
            res['rounds'].append(dict(generations=g, seconds=time.perf_counter() - t0, cpu_seconds=cpu_seconds() - c0,
                                      load=os.getloadavg(), workers=o.workers))
            res.update(generations=g, ppo_curve=ppo, replicator_curves=runs, bar=bar)
            atomic_write_json(o.out, res)
            print(f"generation {g} ({g * per_gen:,} agent-steps; PPO to {ppo[-1]['agent_steps']:,}): " +
                  '; '.join(f"{k} {v['score']:.2f} / PPO {v['ppo_score']:.2f} = {v['ratio']:.3f}" for k, v in bar['per_run'].items()) +
                  f"; mean {bar['mean']:.3f}, 95% interval {bar['ci95'][0]:.3f}-{bar['ci95'][1]:.3f}: {bar['verdict']} "
                  f"({res['rounds'][-1]['seconds']:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
        if pool is not None: pool.shutdown()
        add_modes(o, res)

def add_modes(o:Options, res:dict): # `latent_modes` of every seed's last checkpoint into --out
    res['latent_modes'] = {}
    for s in range(o.seeds):
        d = Path(o.run_dir)/f'seed{s}'
        loop = ReplicatorTrainingLoop(replicator_config(o, s, checkpoint_meta(d/'checkpoint.safetensors')['generation']), d, resume=True)
        res['latent_modes'][f'seed {s}'] = m = latent_modes(loop)
        print(f"seed {s}, generation {m['generation']}: " + '; '.join(
            f"mode {k} (weight {r['weight']:.2f}): length {r['score']:.2f}, adjacent food {r['play']['adjacent_food']:.2f}, deaths "
            + ', '.join(f"{c} {v:.2f}" for c, v in r['play']['causes'].items()) for k, r in enumerate(m['modes'])), flush=True)
    atomic_write_json(o.out, res)
    print(f"wrote {o.out}")

if __name__ == '__main__': main()
