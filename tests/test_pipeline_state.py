"""The pipeline's kernels and resumes, on tiny notebooks in a temporary `nbs/` folder: a kernel's messages outside its
cells are recorded as noise, not printed; a notebook that trains into a kept folder, killed or failing at any late
point, resumes to a consistent run (the registry and the folder from before it), and runs again on the finished run."""
import json, os, subprocess, sys
from pathlib import Path
import nbformat, pytest
import genome_lab.pipeline as pl
from genome_lab.registry.store import Registry

# `genome-lab run ARGS` with the notebooks of folder NBS; GL_STOP=kill:recorded kills it after the notebook ran and
# before run.json says so, GL_STOP=kill:restoring after a resume put the registry back and before the kept folder
RUN = """
import os, signal, sys
from pathlib import Path
import genome_lab.pipeline as pl
die, copy_over, stop = lambda *a: os.kill(os.getpid(), signal.SIGKILL), pl._copy_over, os.environ.get('GL_STOP')
pl.notebooks_dir = lambda: Path(sys.argv[1])
if stop == 'kill:recorded': pl.noisy_outputs = die
if stop == 'kill:restoring': pl._copy_over = lambda *a: (copy_over(*a), die())
sys.exit(pl.run_cli(sys.argv[2:]))
"""

# a notebook that trains into its kept folder `run_dir` as 50_training, 41_hypernetwork and 65_llm_evolution do: a
# checkpoint it resumes, a genome registered at each step, then one registered from the finished run, then its checks;
# GL_STOP=kill:POINT is a power cut of the pipeline at POINT, GL_STOP=fail:POINT an error there; GL_MORE_STEPS trains on
TRAIN = ['''
import json, os, signal, time
from pathlib import Path
from genome_lab.registry.store import Registry
from genome_lab.registry.genomes import Genome
from genome_lab.arenas.policies import RandomPolicy
def stop_at(point:str):
    how, _, at = os.environ.get('GL_STOP', '').partition(':')
    if at != point: return
    if how == 'kill': os.kill(os.getppid(), signal.SIGKILL); time.sleep(60)
    raise RuntimeError(f'failing at {point}')
def new_genome(name:str, parents:list=()):
    return reg.add(Genome(name=name, type='rl', arena='snake', arch='random', config=dict(num_actions=4), source='test',
                          parents=list(parents)), RandomPolicy(4).state_dict()).id
reg, work = Registry(registry_dir), Path(run_dir)
steps += int(os.environ.get('GL_MORE_STEPS', 0))
''', '''
ckpt = work/'checkpoint.json'
state = json.loads(ckpt.read_text()) if ckpt.exists() else dict(step=0, genomes=[])
while state['step'] < steps:
    state['step'] += 1
    state['genomes'].append(new_genome(f"Trained{state['step']}"))
    work.mkdir(exist_ok=True); ckpt.with_suffix('.tmp').write_text(json.dumps(state)); os.replace(ckpt.with_suffix('.tmp'), ckpt)
    if state['step'] == 2: stop_at('training')
stop_at('trained')
''', '''
best = reg.by_name('Best') or new_genome('Best', [dict(id=state['genomes'][-1], relation='finetune')])
stop_at('registered')
''', '''
assert [reg.genome(g)['name'] for g in state['genomes']] == [f'Trained{i}' for i in range(1, steps + 1)]
names = sorted(reg.genome(g)['name'] for g in reg.ids())
assert names == ['Best', 'Trained1', 'Trained2', 'Trained3'], names
stop_at('end')
''']

# a notebook whose kernel writes outside its cells: a line of its own log (as ipykernel's KeyboardInterrupt line),
# and a line at exit; and a line a cell writes to its file descriptor, which the kernel shows in the cell's output
TALK = ['''
import atexit, os, time
os.write(1, b'a line of the cell\\n'); time.sleep(0.5)   # a thread of the kernel's forwards it to the cell's output
''', '''
get_ipython().kernel.log.error('KeyboardInterrupt caught in kernel.')
atexit.register(os.write, 2, b'Traceback: a line at exit\\n')
''']

def write_notebook(path:Path, params:str, cells:list):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(params, metadata={'tags': ['parameters']}),
                                         *[nbformat.v4.new_code_cell(c.strip()) for c in cells]])
    nb.metadata['kernelspec'] = dict(name='python3', display_name='Python 3', language='python')
    nbformat.write(nb, path)

@pytest.fixture
def nbs(tmp_path): # the temporary `nbs/` folder
    d = tmp_path/'nbs'; d.mkdir()
    write_notebook(d/'10_train.ipynb', 'registry_dir: str = ""  # the run\'s registry\nrun_dir: str = "train"  # the kept folder\n'
                   'steps: int = 3  # training steps', TRAIN)
    write_notebook(d/'20_talk.ipynb', 'seed: int = 0  # unused', TALK)
    return d

def genome_lab_run(nbs:Path, *args, **env): # `env`: GL_STOP, GL_MORE_STEPS
    "`genome-lab run ARGS` without pytest's variable, with which ipykernel would leave the cells' file descriptors alone."
    env = {k: v for k, v in os.environ.items() if not k.startswith('GL_') and k != 'PYTEST_CURRENT_TEST'} | env
    return subprocess.run([sys.executable, '-c', RUN, nbs, *args, '--runs-dir', nbs.parent/'runs', '--run-id', 'r'],
                          capture_output=True, text=True, env=env, timeout=300)

