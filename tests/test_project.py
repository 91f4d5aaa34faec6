"""Checks of the project around the notebooks: the pipeline CLI, parameter cells, README, benchmark, install script."""
import ast, json, os, re, subprocess, sys, time
from pathlib import Path
import nbformat, pytest
from genome_lab.pipeline import list_notebooks, notebook_parameters, BUDGETS
from genome_lab.core import notebooks_dir
from genome_lab.arenas.pufferlib_import import PUFFERLIB_VERSION

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

def test_every_notebook_has_one_parsable_parameters_cell():
    names = list_notebooks()
    assert '13_registry' in names and '99_pipeline' in names
    for n in names:
        nb = nbformat.read(notebooks_dir()/f'{n}.ipynb', as_version=4)
        cells = [c for c in nb.cells if 'parameters' in c.metadata.get('tags', [])]
        assert len(cells) == 1, f"{n} must have exactly one cell tagged 'parameters'"
        assert notebook_parameters(notebooks_dir()/f'{n}.ipynb'), f"{n}: no parameters parsed"

def test_no_notebook_exports_on_run():
    for n in list_notebooks():
        src = ''.join(c.source for c in nbformat.read(notebooks_dir()/f'{n}.ipynb', as_version=4).cells)
        assert 'nbdev_export(' not in src, f"{n} would re-export the package when papermill runs it"

@pytest.fixture(scope='module')
def cli_run(tmp_path_factory): # (runs folder, finished process) of one `genome-lab run 01_arenas` that the tests share
    runs = tmp_path_factory.mktemp('runs')
    cmd = [BIN/'genome-lab', 'run', '01_arenas', '-p', 'seed=3', '--runs-dir', runs, '--run-id', 'r1']
    return runs, subprocess.run(cmd, capture_output=True, cwd=runs)   # bytes: text mode would turn \r into a newline

def test_cli_run_writes_run_folder(cli_run):
    tmp_path, r = cli_run
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, err
    rec = json.loads((tmp_path/'r1'/'run.json').read_text())
    assert rec['status'] == 'ok' and rec['results']['01_arenas']['parameters'] == {'seed': 3}
    assert rec['versions']['pufferlib'] == PUFFERLIB_VERSION and (tmp_path/'r1'/'01_arenas.ipynb').exists()
    assert not (tmp_path/'resources').exists() and not (tmp_path/'r1'/'resources').exists()
    # the console (a pipe, not a terminal: whole lines, no carriage return): the notebook started and done, then the
    # run's summary; no kernel warning (CurveZMQ keys, see 99_pipeline)
    lines = out.rstrip('\n').split('\n')
    assert '\r' not in out and lines[0] == '[genome-lab] 1/1 01_arenas ...' and lines[1].startswith('[genome-lab] 1/1 01_arenas done in '), lines
    assert lines[2].startswith('[genome-lab] run r1 (quick preset): 1 of 1 notebooks ran in '), lines
    assert lines[-1] == f"  look at it: genome-lab serve --registry {tmp_path/'r1'/'registry'} --read-only, then open http://127.0.0.1:8000/", lines
    assert 'without encryption' not in err and err.strip() == '', err
    assert not re.search(r'ERROR|Traceback|Warning', out + err), out + err   # a clean run's log: nothing went wrong
    assert rec['results']['01_arenas']['noise'] == [] and not (tmp_path/'r1'/'01_arenas.kernel.log').exists()   # nor in its kernel

def test_cli_rejects_unknown_parameter(tmp_path, cli):
    r = cli('run', '01_arenas', '-p', 'sead=3', '--runs-dir', tmp_path)
    assert r.returncode == 1 and "unknown parameter 'sead'" in r.stderr and 'seed' in r.stderr
    assert list(tmp_path.iterdir()) == []

