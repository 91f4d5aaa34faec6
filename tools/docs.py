"""Build the docs site into `_docs/` with Sphinx and myst-nb (Quarto, which `nbdev-docs` needs, is not installable here).

The chapters are the numbered notebooks in number order (the card's chapter order), as a pipeline run executed them,
figures and tables included; a notebook the run did not execute is shown as its source. The home page is the README's
content, the design page is `docs/design.md` (the architecture and the ideas the chapters cite), the API reference has
one page per module (autodoc, with each parameter's docment), and the runbooks are the pages under `docs/runbooks/`.
Search is Sphinx's own (client-side, no server needed).

    python tools/docs.py                       # runs the quick pipeline into runs/<id>/ first (minutes), then builds
    python tools/docs.py --from-run runs/ID    # builds from a finished run, e.g. `genome-lab run 13_registry`
"""
import argparse, ast, importlib, itertools, json, re, shutil, sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = {0: 'Foundations: arenas, policies, evaluation, rendering', 1: 'The registry',
            2: 'Tournaments and the season contract', 3: 'Players: sessions, cloning, clustering',
            4: 'Evolution: replicator, hypernetwork, creatures', 5: 'Self-play RL', 6: 'Programs and LLM search',
            7: 'Imagination (world models), seasons and the ecosystem', 8: 'The web: server, clients, play and pages',
            9: 'Broadcast and the pipeline'}   # by the tens digit of a notebook's number
DIRECTIVE = re.compile(r'^#\|\s*(\w+)(.*)$')

def directives(source:str)->dict: # {name: rest of the line} of a cell's leading `#|` lines
    out = {}
    for line in source.splitlines():
        if not (m := DIRECTIVE.match(line)): break
        out[m.group(1)] = m.group(2).strip()
    return out

def strip_directives(source:str)->str:
    lines = source.splitlines()
    while lines and DIRECTIVE.match(lines[0]): lines.pop(0)
    return '\n'.join(lines)

def cell_module(source:str, default:str|None)->str|None: # the module an exported cell goes to: `#| export <module>`'s, or the default
    return (directives(source).get('export') or '').split(' ')[0] or default

def modules_of(nb)->list: # the notebook's modules: its `default_exp`, then every other `#| export <module>` target in order
    code = [c.source for c in nb.cells if c.cell_type == 'code']
    default = next((d['default_exp'] for s in code if 'default_exp' in (d := directives(s))), None)
    out = [default] if default else []
    for s in code:
        if 'export' in directives(s) and (m := cell_module(s, default)) and m not in out: out.append(m)
    return out

def public_defs(source:str, exported:set)->list: # [(kind, name)] of the cell's top-level functions and classes in `__all__`
    try: tree = ast.parse(source)
    except SyntaxError: return []
    kinds = {ast.FunctionDef: 'autofunction', ast.AsyncFunctionDef: 'autofunction', ast.ClassDef: 'autoclass'}
    return [(kinds[type(n)], n.name) for n in tree.body if type(n) in kinds and n.name in exported]

def api_cell(module:str, defs:list)->nbformat.NotebookNode:
    "A markdown cell documenting `defs` like nbdev's `show_doc`: signature, docstring and docments (indexed on the API page)."
    rst = [f".. {kind}:: genome_lab.{module}.{name}\n   :no-index:\n" + ("   :members:\n" if kind == 'autoclass' else '')
           for kind, name in defs]
    return nbformat.v4.new_markdown_cell("```{eval-rst}\n" + '\n'.join(rst) + "```")

def page_cells(c, exported:set)->tuple: # (the cells that show notebook cell `c`, its public definitions or None)
    """Hidden, directive-only and papermill's injected cells go; exported code is folded (its input hidden) and gives
    the public definitions it holds; None for any other cell."""
    if 'injected-parameters' in c.metadata.get('tags', []): return [], None
    if c.cell_type == 'raw' and c.source.startswith('#|'):   # a flagged cell the run skipped (`slow`, `cuda`)
        c = nbformat.v4.new_code_cell(c.source, metadata=c.metadata)
    if c.cell_type != 'code': return [c], None
    d, c.source = directives(c.source), strip_directives(c.source)
    if 'hide' in d or not c.source.strip(): return [], None
    if 'export' not in d: return [c], None
    c.metadata['tags'] = [*c.metadata.get('tags', []), 'hide-input']
    return [c], public_defs(c.source, exported)

