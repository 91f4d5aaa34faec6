"""Fixtures shared by the tests."""
import importlib.util, subprocess, sys
from importlib import metadata
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent

# The files that took 25 s or more in the parallel pass (2026-12-07, the 2-core EPYC: 1536 s of tests in all), slowest
# first. They start first, so that the two workers end together: --dist loadfile gives a whole file to one worker, and
# xdist by itself starts the files with the most tests first, leaving the slow ones of few tests (docs, ecosystem,
# programs_climb) to the end, where one worker ran on alone (tools/test.sh keeps this order: --no-loadscope-reorder)
SLOW_FIRST = ('test_docs.py', 'test_pipeline_state.py', 'test_seasons.py', 'test_streaming.py', 'test_ecosystem.py',
              'test_server.py', 'test_llm_evolution.py', 'test_runbooks.py', 'test_physics.py', 'test_training.py',
              'test_hypernetwork.py', 'test_project.py', 'test_tournament.py', 'test_programs_climb.py', 'test_sandbox.py',
              'test_programs.py', 'test_pages.py')

def pytest_collection_modifyitems(items):
    "The files of `SLOW_FIRST` first, in its order; the others after them as collected (each file's tests in their order)."
    rank = {f: k for k, f in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))

@pytest.fixture
def install_entry_point(monkeypatch):
    """`install(group, name, 'module:attr')`: an entry point as an installed package declares it in its pyproject.toml,
    seen by `importlib.metadata.entry_points(group=...)` for this test only."""
    added, real = [], metadata.entry_points
    def entry_points(**kw):
        eps = real(**kw)
        mine = [e for e in added if e.group == kw.get('group')]
        return metadata.EntryPoints([*eps, *mine]) if mine else eps
    monkeypatch.setattr(metadata, 'entry_points', entry_points)
    return lambda group, name, value: added.append(metadata.EntryPoint(name=name, value=value, group=group))

@pytest.fixture
def cli(capfd):
    """`cli('COMMAND', *args)`: `genome-lab COMMAND ARGS` run in this process by the command's entry point
    (`genome_lab.pipeline.main`; `main=`: a script's `main(argv)`, a bench's), answered as a finished process (exit
    status, and stdout and stderr as its file descriptors took them): a command's refusals and small runs without the
    seconds a new process spends importing torch. A run that is killed needs a process of its own."""
    from genome_lab import pipeline
    def run(*args, main=None):
        try: code = (main or pipeline.main)([str(a) for a in args])
        except SystemExit as e:   # a usage error (argparse), or sys.exit(message)
            if isinstance(e.code, str): print(e.code, file=sys.stderr)
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        out = capfd.readouterr()
        return subprocess.CompletedProcess(['genome-lab', *args], code if isinstance(code, int) else 0, out.out, out.err)
    return run

@pytest.fixture
def bench():
    "`bench('NAME')`: bench/NAME.py as a module (registered as `bench_NAME`, so that `inspect` finds its source)."
    def load(name:str):
        spec = importlib.util.spec_from_file_location(f'bench_{name}', ROOT/'bench'/f'{name}.py')
        module = importlib.util.module_from_spec(spec); sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    return load
