"""Fixtures shared by the tests."""
import subprocess
from importlib import metadata
import pytest

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
def cli(capsys):
    """`cli('COMMAND', *args)`: `genome-lab COMMAND ARGS` run in this process by the command's entry point
    (`genome_lab.pipeline.main`; `main=`: a script's own), answered as a finished process (exit status, stdout, stderr):
    a command's refusals and small runs without the seconds a new process spends importing torch. A run that is killed
    needs a process of its own."""
    from genome_lab import pipeline
    def run(*args, main=None):
        try: code = (main or pipeline.main)([str(a) for a in args])
        except SystemExit as e: code = e.code   # a usage error (argparse)
        out = capsys.readouterr()
        return subprocess.CompletedProcess(['genome-lab', *args], code or 0, out.out, out.err)
    return run