@pytest.fixture
def run_here(nbs, cli, monkeypatch):
    """`genome_lab_run` in this process (`cli`), for a run that is not killed (a kill stops the kernel's parent): its
    kernels see the same variables."""
    monkeypatch.setattr(pl, 'notebooks_dir', lambda: nbs)
    def run(*args, **env): # `env`: GL_STOP=fail:POINT, GL_MORE_STEPS
        assert not env.get('GL_STOP', '').startswith('kill'), 'a killed run needs a process of its own (genome_lab_run)'
        for k in [k for k in os.environ if k.startswith('GL_') or k == 'PYTEST_CURRENT_TEST']: monkeypatch.delenv(k)
        for k, v in env.items(): monkeypatch.setenv(k, v)
        return cli('run', *args, '--runs-dir', nbs.parent/'runs', '--run-id', 'r')
    return run

def consistent(run:Path): # the run finished with one training run's genomes, each once, as its checkpoint says
    record = json.loads((run/'run.json').read_text())
    assert record['status'] == 'ok' and record['results']['10_train']['status'] == 'ok', record
    with Registry(run/'registry') as reg:
        names = sorted(reg.genome(g)['name'] for g in reg.ids())
        trained = [reg.genome(g)['name'] for g in json.loads((run/'train'/'checkpoint.json').read_text())['genomes']]
    assert names == ['Best', 'Trained1', 'Trained2', 'Trained3'] and trained == ['Trained1', 'Trained2', 'Trained3'], (names, trained)

@pytest.mark.parametrize('stop', ['kill:training', 'kill:trained', 'kill:registered', 'kill:end', 'kill:recorded', 'fail:end'])
def test_a_late_stop_resumes_from_the_registry_and_kept_folder_before_the_notebook(nbs, run_here, stop):
    """Before: the resume put back the registry from before the notebook while its folder kept the checkpoint; the rerun
    resumed that checkpoint, and the genomes registered while training were gone ('no genome ... in the registry')."""
    first = genome_lab_run(nbs, '10_train', GL_STOP=stop) if stop.startswith('kill') else run_here('10_train', GL_STOP=stop)
    assert first.returncode == (-9 if stop.startswith('kill') else 1), first.stderr
    again = run_here('--resume')
    assert again.returncode == 0, again.stderr
    consistent(nbs.parent/'runs'/'r')

def test_a_killed_restore_is_done_again(nbs, run_here):
    assert genome_lab_run(nbs, '10_train', GL_STOP='kill:trained').returncode == -9
    assert genome_lab_run(nbs, '--resume', GL_STOP='kill:restoring').returncode == -9   # the registry back, not the folder
    assert run_here('--resume').returncode == 0
    consistent(nbs.parent/'runs'/'r')

def test_a_notebook_runs_again_on_the_finished_run(nbs, run_here):
    """`--resume` with a notebook named runs it again on the run as it is: it resumes its finished training, registers
    nothing twice; run again and failing, it is undone."""
    assert run_here('10_train').returncode == 0
    again = run_here('10_train', '--resume')
    assert again.returncode == 0 and '[genome-lab] 1/1 10_train done in' in again.stdout, again.stderr
    consistent(nbs.parent/'runs'/'r')
    run, before = nbs.parent/'runs'/'r', (nbs.parent/'runs'/'r'/'10_train.ipynb').read_bytes()
    failed = run_here('10_train', '--resume', GL_MORE_STEPS='1')   # it trains a step more, then its checks fail
    assert failed.returncode == 1 and 'the run is as it was before' in failed.stderr, failed.stderr
    consistent(run)   # without the step more: the registry and the checkpoint as they were
    assert (run/'10_train.ipynb').read_bytes() == before and 'Trained4' in (run/'10_train.rerun.ipynb').read_text()

def test_a_kernel_message_outside_a_cell_is_noise_not_a_console_line(nbs):
    r = genome_lab_run(nbs, '20_talk')
    assert r.returncode == 0, r.stderr
    run = nbs.parent/'runs'/'r'
    noise = json.loads((run/'run.json').read_text())['results']['20_talk']['noise']
    assert noise == [[None, 'kernel: [IPKernelApp] ERROR | KeyboardInterrupt caught in kernel.'],
                     [None, 'kernel: Traceback: a line at exit']], noise
    assert 'a line of the cell' in (run/'20_talk.kernel.log').read_text()   # the cell's line is in the log too, not noise
    assert '20_talk done in' in r.stdout and r.stdout.count('noise: kernel output (run.json)') == 1, r.stdout
    assert 'ERROR' not in r.stdout + r.stderr and 'Traceback' not in r.stdout + r.stderr, r.stdout + r.stderr

def test_two_lanes_beside_each_other_with_a_relative_runs_folder(nbs):
    """Both lanes run at once with `--runs-dir` relative to where the command starts. Papermill's `cwd` changed the whole
    process's working directory, so the other lane's relative paths missed: the first quick run on a fresh clone stopped
    at once ("No such file or directory: 'runs/20261207-063419-c49d5e'"). The kernels now start in the run folder
    themselves, and the process stays where it started."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('GL_') and k != 'PYTEST_CURRENT_TEST'}
    r = subprocess.run([sys.executable, '-c', RUN, nbs, '10_train', '20_talk', '--runs-dir', 'runs', '--run-id', 'r'],
                       cwd=nbs.parent, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    record = json.loads((nbs.parent/'runs'/'r'/'run.json').read_text())
    assert record['lanes'] == min(2, len(os.sched_getaffinity(0))), record
    assert {n: v['status'] for n, v in record['results'].items()} == {'10_train': 'ok', '20_talk': 'ok'}, record
    consistent(nbs.parent/'runs'/'r')
