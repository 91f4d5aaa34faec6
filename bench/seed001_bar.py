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
- the runs advance in rounds of `--round` generations (PPO first, then each seed), so a kill leaves every seed at the
  same horizon; each round checkpoints every run (a rerun with the same flags resumes) and rewrites --out with
  `seed001_bar`'s verdict on the curves so far. Agent-steps counted: every snake-step of training games (replicator)
  or of PuffeRL's collection (PPO); the readings' games are not counted for either.
Writes --out (nbs/measured/seed001_bar.json). Usage: nice -n 10 python bench/seed001_bar.py [--generations 200] [--round 20]
"""
import datetime, json, math, os, time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated
import torch
from genome_lab.core import atomic_write_json, measured_dir, config_parser, config_from_args, machine, run_lock
from genome_lab.hypernetwork import ReplicatorConfig, ReplicatorTrainingLoop, seed001_bar, checkpoint_meta
from genome_lab.training import PPOConfig, PPORun

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
    run_dir: Annotated[str, 'checkpoints of every run (a rerun resumes them)'] = 'runs/seed001_bar'
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'seed001_bar.json')

def replicator_config(o:Options, seed:int, generations:int)->ReplicatorConfig:
    return ReplicatorConfig(generations=generations, eval_interval=o.eval_interval, seed=seed)

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

def advance_replicator(o:Options, seed:int, generations:int)->ReplicatorTrainingLoop:
    d = Path(o.run_dir)/f'seed{seed}'
    loop = ReplicatorTrainingLoop(replicator_config(o, seed, generations), d, resume=(d/'checkpoint.safetensors').exists())
    loop.run(progress=False)
    return loop

def main():
    o = config_from_args(Options, config_parser(Options, description=__doc__.splitlines()[0]).parse_args())
    torch.set_num_threads(1)
    print(f"machine: {json.dumps(machine())}; load {os.getloadavg()}", flush=True)
    per_gen = replicator_config(o, 0, 1).population * 2 * ReplicatorConfig().agents_each * ReplicatorConfig().steps
    res = dict(options=asdict(o), machine=machine(), date=str(datetime.date.today()),
               replicator_config=asdict(replicator_config(o, 0, o.generations)), ppo_config=asdict(ppo_config(o)),
               agent_steps_per_generation=per_gen, rounds=[])
    with run_lock(Path(o.run_dir)/'.lock'):
        done = [Path(o.run_dir)/f'seed{s}'/'checkpoint.safetensors' for s in range(o.seeds)]
        done = min(checkpoint_meta(p)['generation'] if p.exists() else 0 for p in done)   # a rerun resumes from the rounds done
        if done and Path(o.out).exists(): res['rounds'] = json.loads(Path(o.out).read_text()).get('rounds', [])
        for g in range(o.round * (done // o.round + 1), o.generations + o.round, o.round):
            g = min(g, o.generations); t0, c0 = time.perf_counter(), time.process_time()
            ppo = advance_ppo(o, ppo_until(o, g * per_gen))
            runs = {f'seed {s}': advance_replicator(o, s, g).curve for s in range(o.seeds)}
            bar = seed001_bar(runs, ppo, factor=o.factor)
            res['rounds'].append(dict(generations=g, seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0,
                                      load=os.getloadavg()))
            res.update(generations=g, ppo_curve=ppo, replicator_curves=runs, bar=bar)
            atomic_write_json(o.out, res)
            print(f"generation {g} ({g * per_gen:,} agent-steps; PPO to {ppo[-1]['agent_steps']:,}): " +
                  '; '.join(f"{k} {v['score']:.2f} / PPO {v['ppo_score']:.2f} = {v['ratio']:.3f}" for k, v in bar['per_run'].items()) +
                  f"; mean {bar['mean']:.3f}, 95% interval {bar['ci95'][0]:.3f}-{bar['ci95'][1]:.3f}: {bar['verdict']} "
                  f"({res['rounds'][-1]['seconds']:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"wrote {o.out}")

if __name__ == '__main__': main()
