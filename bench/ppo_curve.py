"""The replicator's bar (docs/design.md, Replicator and hypernetwork) read against PPO: a from-scratch PuffeRL
learning curve on this machine next to the replicator's.

1. Trains (or resumes) PufferLib's snake model from its initialisation with PuffeRL in self-play on PufferLib's map
   (`PPORun`, the settings of `genome-lab train-ppo`), keeping a checkpoint every --keep-every agent-steps, evaluated
   as the replicator's curve is (`ReplicatorTrainingLoop.evaluate_best`: the policy alone, greedy, 64 snakes on
   PufferLib's 640x360 map with 4096 food, seed 1, first episodes, length at death, cap 20,000 steps).
2. Speed, back to back in this process: PuffeRL training (collect + train) and collecting alone, in agent-steps/s,
   next to the arena's policy-only rate (the same map and snakes, the trained `LinearLSTM` choosing greedy moves,
   nothing trained) and the arena alone with random moves; and the run's own mean rate over all its sessions.
3. The replicator's curve from --replicator (nbs/measured), and the replicator's score as a fraction of PPO's at
   matched agent-steps and at 10x PPO's agent-steps (linear interpolation between the replicator's evaluations).
Writes --out (JSON, committed under nbs/measured/ and read by 50_training).
Usage: python bench/ppo_curve.py --run-dir runs/ppo-scratch --registry runs/ppo-registry [--resume] [--total-timesteps 100000000]
(flags: BenchOptions' and PPOConfig's fields; a new run starts from BASE)
"""
import datetime, json, os, tempfile, time
from dataclasses import asdict, dataclass, replace
from typing import Annotated
import numpy as np
import torch
from genome_lab.arenas.arena import SnakeArena
from genome_lab.registry.store import Registry
from genome_lab.arenas.policies import RandomPolicy, load_pufferlib_policy
from genome_lab.rl.training import PPOConfig, stored_config
from genome_lab.rl.ppo_run import PPORun
from genome_lab.arenas.evaluation import evaluate
from genome_lab.core import machine
from genome_lab.core import atomic_write_json, measured_dir, config_from_args
from ppo_common import start

def rates(policy, speed_steps:int, seed:int=0, cfg:PPOConfig|None=None)->dict: # agent-steps/s of four loops
    """PuffeRL training and collecting (`cfg`'s settings; default `PPOConfig()`'s), the arena with the policy's greedy
    moves, the arena with random moves, on `cfg`'s map; each also per second of this process's CPU time (`*_cpu`:
    steadier than wall time when other processes share the cores)."""
    cfg = replace(cfg or PPOConfig(), total_timesteps=2**62, seed=seed)
    out, fresh = {}, PPORun(cfg, tempfile.mkdtemp(prefix='ppo-speed-'), display=None)
    t = fresh.trainer
    def timed(key, loop): # runs `loop()`, which returns its agent-steps, and records both rates
        t0, c0 = time.perf_counter(), time.process_time()
        n = loop()
        out[key], out[f'{key}_cpu'] = n / (time.perf_counter() - t0), n / (time.process_time() - c0)
    timed('puffer_train', lambda: (fresh.train_for(speed_steps), fresh.agent_steps)[1])
    def collect():
        start = t.global_step
        while t.global_step - start < speed_steps: t.evaluate()
        return t.global_step - start
    timed('puffer_collect', collect)
    fresh.close()
    arena = cfg.arena()   # the map PuffeRL trained on
    obs, state, n = arena.reset(seed), policy.initial_state(arena.num_agents), speed_steps // arena.num_agents
    def play():
        nonlocal obs, state
        for _ in range(n):
            a, state = policy.act(obs, state)
            obs, *_ = arena.step(a)
        return n * arena.num_agents
    timed('policy_only', play)
    moves = np.random.default_rng(seed).integers(0, 4, (64, arena.num_agents)).astype(np.int32)
    def random_moves():
        for k in range(n): arena.step(moves[k % 64])
        return n * arena.num_agents
    timed('arena_random', random_moves)
    arena.close()
    return out

def ratios(ppo:list, rep:list)->list: # one row per PPO evaluation
    "Replicator score / PPO score at the same agent-steps and at 10x them (None outside the replicator's evaluations)."
    xs, ys = np.array([c['agent_steps'] for c in rep], float), np.array([c['score'] for c in rep])
    at = lambda x: float(np.interp(x, xs, ys)) if xs[0] <= x <= xs[-1] else None
    out = []
    for c in ppo:
        m, t = at(c['agent_steps']), at(10 * c['agent_steps'])
        out.append(dict(agent_steps=c['agent_steps'], ppo=c['score'], ppo_std=c['std'], ppo_n=c['n'], replicator_matched=m,
                        ratio_matched=None if m is None else m / c['score'], replicator_10x=t, ratio_10x=None if t is None else t / c['score']))
    return out

