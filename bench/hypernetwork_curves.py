"""Collects what stored replicator training runs measured while they trained, for the figures of `42_hypernetwork_report`.

Reads the checkpoint (`checkpoint.safetensors`) of each run folder given as LABEL=DIR and writes one JSON file:
for each run its settings, the score-versus-evaluations curve (the distribution's mean genome read by `read_policy`:
length at death on the training map, greedy and sampled, against agent-steps), its training fitness in blocks of `--block` generations
(window reward, food eaten and share of snakes that died, per snake, and the hypernetwork's parameter norm) and the
machine that wrote the checkpoint (None for checkpoints written before genome_lab recorded it).
Usage: python bench/hypernetwork_curves.py --out nbs/measured/hypernetwork_runs_$(date +%F).json "seed 0=/tmp/run0" ...
"""
import json
from dataclasses import dataclass, field
from typing import Annotated
from pathlib import Path
import numpy as np
from genome_lab.evolution.replicator_run import checkpoint_meta, LOOP_FILE
from kit import parse

def run_record(run_dir:Path, block:int)->dict:
    m = checkpoint_meta(Path(run_dir)/LOOP_FILE)
    h, blocks = m['history'], []
    for lo in range(0, len(h), block):
        b = h[lo:lo + block]
        mean = lambda k: round(float(np.mean([r[k] for r in b])), 4)
        blocks.append(dict(generation=lo, agent_steps=b[-1]['agent_steps'], window=mean('charts/fitness_mean'), food=mean('charts/food'),
                           died=mean('charts/died'), hn_param_norm=mean('hypernetwork/param_norm')))
    curve = [dict(generation=c['generation'], agent_steps=c['agent_steps'], score=round(c['score'], 3), greedy=round(c['greedy'], 3),
                  sampled=round(c['sampled'], 3), n=c['n'], censored=c['censored']) for c in m['curve']]
    return dict(config=m['config'], generations=m['generation'], machine=m.get('machine'), curve=curve, blocks=blocks)

@dataclass
class CurvesBench:
    "The curves' runs and where they are written."
    runs: Annotated[list[str], 'LABEL=RUN_DIR, one per run'] = field(default_factory=list)
    out: Annotated[str, 'JSON file to write (required)'] = ''
    block: Annotated[int, 'generations per block of training fitness'] = 10

    def __post_init__(self):
        if bad := [r for r in self.runs if '=' not in r]: raise ValueError(f"runs {bad}: write each as LABEL=RUN_DIR")

def main(argv=None):
    a = parse(CurvesBench, doc=__doc__, argv=argv, positional=('runs',), required=('runs', 'out'))
    pairs = [r.split('=', 1) for r in a.runs]
    if any(len(p) != 2 for p in pairs): ap.error('give each run as LABEL=RUN_DIR')
    out = {label: run_record(Path(d), a.block) for label, d in pairs}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    for label, r in out.items(): print(f"{label}: {r['generations']} generations, {len(r['curve'])} evaluations, {len(r['blocks'])} blocks")

if __name__ == '__main__': main()
