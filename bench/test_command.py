"""The README's test command on a fresh clone, timed (issue 53): `bash tools/test.sh` in a new clone of this checkout's
HEAD, with empty caches (HOME, GENOME_LAB_CACHE, TORCHINDUCTOR_CACHE_DIR and MPLCONFIGDIR new folders), its phases
timed from the lines the script prints (`== nbdev-test`, `== pytest`): the install (tools/setup.sh), the notebooks,
the pytest suite (its parallel pass and the timing tests' serial pass). Python packages come from the package index
(pip's own download cache is the one thing a new machine may lack that this run does not).

Writes --out (default nbs/measured/test_command.json): {date, commit, machine, seconds, status, phases: {install,
nbdev_test, pytest}, budget_s, within_budget}; the README quotes it. Exit status: the test command's.
Usage: python bench/test_command.py [--budget-s 1200] [--keep]
"""
import datetime, os, subprocess, sys, tempfile, time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from genome_lab.core import atomic_write_json, machine, measured_dir
from kit import parse

@dataclass
class TestCommandBench:
    "The test command bench's settings."
    budget_s: Annotated[float, "the test command's budget, install included"] = 1200.0
    keep: Annotated[bool, 'keep the clone (its path is printed)'] = False
    out: Annotated[str, 'JSON to write'] = str(measured_dir()/'test_command.json')

PHASES = {'== nbdev-test': 'nbdev_test', '== pytest': 'pytest'}   # the lines tools/test.sh prints as a phase starts

def timed(cmd:list, cwd:Path, env:dict)->tuple: # (exit status, {phase: seconds}, the output's last lines)
    "Run `cmd`, echoing its output, and time each phase from the moment its line is printed; before the first: install."
    t0 = time.perf_counter(); marks, tail = [('install', t0)], []
    with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        for line in p.stdout:
            sys.stdout.write(line); tail = (tail + [line])[-40:]
            if line.strip() in PHASES: marks.append((PHASES[line.strip()], time.perf_counter()))
    ends = [t for _, t in marks[1:]] + [time.perf_counter()]
    return p.returncode, {name: round(end - start, 1) for (name, start), end in zip(marks, ends)}, ''.join(tail)

def main():
    o = parse(TestCommandBench, doc=__doc__)
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix='genome_lab_test_command_'))
    subprocess.run(['git', 'clone', '-q', str(root), str(work/'repo')], check=True)
    subprocess.run(['git', 'checkout', '-q', commit], cwd=work/'repo', check=True)
    caches = {v: str(work/v.lower()) for v in ('HOME', 'GENOME_LAB_CACHE', 'TORCHINDUCTOR_CACHE_DIR', 'MPLCONFIGDIR')}
    for d in caches.values(): Path(d).mkdir()
    env = {**os.environ, **caches, 'PIP_CACHE_DIR': os.environ.get('PIP_CACHE_DIR') or str(Path.home()/'.cache'/'pip')}
    t0 = time.perf_counter()
    rc, phases, tail = timed(['bash', 'tools/test.sh'], work/'repo', env)
    seconds = round(time.perf_counter() - t0, 1)
    rec = dict(date=datetime.date.today().isoformat(), commit=commit, machine=machine(), command='bash tools/test.sh',
               caches='cold', seconds=seconds, status='ok' if rc == 0 else f'failed ({rc})', phases=phases,
               budget_s=o.budget_s, within_budget=rc == 0 and seconds <= o.budget_s, tail=tail[-3000:])
    atomic_write_json(o.out, rec)
    print(f"test command: {rec['status']} in {seconds} s ({phases}); budget {o.budget_s} s; wrote {o.out}"
          + (f"; the clone is kept at {work/'repo'}" if o.keep else ''))
    if not o.keep: subprocess.run(['rm', '-rf', str(work)])
    sys.exit(rc)

if __name__ == '__main__': main()