@dataclass
class BenchOptions:
    "The bench's own settings (the run's are `PPOConfig`'s flags; a new run starts from `BASE`)."
    run_dir: Annotated[str, 'checkpoint folder of the run'] = 'runs/ppo-scratch'
    registry: Annotated[str, 'registry folder of its kept genomes'] = 'runs/ppo-registry'
    resume: Annotated[bool, 'continue the run in run_dir with its settings (only total_timesteps may change)'] = False
    speed_steps: Annotated[int, 'agent-steps of each speed measurement'] = 655_360
    replicator: Annotated[str, 'the replicator\'s runs file under nbs/measured'] = 'hypernetwork_runs_2026-11-23.json'
    replicator_run: Annotated[str, 'the run of that file (41_hypernetwork\'s headline)'] = 'seed 0, drop at 1200'
    out: Annotated[str, 'JSON to write (default nbs/measured/ppo_curve_DATE.json)'] = ''

BASE = PPOConfig(total_timesteps=100_000_000, keep_every=5_000_000, checkpoint_every=1_000_000)

def main(argv=None):
    a, b, out = start(BenchOptions, __doc__, 'ppo_curve', argv)
    cfg = config_from_args(PPOConfig, a, base=stored_config(b.run_dir) if b.resume else BASE)
    run = PPORun(cfg, b.run_dir, Registry(b.registry), resume=b.resume, display=None)
    run.run()
    print(f"PPO from scratch: {run.agent_steps:,} agent-steps in {run.seconds:.0f} s of wall time over all sessions", flush=True)
    sps = [r['sps'] for r in run.log.rows if r.get('sps')]
    torch.manual_seed(0)
    base = dict(seed=cfg.eval_seed, max_steps=cfg.eval_max_steps, progress=False, num_snakes=cfg.eval_snakes)
    random_snake = evaluate(RandomPolicy(4), 'snake', **base).stats()['score']
    puffer_snake = evaluate(load_pufferlib_policy('snake'), 'snake', **base).stats()['score']
    print(f"1. curve (greedy, {cfg.eval_snakes} snakes, seed {cfg.eval_seed}, length at death); random snake "
          f"{random_snake['mean']:.2f} ± {random_snake['std']:.2f} (n={random_snake['n']}), PufferLib's snake "
          f"{puffer_snake['mean']:.2f} ± {puffer_snake['std']:.2f} (n={puffer_snake['n']})")
    for c in run.curve: print(f"  {c['agent_steps']:>12,}: {c['score']:7.2f} ± {c['std']:6.2f} (n={c['n']}, censored {c['censored']})")
    load0 = os.getloadavg()
    speed = rates(run.policy(), b.speed_steps)
    speed.update(run_mean_sps=float(np.mean(sps)), run_overall=run.agent_steps / run.seconds, load_before=load0, load_after=os.getloadavg())
    print(f"2. speed (agent-steps/s, {b.speed_steps:,} each, load {load0[0]:.1f} -> {speed['load_after'][0]:.1f}): PuffeRL train "
          f"{speed['puffer_train']:,.0f}, PuffeRL collect only {speed['puffer_collect']:,.0f}, arena + policy only {speed['policy_only']:,.0f}, "
          f"arena with random moves {speed['arena_random']:,.0f}; the run's mean {speed['run_mean_sps']:,.0f} "
          f"(overall with evaluations {speed['run_overall']:,.0f})")
    rep = json.loads((measured_dir()/b.replicator).read_text())[b.replicator_run]['curve']
    rows = ratios(run.curve, rep)
    print(f"3. replicator ({b.replicator_run}) / PPO at matched agent-steps and at 10x:")
    fmt = lambda v: '   -  ' if v is None else f"{v:6.3f}"
    for r in rows: print(f"  {r['agent_steps']:>12,}: PPO {r['ppo']:7.2f}; matched {fmt(r['ratio_matched'])}; 10x {fmt(r['ratio_10x'])}")
    record = dict(machine=machine(), date=str(datetime.date.today()), config=asdict(run.cfg), agent_steps=run.agent_steps,
               wall_seconds=run.seconds, curve=run.curve, random_snake=random_snake, puffer_snake=puffer_snake, speed=speed, speed_steps=b.speed_steps,
               replicator=dict(file=b.replicator, run=b.replicator_run, curve=rep), ratios=rows,
               history=run.log.rows[::max(1, len(run.log.rows) // 400)])
    atomic_write_json(out, record)
    print(f"wrote {out}")

if __name__ == '__main__': main()
