"""The GitHub workflows (`.github/workflows/*.yml`) lint clean against the workflow JSON schema that check-jsonschema
vendors (offline: `--builtin-schema vendor.github-workflows`; actionlint is a Go binary that is not installable here),
and `test.yml` runs the README's test command on every push with the pip and apt caches."""
import shutil, subprocess, sys
from pathlib import Path
import pytest, yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT/'.github'/'workflows').glob('*.yml'))

def lint(*files)->subprocess.CompletedProcess:
    exe = Path(sys.executable).parent/'check-jsonschema'
    if not exe.exists(): pytest.fail("check-jsonschema is missing: it is among the dev extras (bash tools/setup.sh installs them)")
    return subprocess.run([exe, '--builtin-schema', 'vendor.github-workflows', *files], capture_output=True, text=True, timeout=120)

def test_workflows_lint_clean():
    assert {p.name for p in WORKFLOWS} >= {'docs.yml', 'test.yml'}
    r = lint(*WORKFLOWS)
    assert r.returncode == 0, r.stdout + r.stderr

def test_the_linter_catches_a_broken_workflow(tmp_path):
    "A workflow with a misspelt key (`step:`) and a job without `runs-on` is refused: the lint is not a formality."
    bad = tmp_path/'bad.yml'
    bad.write_text((ROOT/'.github'/'workflows'/'test.yml').read_text().replace('    steps:', '    step:').replace('    runs-on: ubuntu-latest\n', ''))
    r = lint(bad)
    assert r.returncode != 0 and 'bad.yml' in r.stdout, r.stdout + r.stderr

def test_every_push_runs_the_readme_test_command_with_caches():
    wf = yaml.safe_load((ROOT/'.github'/'workflows'/'test.yml').read_text())
    on = wf[True] if True in wf else wf['on']   # YAML 1.1 reads the key `on` as True
    steps = wf['jobs']['test']['steps']
    assert 'push' in on and any(s.get('run') == 'bash tools/test.sh' for s in steps)
    assert 'bash tools/test.sh' in (ROOT/'README.md').read_text()   # the command the README gives
    cached = [s['with']['path'] for s in steps if s.get('uses', '').startswith('actions/cache@')]
    assert any('.cache/pip' in p for p in cached) and any('/var/cache/apt' in p for p in cached), cached