def chapter(nb, modules:list, executed:bool, page:str)->nbformat.NotebookNode:
    """The notebook as a page (see `page_cells`): a run of exported cells of one module is folded, followed by one block
    of API entries for all of them (one per run, not per cell: Sphinx's time grows with the number of blocks), with a link
    to its API page (all its modules) and a note when the run did not execute it."""
    exported = {m: set(getattr(importlib.import_module(f'genome_lab.{m}'), '__all__', ())) for m in modules}
    cells, defs, run_module = [], [], None
    for c in nb.cells:
        m = cell_module(c.source, modules[0] if modules else None) if c.cell_type == 'code' else None
        shown, ds = page_cells(c, exported.get(m, set()))
        if defs and ((ds is None and shown) or (ds is not None and m != run_module)): cells.append(api_cell(run_module, defs)); defs = []
        if ds: run_module = m
        cells += shown; defs += ds or []
    if defs: cells.append(api_cell(run_module, defs))
    links = [f"API: [{', '.join(f'`genome_lab.{m}`' for m in modules)}](api/{page}.md)"] if modules else []
    if not executed: links.append("*This chapter was not executed for this build: it shows the notebook's source.*")
    if links: cells.insert(1, nbformat.v4.new_markdown_cell('\n\n'.join(links)))
    nb.cells = cells
    # each cell's first line, as if the cells were one file: without it myst-nb numbers cell k's lines from 10,000*(k+1)
    # and pads an `{eval-rst}` block with as many blank lines (25M lines parsed for one chapter, 30 s)
    nb.metadata['source_map'] = list(itertools.accumulate([c.source.count('\n') + 1 for c in cells[:-1]], initial=0))
    return nb

def toctree(entries:list, caption:str|None=None, hidden:bool=False)->str:
    opts = [':maxdepth: 1'] + ([f':caption: {caption}'] if caption else []) + ([':hidden:'] if hidden else [])
    return '```{toctree}\n' + '\n'.join(opts) + '\n\n' + '\n'.join(entries) + '\n```\n'

def page_name(notebook:str)->str: return re.sub(r'^\d+_', '', notebook)   # nbdev's page name: 03_evaluation -> evaluation

def write_chapters(src:Path, names:list, run:Path)->list: # [(notebook, [its modules], executed)]
    record = json.loads((run/'run.json').read_text())
    ok = {n for n, r in record['results'].items() if r.get('status') == 'ok'}
    pages = [page_name(n) for n in names]
    if dup := sorted({p for p in pages if pages.count(p) > 1} | ({'index', 'design', 'chapters', 'search', 'genindex'} & set(pages))):
        raise RuntimeError(f"notebooks {dup} would make pages with the same or a reserved name: rename one")
    out = []
    for n in names:
        executed = n in ok
        nb = nbformat.read((run if executed else ROOT/'nbs')/f'{n}.ipynb', as_version=4)
        modules = modules_of(nb)
        nbformat.write(chapter(nb, modules, executed, page_name(n)), src/f'{page_name(n)}.ipynb')
        out.append((n, modules, executed))
    groups = {}
    for n, _, _ in out: groups.setdefault(int(n[0]), []).append(page_name(n))
    n_run = sum(e for *_, e in out)
    run_line = (f"Executed by run `{record['run_id']}` (preset `{record['preset']}`, commit "
                f"`{(record.get('git_commit') or '?')[:10]}`): {n_run} of {len(out)} notebooks"
                + ("." if n_run == len(out) else "; the others are shown as source."))
    page = ["# Chapters", "", "The notebooks in the card's chapter order, each a chapter: prose, code, figures, tables "
            "and tests. " + run_line, ""]
    page += [toctree(ps, CHAPTERS.get(d, f'Chapter {d}')) for d, ps in sorted(groups.items())]
    (src/'chapters.md').write_text('\n'.join(page))
    return out

