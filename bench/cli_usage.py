"""How long `genome-lab` takes to refuse a wrong command line: checked against the command's cached usage
(`genome_lab.pipeline.check_usage`, nothing imported) against the baseline of the same run, the command's own parser
after its module (torch, PufferLib) is imported, as every wrong usage was before (an empty help cache, `GENOME_LAB_CACHE`
a new folder each time, gives that path: `genome-lab` imports the command to fill it).

Each wrong usage runs `--repeats` times each way as a subprocess; the figures are the median wall seconds.
Usage: python bench/cli_usage.py [--repeats 3] [--out nbs/measured/cli_usage.json]
"""
import json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path
from dataclasses import dataclass
from typing import Annotated
from genome_lab.core import atomic_write_json
from kit import parse

ROOT = Path(__file__).resolve().parent.parent
WRONG = [['serve', '--registry', 'none', '--port', '99999'], ['serve', '--regsitry', 'none'],   # wrong usages of commands
         ['season', '--registry', 'none', '--ppo-step', '5'], ['season', '--registry', 'none'],    # that import torch
         ['ecosystem', '--registry', 'none', '--hour', '1'], ['train-ppo', '--total-timesteps', 'x']]

def timed(argv:list, cache:Path)->tuple: # (seconds, exit status, last line of stderr)
    env = {**os.environ, 'GENOME_LAB_CACHE': str(cache), 'OMP_NUM_THREADS': '1'}
    t0 = time.perf_counter()
    r = subprocess.run([Path(sys.executable).parent/'genome-lab', *argv], capture_output=True, text=True, env=env, timeout=300)
    return time.perf_counter() - t0, r.returncode, (r.stderr.strip().splitlines() or [''])[-1]

@dataclass
class CliUsageBench:
    "The CLI usage bench's settings."
    repeats: Annotated[int, 'runs of each wrong usage, each way'] = 3
    out: Annotated[str, 'the figures file'] = str(ROOT/'nbs'/'measured'/'cli_usage.json')

def main():
    a = parse(CliUsageBench, doc=__doc__)
    with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as colds:
        for cmd in sorted({w[0] for w in WRONG}): timed([cmd, '--help'], Path(warm))   # caches each command's usage
        rows, cold = [], lambda: Path(tempfile.mkdtemp(dir=colds))   # an empty cache each time
        for argv in WRONG:
            checked = [timed(argv, Path(warm)) for _ in range(a.repeats)]
            imported = [timed(argv, cold()) for _ in range(a.repeats)]
            rows.append(dict(argv=argv, checked_s=statistics.median(s for s, _, _ in checked), imported_s=statistics.median(s for s, _, _ in imported),
                             status=[checked[0][1], imported[0][1]], checked_says=checked[0][2], imported_says=imported[0][2]))
            r = rows[-1]
            print(f"genome-lab {' '.join(argv):45s} checked {r['checked_s']:5.2f} s, imported (baseline) {r['imported_s']:5.2f} s | {r['checked_says'][:70]}")
    out = dict(rows=rows, repeats=a.repeats, cpus=os.cpu_count(), load_1min=os.getloadavg()[0],
               note='wall seconds, median of the repeats; the same machine and run for both ways')
    atomic_write_json(a.out, out)
    print(f"wrote {a.out}")

if __name__ == '__main__': main()