def test_cli_resume_skips_finished(cli_run, cli):
    runs, first = cli_run
    assert first.returncode == 0, first.stderr.decode()
    mtime = (runs/'r1'/'01_arenas.ipynb').stat().st_mtime_ns
    r = cli('run', '--runs-dir', runs, '--run-id', 'r1', '--resume')
    assert r.returncode == 0, r.stderr
    assert (runs/'r1'/'01_arenas.ipynb').stat().st_mtime_ns == mtime
    assert json.loads((runs/'r1'/'run.json').read_text())['results']['01_arenas']['parameters'] == {'seed': 3}   # the record's parameters kept

def test_readme_is_generated_from_index():
    r = subprocess.run([sys.executable, ROOT/'tools'/'readme.py', '--check'], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout

def test_the_readme_quotes_the_measured_quick_run():
    """The README's quick-run time is the notebooks' wall-clock seconds in the run.json it cites (their seconds summed for a
    run from before lanes), from a run that started with every cache empty, and it says whether that was within the quick
    preset's budget."""
    readme = (ROOT/'README.md').read_text()
    secs, said, path = re.search(r'\(([\d.]+) s of notebooks on a fresh clone with empty caches, (within|over) the quick '
                                 r"preset's budget.*?`(nbs/measured/[^`]+\.json)`", readme, re.S).groups()
    run = json.loads((ROOT/path).read_text())
    total = run.get('wall_seconds', sum(r['seconds'] for r in run['results'].values()))
    assert run['status'] == 'ok' and run['preset'] == 'quick' and len(run['results']) == len(list_notebooks())
    assert f'{total:.1f}' == secs and said == ('within' if total <= BUDGETS['quick'] else 'over'), (total, secs, said)
    assert run.get('caches') == 'cold', f"{path}: caches {run.get('caches')!r}, not a run from empty caches"

def test_the_readme_quotes_the_measured_test_command():
    """The README's test-command time is the one `bench/test_command.py` measured on a fresh clone with empty caches,
    the install included, and its verdict on the 20-minute budget is that file's."""
    readme = (ROOT/'README.md').read_text()
    secs, path = re.search(r'\(([\d.]+) s on a fresh clone with empty caches, the install included: `(nbs/measured/[^`]+\.json)`',
                           readme).groups()
    rec = json.loads((ROOT/path).read_text())
    assert rec['status'] == 'ok' and rec['caches'] == 'cold' and f"{rec['seconds']:.1f}" == secs, (rec['status'], secs)
    assert rec['within_budget'] == (rec['seconds'] <= rec['budget_s'] == 1200), rec
    assert sum(rec['phases'].values()) <= rec['seconds'] + 1, rec['phases']

LAYERS = (('core',), ('arenas',), ('registry',), ('tournaments',), ('players',), ('evolution',), ('rl',), ('programs',),
          ('imagination',), ('ecosystem',), ('web',), ('broadcast',), ('pipeline',)) # the package's sub-packages, lowest first
# and in the chapters' reading order (issue 59: foundations, the registry, tournaments; the producers; the web, the broadcast)

def package_imports(pkg:Path=ROOT/'genome_lab')->set: # {(importer, imported)} between sub-packages (a module at the top: itself)
    "Every import of one of the package's sub-packages by another, at any depth of the importing module (lazy imports too)."
    top = lambda f: f.relative_to(pkg).parts[0].removesuffix('.py')
    out = set()
    for f in pkg.rglob('*.py'):
        if f.name in ('_modidx.py', '_nbdev.py', '__init__.py'): continue
        depth = len(f.relative_to(pkg).parts)
        for n in ast.walk(ast.parse(f.read_text())):
            if not isinstance(n, ast.ImportFrom) or not n.module: continue
            if n.level == 0 and n.module.startswith('genome_lab.'): q = n.module.split('.')[1]
            elif n.level == depth: q = n.module.split('.')[0]   # relative, from the package's root
            else: continue
            if q != top(f): out.add((top(f), q))
    return out

def test_sub_packages_import_only_downward():
    """Every sub-package imports only those of lower `LAYERS` (before issue 59: web imported ecosystem's `ratings_by_season`;
    then ecosystem imported web's token guard for its `/schedule` routes, imagination broadcast's canvas)."""
    layer = {p: k for k, ps in enumerate(LAYERS) for p in ps}
    edges = package_imports()
    assert {p for e in edges for p in e} <= set(layer), f"sub-packages in no layer: {({p for e in edges for p in e}) - set(layer)}"
    assert ('web', 'registry') in edges and ('web', 'ecosystem') in edges   # the graph is read at all
    upward = sorted((p, q) for p, q in edges if layer[p] <= layer[q])
    assert not upward, f"imports that do not run downward: {upward}"

def notebook_modules()->dict: # {notebook name: sorted dotted modules it exports}
    "The modules each notebook exports, read from the `# AUTOGENERATED! ... File to edit: ../nbs/NAME.ipynb` line nbdev writes."
    out = {}
    for f in (ROOT/'genome_lab').rglob('*.py'):
        if m := re.search(r'^# AUTOGENERATED!.*File to edit: (?:\.\./)+nbs/(\w+)\.ipynb', f.read_text(), re.M):
            out.setdefault(m[1], []).append('.'.join(f.relative_to(ROOT/'genome_lab').with_suffix('').parts))
    return {k: sorted(v) for k, v in out.items()}

def test_chapters_export_two_modules_at_most_and_topics_run_in_order():
    """Issue 59: a notebook exports its own module plus at most one close companion, of one topic (a sub-package of
    `genome_lab`), and every topic's notebooks are consecutive in reading (file name) order, the topics in `LAYERS` order."""
    mods = notebook_modules()
    assert len(mods) >= 40 and mods['99_pipeline'] == ['pipeline'], sorted(mods)
    assert not (many := {n: m for n, m in mods.items() if len(m) > 2}), f"notebooks exporting more than two modules: {many}"
    topic = {n: {m.split('.')[0] for m in ms} for n, ms in mods.items()}
    assert not (mixed := {n: t for n, t in topic.items() if len(t) > 1}), f"notebooks exporting two topics: {mixed}"
    order = [(n, topic[n].pop()) for n in sorted(mods)]
    runs = [t for k, (_, t) in enumerate(order) if k == 0 or t != order[k - 1][1]]
    split = {t: [n for n, u in order if u == t] for t in runs if runs.count(t) > 1}
    assert not split, f"topics whose notebooks are not consecutive: {split}"
    assert runs == [p for ps in LAYERS for p in ps], f"topics not in `LAYERS` order: {runs}"   # each reads only earlier ones

def test_registry_queries_live_in_the_registry():
    """Issue 59: no module outside genome_lab/registry/ names a registry table in SQL (the registry's classes hold its
    queries), and no registry module `@patch`es methods onto a class or derives one from a class with an empty body."""
    reg = ROOT/'genome_lab'/'registry'
    tables = {t for f in reg.glob('*.py') for t in re.findall(r'CREATE TABLE (?:IF NOT EXISTS )?(\w+)', f.read_text())}
    assert {'genomes', 'ratings', 'evaluations', 'seasons'} <= tables, tables
    sql = re.compile(r'\b(?:FROM|JOIN|INTO|UPDATE)\s+(' + '|'.join(sorted(tables)) + r')\b')
    outside = {str(f.relative_to(ROOT)): hits for f in (ROOT/'genome_lab').rglob('*.py')
               if reg not in f.parents and f.name != '_modidx.py' and (hits := sorted(set(sql.findall(f.read_text()))))}
    assert not outside, f"registry queries outside genome_lab/registry/: {outside}"
    assert not (patched := [f.name for f in reg.glob('*.py') if '@patch' in f.read_text()]), f"methods attached with @patch in {patched}"
    classes = [n for f in reg.glob('*.py') for n in ast.walk(ast.parse(f.read_text())) if isinstance(n, ast.ClassDef)]
    empty = {c.name for c in classes if all(isinstance(b, ast.Pass) or (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))
                                            for b in c.body)}   # a docstring at most: an exception's name, or a base that only splits a file
    bases = {(c.name, b.id) for c in classes for b in c.bases if isinstance(b, ast.Name) and b.id in empty and 'Error' not in b.id}
    assert len(classes) > 8 and not bases, f"registry classes on an empty base: {sorted(bases)}"

