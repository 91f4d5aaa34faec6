"""Where a pipeline run's time went: each notebook's seconds and share of the total, from the run's `run.json`.

Reads `runs/<run_id>/run.json` (written by `genome-lab run`, `genome_lab.pipeline`), prints one line per notebook,
slowest first (seconds, share, status), the run's notebook time against a budget (the wall clock, `wall_seconds`, where
the run ran its two lanes side by side; else the notebooks' seconds summed), and the notebooks not finished.
Usage: python bench/pipeline.py runs/<run_id> [--budget 600]   (a run folder or its run.json; default: the newest run)
"""
import json
from pathlib import Path
from dataclasses import dataclass
from typing import Annotated
from genome_lab.pipeline import BUDGETS
from kit import parse

@dataclass
class PipelineBench:
    "The pipeline bench's settings."
    run: Annotated[str, 'a run folder or its run.json (default: the newest under runs/)'] = ''
    budget: Annotated[float, 'seconds the notebooks of a run should take in all'] = BUDGETS['quick']

def shares(record:dict)->list: # [(notebook, seconds, share, status)], slowest first
    "Each notebook's seconds (0 for one that has none yet), its share of the run's total, and its status."
    res = record.get('results', {})
    rows = [(n, float(res.get(n, {}).get('seconds') or 0.0), res.get(n, {}).get('status', 'not run'))
            for n in record['notebooks']]
    total = sum(s for _, s, _ in rows) or 1.0
    return sorted(((n, s, s / total, st) for n, s, st in rows), key=lambda r: -r[1])

def newest(runs:Path)->Path:
    "The newest `run.json` under `runs` (by the run id, which starts with its UTC start time)."
    found = sorted(runs.glob('*/run.json'))
    if not found: raise SystemExit(f"no run.json under {runs}: run `genome-lab run` first, or name a run folder")
    return found[-1]

def main():
    a = parse(PipelineBench, doc=__doc__, positional=('run',))
    path = Path(a.run) if a.run else newest(Path('runs'))
    if path.is_dir(): path = path/'run.json'
    if not path.exists(): raise SystemExit(f"{path} not found: name a run folder under runs/ (it holds run.json)")
    record = json.loads(path.read_text())
    rows = shares(record)
    summed = sum(s for _, s, _, _ in rows)
    total = record.get('wall_seconds', summed)
    lanes = f"; {summed:.1f} s summed over {record['lanes']} lanes" if record.get('lanes', 1) > 1 else ''
    print(f"run {record.get('run_id')} (preset {record.get('preset')}, status {record.get('status')}): "
          f"{total:.1f} s of notebooks{lanes}, budget {a.budget:.0f} s ({total / a.budget:.2f}x)")
    for n, s, share, st in rows: print(f"  {n:28s} {s:8.1f} s {100 * share:6.1f}%  {st}")
    if left := [n for n, _, _, st in rows if st != 'ok']: print(f"not finished: {', '.join(left)}")

if __name__ == '__main__': main()
