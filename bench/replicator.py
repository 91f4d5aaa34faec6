"""Replicator dynamics on the 2-D toy landscapes of 40_replicator over seeds: distance to a known optimum, mass kept on two equal peaks.

Prints, per representation, mean ± std over seeds (n = seeds) of: the mean genome's distance to the quadratic's optimum,
the smaller of the two peaks' masses on the bimodal landscape, the seeds that kept both peaks (each > 15%), and the
large-time share the exact selection equation predicts from the starting density (the baseline). The mixture is run with
its default `share_rate` (0.1) and with the plain moment closure (`share_rate = 1`).
    python bench/replicator.py [--seeds 8] [--generations 60]"""
import time
from dataclasses import dataclass
from typing import Annotated
import numpy as np
import torch
from genome_lab.evolution.replicator import make_distribution, evolve
from kit import parse

@dataclass
class ReplicatorBench:
    "The replicator bench's settings."
    seeds: Annotated[int, 'seeds of each distribution'] = 8
    generations: Annotated[int, 'generations of each run'] = 60
    samples: Annotated[int, 'samples a generation'] = 128
    dt: Annotated[float, 'the replicator step'] = 0.5
    diffusion: Annotated[float, 'the diffusion D'] = 0.002

OPT, A, B = torch.tensor([2.0, -1.5]), torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 0.0])
def quadratic(x): return -((x - OPT) ** 2).sum(1)
def bimodal(x): return torch.exp(-((x - A) ** 2).sum(1) / 2) + torch.exp(-((x - B) ** 2).sum(1) / 2)
def peak_masses(d, n=4000):
    x = d.sample(n, torch.Generator().manual_seed(7))
    return [float(((x - c).norm(dim=1) < 1.2).float().mean()) for c in (A, B)]

def main(argv=None):
    a = parse(ReplicatorBench, doc=__doc__, argv=argv)
    torch.set_num_threads(1)
    setups = {'particles (512)': ('particles', dict(particles=512)),
              'mixture (12, share_rate 0.1)': ('mixture', dict(components=12)),
              'mixture (12, share_rate 1)': ('mixture', dict(components=12, share_rate=1.0)),
              'flow (NSF, 3 transforms)': ('flow', {})}
    t0 = time.time()
    for name, (kind, kw) in setups.items():
        dist, low, kept, exact = [], [], 0, []
        for s in range(a.seeds):
            d = make_distribution(kind, 2, diffusion=a.diffusion, seed=s, **kw)
            r = evolve(d, quadratic, a.generations, a.samples, a.dt, seed=s)
            dist.append(float((r.means[-1] - OPT).norm()))
            d = make_distribution(kind, 2, init_std=1.5, diffusion=a.diffusion, seed=s, **kw)
            pa, pb = d.log_density(torch.stack([A, B])).exp().tolist(); exact.append(min(pa, pb) / (pa + pb))
            evolve(d, bimodal, a.generations, a.samples, a.dt, seed=s)
            m = peak_masses(d); low.append(min(m)); kept += min(m) > 0.15
        print(f"{name:30s} quadratic distance {np.mean(dist):.3f} ± {np.std(dist):.3f} (max {max(dist):.3f}) | "
              f"bimodal smaller peak mass {np.mean(low):.3f} ± {np.std(low):.3f} (min {min(low):.3f}), both kept {kept}/{a.seeds}, "
              f"exact-selection share of the smaller peak {np.mean(exact):.3f} ± {np.std(exact):.3f} (min {min(exact):.3f})")
    print(f"n = {a.seeds} seeds, {a.generations} generations x {a.samples} samples, dt {a.dt}, D {a.diffusion}; {time.time() - t0:.1f} s")

if __name__ == '__main__': main()
