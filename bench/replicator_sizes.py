"""The replicator's cost per generation at sizes two CPU cores afford, and a reading's cost (issue 55): the measured
curve the bar's small protocol is chosen from.

For each size (genomes a generation x snakes per developed policy x steps; every genome developed into 2 mirrored
policies, so a generation plays 2 x genomes x snakes x steps agent-steps) `train_replicator` runs --generations
generations from an untrained decoder (no pretraining: its cost is apart from a generation's) with no reading in the
loop, in one process of one torch thread; the figure is the median of each generation's seconds after the first. A
reading (`read_policy`: the maps greedy and sampled, each snake's first episode up to the step cap) is timed on
PufferSnake at each reading size. From them, per size, the wall-hours of the bar's protocol at --bar-generations: 3
replicator seeds and 3 PPO seeds (PPO reaching a tenth of the replicator's agent-steps, at --ppo-rate agent-steps/s),
each read every --read-every generations (or at the matching PPO steps), 6 runs on 2 cores.

Writes --out (nbs/measured/replicator_sizes.json): {machine, date, generations, sizes: [{genomes, snakes, steps,
agent_steps, seconds_per_generation, seconds}], readings: [{maps, snakes, max_steps, seconds}], protocol: {...},
hours: [{size, reading, hours}]}.

    OMP_NUM_THREADS=1 python bench/replicator_sizes.py
    OMP_NUM_THREADS=1 python bench/replicator_sizes.py --generations 2 --sizes 8x1x64 --readings 1x8x200 --out /tmp/s.json   # a smoke run
"""
import datetime, tempfile, time
from dataclasses import dataclass, asdict, replace
from pathlib import Path
from typing import Annotated
import numpy as np
import torch
from genome_lab.core import measured_dir, machine
from genome_lab.arenas.policies import load_pufferlib_policy
from genome_lab.evolution.hypernetwork import PretrainConfig
from genome_lab.evolution.replicator_run import ReplicatorConfig, train_replicator, read_policy
from kit import parse, write_figures

@dataclass
class SizesBench:
    "The size curve's settings."
    sizes: Annotated[str, "GENOMESxSNAKESxSTEPS of each size, comma-separated"] = '8x1x256,8x2x256,16x1x256,8x1x512,16x2x512,32x4x2048'
    readings: Annotated[str, "MAPSxSNAKESxMAX_STEPS of each reading size, comma-separated"] = '1x16x1000,2x32x2000,4x64x5000'
    generations: Annotated[int, 'generations at each size (the first is not timed)'] = 4
    bar_generations: Annotated[int, "the protocol's replicator generations"] = 400
    read_every: Annotated[int, "the protocol's generations between readings"] = 20
    ppo_rate: Annotated[float, "PPO's agent-steps a second on one core (PUFFERLIB.md; bench/ppo_speed.py)"] = 23_000.0
    out: Annotated[str, 'the figures file (default nbs/measured/replicator_sizes.json)'] = ''

def size_of(text:str)->tuple: return tuple(int(x) for x in text.split('x'))

def main():
    o = parse(SizesBench, doc=__doc__)
    torch.set_num_threads(1)
    sizes, readings = [], []
    for text in o.sizes.split(','):
        genomes, snakes, steps = size_of(text)
        cfg = ReplicatorConfig(generations=o.generations, population=genomes, agents_each=snakes, steps=steps, eval_interval=0,
                               pretrain=PretrainConfig(pretrain_steps=0), device='cpu')
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as d: loop = train_replicator(cfg, d, every_s=1e9, progress=False)
        per = float(np.median([h['seconds'] for h in loop.history[1:]]))
        sizes.append(dict(genomes=genomes, snakes=snakes, steps=steps, agent_steps=2 * genomes * snakes * steps,
                          seconds_per_generation=round(per, 3), seconds=round(time.perf_counter() - t0, 1)))
        print(f"size {text}: {sizes[-1]['agent_steps']:,} agent-steps a generation, {per:.2f} s a generation", flush=True)
    puffer = load_pufferlib_policy('snake')
    for text in o.readings.split(','):
        maps, snakes, max_steps = size_of(text)
        r = read_policy(puffer, maps, snakes, max_steps)
        readings.append(dict(maps=maps, snakes=snakes, max_steps=max_steps, seconds=round(r['seconds'], 2), score=round(r['score'], 2)))
        print(f"reading {text}: {r['seconds']:.1f} s (PufferSnake scores {r['score']:.2f})", flush=True)
    reads = o.bar_generations // o.read_every + 1
    hours = []
    for s in sizes:
        for r in readings:
            rep = o.bar_generations * s['seconds_per_generation'] + reads * r['seconds']
            ppo = o.bar_generations * s['agent_steps'] / 10 / o.ppo_rate + reads * r['seconds']
            hours.append(dict(size=f"{s['genomes']}x{s['snakes']}x{s['steps']}", reading=f"{r['maps']}x{r['snakes']}x{r['max_steps']}",
                              hours=round(3 * (rep + ppo) / 2 / 3600, 2)))
    write_figures(o.out or measured_dir()/'replicator_sizes.json',
                  dict(machine=machine(), date=str(datetime.date.today()), generations=o.generations, sizes=sizes, readings=readings,
                       protocol=dict(bar_generations=o.bar_generations, read_every=o.read_every, ppo_rate=o.ppo_rate, runs=6, cores=2),
                       hours=hours))
    for h in hours: print(f"{h['size']} read {h['reading']}: {h['hours']} h for the protocol on 2 cores", flush=True)

if __name__ == '__main__': main()
