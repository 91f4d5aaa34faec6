"""Agent-steps/s of each arena with uniform random actions and with PufferLib's trained policy in the loop.

Both measurements run in this process, one after the other, on the same arena (1024 agents by default:
4 snake maps of 640x360 with 256 snakes each; 1024 tetris boards). The policy loop includes observation
transfer, the batched LinearLSTM forward (greedy) and the env step. Prints one line per arena and mode, and
the ratio random/policy.  Usage: python bench/arena_throughput.py [--seconds 5] [--threads 1] [--agents 1024]
"""
import time
from dataclasses import dataclass
from typing import Annotated
import numpy as np, torch
from genome_lab.arenas.arena import SnakeArena, TetrisArena
from genome_lab.arenas.policies import load_pufferlib_policy
from kit import parse

@dataclass
class ThroughputBench:
    "The arena throughput bench's settings."
    seconds: Annotated[float, 'measuring time per arena and mode'] = 5.0
    threads: Annotated[int, 'torch threads'] = 1
    agents: Annotated[int, 'agents per arena (snake: multiple of 256)'] = 1024

def rate(arena, step_fn, seconds, cpu:bool=False):
    """Agent-steps/s of `step_fn` over about `seconds` of wall time (after 20 warm-up steps); with `cpu`, the pair
    (per second of wall time, per second of this process's CPU time: steadier when other processes share the cores)."""
    for _ in range(20): step_fn()
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds: step_fn(); n += 1
    wall, used = time.perf_counter() - t0, time.process_time() - c0
    return (n * arena.num_agents / wall, n * arena.num_agents / used) if cpu else n * arena.num_agents / wall

def main(argv=None):
    a = parse(ThroughputBench, doc=__doc__, argv=argv)
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {a.threads} thread(s), {a.agents} agents, {a.seconds} s per measurement")
    arenas = {'snake': lambda: SnakeArena(num_envs=max(1, a.agents // 256), num_snakes=min(256, a.agents)),
              'tetris': lambda: TetrisArena(num_envs=a.agents)}
    for name, make in arenas.items():
        arena, rng = make(), np.random.default_rng(0)
        cache = rng.integers(0, arena.num_actions, (1024, arena.num_agents)).astype(np.int32)
        arena.reset(0); i = [0]
        def random_step(): arena.step(cache[i[0] % 1024]); i[0] += 1
        r_random = rate(arena, random_step, a.seconds)
        pol = load_pufferlib_policy(name)
        obs, st = arena.reset(0), [pol.initial_state(arena.num_agents)]
        def policy_step():
            acts, st[0] = pol.act(arena.obs, st[0])
            arena.step(acts)
        r_policy = rate(arena, policy_step, a.seconds)
        print(f"{name:6s} random actions: {r_random:12,.0f} agent-steps/s")
        print(f"{name:6s} pufferlib policy: {r_policy:11,.0f} agent-steps/s")
        print(f"{name:6s} ratio random/policy: {r_random / r_policy:.1f}x")
        arena.close()

if __name__ == '__main__': main()