def test_exported_cells_hold_the_size_bars():
    """No exported cell over 80 lines but a one-class cell, under 20% of them with more than one top-level definition (`tools/cellstats.py`):
    the message names every offending cell. Before: 593 exported cells, 39.0% multi-definition, 15 over 80 lines."""
    r = subprocess.run([sys.executable, ROOT/'tools'/'cellstats.py', '--check'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr

def test_cellstats_names_the_cells_that_break_a_bar(tmp_path):
    "The check on a made-up notebook: an 81-line cell and two two-definition cells of four are each named; a 92-line one-class cell passes."
    code = lambda k, *lines: dict(cell_type='code', id=f'c{k}', metadata={}, outputs=[], execution_count=None,
                                  source='\n'.join(lines))
    cells = [code(0, '#| export', *[f'x{i} = {i}' for i in range(80)]),          # 81 lines, no definition
             code(1, '#| export', 'def f(): pass', 'def g(): pass'),             # two definitions
             code(2, '#|export', '@patch', 'def h(self:int): pass', 'class C: pass'),
             code(3, 'def a(): pass', 'def b(): pass'),                           # not exported: not counted
             code(4, '#| export', 'X = 1', 'class Big:', *[f'    def m{i}(self): pass' for i in range(90)])]   # one class: any length
    (tmp_path/'00_x.ipynb').write_text(json.dumps(dict(cells=cells, metadata={}, nbformat=4, nbformat_minor=5)))
    r = subprocess.run([sys.executable, ROOT/'tools'/'cellstats.py', '--check', '--nbs', tmp_path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f'{tmp_path}/00_x.ipynb cell 0 (id c0): 81 lines' in r.stdout, r.stdout
    assert '2 of 4 exported cells (50.0%) hold more than one definition' in r.stdout, r.stdout
    assert 'cell 1 (id c1): f, g' in r.stdout and 'cell 2 (id c2): h, C' in r.stdout and 'c3' not in r.stdout, r.stdout
    assert 'c4' not in r.stdout and 'over 80 lines 2 (1 of them one class)' in r.stdout, r.stdout

def test_arena_benchmark_runs(cli, bench):
    r = cli('--seconds', '0.2', '--agents', '256', main=bench('arena_throughput').main)
    assert r.returncode == 0, r.stderr
    for arena in ('snake', 'tetris'): assert f"{arena} ratio random/policy:" in r.stdout.replace('  ', ' ')

def test_build_script_refuses_a_wrong_checksum(tmp_path):
    "A package index on loopback that serves a wrong sdist: the build stops with a clear error and writes no wheel."
    import functools, http.server, threading
    (tmp_path/'simple'/'pufferlib').mkdir(parents=True)
    (tmp_path/'pufferlib-3.0.0.tar.gz').write_bytes(b'not the sdist')
    (tmp_path/'simple'/'pufferlib'/'index.html').write_text('<a href="/pufferlib-3.0.0.tar.gz#sha256=00">x</a>')
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = subprocess.run(['bash', ROOT/'tools'/'build_pufferlib.sh', sys.executable, tmp_path/'out'], capture_output=True,
                           text=True, timeout=60, env={**os.environ, 'PIP_INDEX_URL': f'http://127.0.0.1:{srv.server_port}/simple'})
    finally: srv.shutdown()
    assert r.returncode != 0 and 'sha256 mismatch' in r.stderr, r.stderr
    assert not list((tmp_path/'out').glob('*.whl'))

def test_pufferlib_version_is_the_patched_build():
    "The build script, the package's requirement and the arenas name one PufferLib build, and it is the one installed."
    from importlib import metadata
    built = subprocess.run(['bash', ROOT/'tools'/'build_pufferlib.sh', '--version'], capture_output=True, text=True, check=True).stdout.strip()
    assert built == PUFFERLIB_VERSION == metadata.version('pufferlib') and '+genomelab.' in built
    assert f'pufferlib=={built}' in metadata.requires('genome_lab')

def test_pufferlib_patch_refuses_another_sdist(tmp_path):
    "The patch stops, naming the file, when the sdist's code is not what it expects, and leaves that file unchanged."
    ocean = tmp_path/'pufferlib'/'ocean'
    for rel in ('snake/snake.h', 'tetris/tetris.h'): (ocean/rel).parent.mkdir(parents=True, exist_ok=True); (ocean/rel).write_text('int x = rand();\n')
    r = subprocess.run([sys.executable, ROOT/'tools'/'pufferlib_patch'/'apply.py', tmp_path, PUFFERLIB_VERSION], capture_output=True, text=True)
    assert r.returncode != 0 and 'snake/snake.h: expected 1' in r.stderr, r.stderr
    assert (ocean/'snake'/'snake.h').read_text() == 'int x = rand();\n'

def test_every_preset_names_declared_parameters():
    from genome_lab.pipeline import PRESETS, resolve_parameters
    for preset in PRESETS:
        params = resolve_parameters(list_notebooks(), preset)
        for nb, vals in PRESETS[preset].items(): assert params[nb] == {k: (float(v) if isinstance(v, float) else v) for k, v in vals.items()}

def module_notebooks()->dict: # {dotted module name: notebook number} of every exported module of `genome_lab`
    "Each module's notebook number, read from the `# AUTOGENERATED! ... File to edit: ../nbs/NN_name.ipynb` line nbdev writes."
    out = {}
    for f in (ROOT/'genome_lab').rglob('*.py'):
        if m := re.search(r'^# AUTOGENERATED!.*File to edit: (?:\.\./)+nbs/(\d+)_\w+\.ipynb', f.read_text(), re.M):
            out['.'.join(f.relative_to(ROOT/'genome_lab').with_suffix('').parts)] = int(m[1])
    return out

def imported_modules(mod:str, node)->list: # dotted names under `genome_lab` an import statement of module `mod` names
    if isinstance(node, ast.ImportFrom) and node.level:   # `from ..core import a` / `from . import x`
        base = '.'.join(mod.split('.')[:-node.level] + ([node.module] if node.module else []))
        return [base] + [f'{base}.{a.name}' for a in node.names]
    if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('genome_lab'):
        base = node.module.partition('.')[2]
        return [base] + [f'{base}.{a.name}'.lstrip('.') for a in node.names]
    if isinstance(node, ast.Import): return [a.name.partition('.')[2] for a in node.names if a.name.startswith('genome_lab.')]
    return []

def test_a_module_imports_only_modules_of_earlier_notebooks():
    """Notebooks run in order (nbdev-test, the docs, the pipeline): a module may import only modules of its own or
    lower-numbered notebooks, at the top or inside a function. Before: evaluation (02) imported core (03), dreaming (23)
    streaming (90), in the numbering before the layout by topic; `Registry` (`registry.store`, then 10) its table
    families (11, 12), until the facade went after them (13)."""
    t0, nbs, bad = time.perf_counter(), module_notebooks(), []
    assert nbs['core'] == 0 and nbs['arenas.arena'] == 1 and nbs['pipeline'] == 99, nbs
    for mod, n in sorted(nbs.items()):
        for node in ast.walk(ast.parse((ROOT/'genome_lab'/(mod.replace('.', '/') + '.py')).read_text())):
            bad += [f"{mod} ({n:02d}) imports {x} ({nbs[x]:02d}), line {node.lineno}" for x in imported_modules(mod, node)
                    if x in nbs and x != mod and nbs[x] > n]
    assert not bad, "a notebook may import only modules of earlier notebooks:\n" + '\n'.join(bad)
    assert time.perf_counter() - t0 < 5.0   # an AST walk of the package: well under a second on an idle machine

MAX_MODULE_LINES = 600   # issue 48's bar: a module a reader takes in at one sitting

@pytest.mark.timing
def test_modules_are_in_topic_packages_and_none_is_too_long():
    "Every exported module lives in a topic sub-package but `core` and `pipeline`, and none is over `MAX_MODULE_LINES`."
    nbs = module_notebooks()
    assert sorted(m for m in nbs if '.' not in m) == ['core', 'pipeline'], sorted(nbs)
    long = {m: n for m in nbs if (n := len((ROOT/'genome_lab'/(m.replace('.', '/') + '.py')).read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by topic): {long}"

KILLED = """
import json, os, signal, sys
import nbformat
import papermill as pm
from genome_lab.pipeline import run_pipeline
from genome_lab.registry.store import Registry
from genome_lab.registry.genomes import Genome
from genome_lab.arenas.policies import RandomPolicy
seen = sys.argv[2]
def execute(nb, out, parameters, **kw):
    reg = Registry(parameters['registry_dir'])
    with open(seen, 'a') as f: f.write(json.dumps(sorted(g for g in reg.ids())) + '\\n')
    reg.add(Genome(name='Founder', type='baseline', arena='snake', arch='random', config=dict(num_actions=4), source='t'),
            RandomPolicy(4).state_dict(), status='active')
    if sys.argv[3] == 'kill': os.kill(os.getpid(), signal.SIGKILL)   # half-way through the notebook, as a power cut would
    nbformat.write(nb, out)   # papermill writes the executed notebook (the run reads its outputs)
pm.execute_notebook = execute
resume = sys.argv[3] == 'resume'   # naming no notebooks: named, they would run again on a finished run
run_pipeline(None if resume else ['13_registry'], runs_dir=sys.argv[1], run_id='r', resume=resume, progress=False)
"""

def test_a_notebook_killed_half_way_is_resumed_from_the_registry_before_it(tmp_path):
    "Before: a resume re-ran the founding chapter (then 10_registry) against the half-written registry (founders added again, two of each name)."
    seen = tmp_path/'seen.jsonl'
    run = lambda mode: subprocess.run([sys.executable, '-c', KILLED, str(tmp_path), str(seen), mode], capture_output=True, text=True, timeout=120)
    assert run('kill').returncode == -9
    assert run('resume').returncode == 0, run
    assert [json.loads(l) for l in seen.read_text().splitlines()] == [[], []]   # the resumed notebook started from the empty registry
    from genome_lab.registry.store import Registry
    with Registry(tmp_path/'r'/'registry') as reg: assert [reg.genome(g)['name'] for g in reg.ids()] == ['Founder']
    assert json.loads((tmp_path/'r'/'run.json').read_text())['results']['13_registry']['status'] == 'ok'

def test_a_run_has_one_process(tmp_path, cli):
    from genome_lab.core import run_lock
    with run_lock(tmp_path/'r'/'.lock'):   # held here: a second hold of the lock (flock) fails in this process as in another
        (tmp_path/'r'/'run.json').write_text(json.dumps(dict(notebooks=['13_registry'], preset='quick', overrides=[], results={})))
        r = cli('run', '--runs-dir', tmp_path, '--run-id', 'r', '--resume')
    assert r.returncode == 1 and 'in use' in r.stderr, r.stderr

def test_cli_help_lists_every_command_without_torch():
    "`genome-lab --help` (and no arguments) lists every command, one line each, exit 0, without importing torch."
    from importlib import metadata
    names = ['run'] + [e.name for e in metadata.entry_points(group='genome_lab.commands')]
    code = ("import sys; from genome_lab.pipeline import main; rc = main(sys.argv[1:]); "
            "heavy = [m for m in ('torch', 'pufferlib', 'fastapi') if m in sys.modules]; "
            "assert not heavy, heavy; sys.exit(rc)")
    for args in (['--help'], []):
        r = subprocess.run([sys.executable, '-c', code, *args], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        listed = [l.split()[0] for l in r.stdout.split('commands:\n')[1].split('\n\n')[0].splitlines()]
        assert listed == sorted(names), (listed, names)
        assert all(len(l.split(None, 1)) == 2 for l in r.stdout.splitlines() if l.startswith('  ')), r.stdout
    r = subprocess.run([BIN/'genome-lab', '--version'], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"genome-lab {metadata.version('genome_lab')}", r.stdout
    r = subprocess.run([BIN/'genome-lab', 'frobnicate'], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (2, "genome-lab: error: unknown command 'frobnicate'; see 'genome-lab --help'\n"), r.stderr

@pytest.mark.timing
def test_every_command_help_answers_in_under_a_second():
    """`genome-lab COMMAND --help` for every command answers in under 1 s without importing torch, PufferLib or FastAPI,
    with the text the command's own parser prints (`command_help`'s cache, which tools/setup.sh fills; a command whose
    help is not cached for this code is filled here first, in one process)."""
    from genome_lab.pipeline import commands, command_help, source_digest, help_cache
    names = sorted(commands())
    if missing := [n for n in names if not (help_cache()/source_digest()/f'{n}.txt').exists()]:
        fill = f'from genome_lab.pipeline import command_help; [command_help(n) for n in {missing}]'
        subprocess.run([sys.executable, '-c', fill], check=True, capture_output=True, env={**os.environ, 'OMP_NUM_THREADS': '1'},
                       timeout=600)
    code = ("import sys; from genome_lab.pipeline import main; rc = main(sys.argv[1:]); "
            "heavy = [m for m in ('torch', 'pufferlib', 'fastapi') if m in sys.modules]; "
            "assert not heavy, heavy; sys.exit(rc)")
    took = {}
    for n in names:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, '-c', code, n, '--help'], capture_output=True, text=True)
        took[n] = time.perf_counter() - t0
        assert r.returncode == 0 and r.stdout == command_help(n), (n, r.stderr[-2000:])
        assert r.stdout.startswith(f'usage: genome-lab {n} ') and '--help' in r.stdout, r.stdout
    assert max(took.values()) < 1.0, took

def test_the_package_is_what_the_notebooks_export(tmp_path):
    """`nbdev-export`, run twice on a copy of the notebooks, writes the committed `genome_lab/` byte for byte: no module
    is edited by hand, and a notebook's second module (`#| export <module>`) is written afresh, not appended to
    (`genome_lab/_nbdev.py`)."""
    import filecmp, shutil
    shutil.copy(ROOT/'pyproject.toml', tmp_path)
    shutil.copytree(ROOT/'nbs', tmp_path/'nbs', ignore=shutil.ignore_patterns('measured', '.ipynb_checkpoints'))
    (tmp_path/'genome_lab').mkdir()
    for f in ('__init__.py', '_nbdev.py'): shutil.copy(ROOT/'genome_lab'/f, tmp_path/'genome_lab')   # written by hand
    for _ in range(2):
        r = subprocess.run([BIN/'nbdev-export'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
    ours = sorted(str(p.relative_to(ROOT)) for p in (ROOT/'genome_lab').rglob('*.py'))
    theirs = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path/'genome_lab').rglob('*.py'))
    assert ours == theirs
    _, differ, _ = filecmp.cmpfiles(ROOT, tmp_path, ours, shallow=False)
    assert differ == [], f"exported from the notebooks, these differ from the committed files: {differ}"