def write_api(src:Path, chapters:list):
    "One API page per chapter, named as the chapter's page, with its modules (a notebook's second modules too)."
    (src/'api').mkdir()
    pages = [(page_name(n), ms) for n, ms, _ in chapters if ms]
    for page, ms in pages:
        body = '\n'.join((f"## genome_lab.{m}\n\n" if len(ms) > 1 else '')   # a lone module: the page's title names it
                         + f"```{{eval-rst}}\n.. automodule:: genome_lab.{m}\n   :members:\n```\n" for m in ms)
        more = f"; its other modules: {', '.join(f'`genome_lab.{m}`' for m in ms[1:])}" if len(ms) > 1 else ''
        (src/'api'/f'{page}.md').write_text(f"# genome_lab.{ms[0]}\n\nChapter: [](../{page}.ipynb){more}\n\n{body}")
    (src/'api'/'index.md').write_text("# API reference\n\nOne page per chapter with its modules, in the notebooks' order; each "
                                       "signature comes with its parameters' docments (shapes, units, what they mean).\n\n"
                                       + toctree([p for p, _ in pages]))

def write_home(src:Path):
    readme = (ROOT/'README.md').read_text()
    readme = re.sub(r'^<!--.*?-->\s*', '', readme, flags=re.S)   # the "generated from" comment
    (src/'index.md').write_text(readme + '\n' + toctree(['design', 'chapters', 'api/index', 'runbooks/index'], hidden=True))

def build(run:Path, out:Path, work:Path, jobs:str='auto')->Path:
    """Stage the pages in `work/src` and build the HTML site into `out` from run folder `run` with `jobs` Sphinx processes
    ('auto': one per core); returns `out/index.html`."""
    from genome_lab.pipeline import list_notebooks
    from sphinx.cmd.build import build_main
    if not (run/'run.json').exists(): raise FileNotFoundError(f"{run} is not a run folder (no run.json)")
    src = work/'src'
    if src.exists(): shutil.rmtree(src)
    shutil.copytree(ROOT/'docs', src)
    (src/'_static').mkdir(exist_ok=True); shutil.copy(ROOT/'nbs'/'styles.css', src/'_static'/'styles.css')
    write_home(src)
    write_api(src, write_chapters(src, list_notebooks(), run))
    html = work/'html'   # myst-nb writes its files beside the output folder: keep them in `work`
    if build_main(['-b', 'html', '-q', '-j', jobs, '-d', str(work/'doctrees'), str(src), str(html)]) != 0:
        raise RuntimeError("sphinx-build failed (see the messages above)")
    if out.exists(): shutil.rmtree(out)
    shutil.copytree(html, out)
    return out/'index.html'

def main(argv=None)->int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--from-run', type=Path, help='a run folder (runs/<id>) whose executed notebooks to show; default: run the quick pipeline first')
    ap.add_argument('--runs-dir', type=Path, default=ROOT/'runs', help='where the quick run goes when no --from-run is given')
    ap.add_argument('--out', type=Path, default=ROOT/'_docs', help='the site folder')
    ap.add_argument('--work', type=Path, default=ROOT/'_build'/'docs', help='staged pages and Sphinx caches')
    ap.add_argument('--jobs', default='auto', help="Sphinx's processes: 'auto' (one per core), or 1 where the cores are "
                    "busy anyway (a parallel build spends a third more CPU: 113 s against 84 s on 2 cores)")
    a = ap.parse_args(argv)
    from genome_lab.pipeline import run_pipeline, NotebookFailed
    try: print(f"docs: site built: {build(a.from_run or run_pipeline(runs_dir=a.runs_dir), a.out, a.work, a.jobs)}")
    except (FileNotFoundError, RuntimeError, NotebookFailed) as e:
        print(f"docs: error: {e}", file=sys.stderr); return 1
    return 0

if __name__ == '__main__': sys.exit(main())
