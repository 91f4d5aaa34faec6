"""The docs site and JupyterLab, checked in headless Chromium. One small quick-preset run (`genome-lab run
43_creature_store`: curves, a table and two replays) feeds both: the site is built from it with `tools/docs.py
--from-run` (every other chapter is rendered from its source) and served on loopback; JupyterLab opens the run's
executed notebook, which was never trusted. Screenshots are kept in the test's temporary folder."""
import ast, contextlib, json, os, re, subprocess, sys, time
import urllib.error, urllib.parse, urllib.request
from html.parser import HTMLParser
from pathlib import Path
import nbformat, pytest
from loopback import Page, serve_folder
from genome_lab.web.server import free_port
from genome_lab.pipeline import list_notebooks

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NOTEBOOK = '43_creature_store'
ENV = {**os.environ, 'OMP_NUM_THREADS': '1'}

@pytest.fixture(scope='module')
def run(tmp_path_factory):
    "A quick-preset run of one notebook with figures and replays."
    runs = tmp_path_factory.mktemp('runs')
    r = subprocess.run([BIN/'genome-lab', 'run', NOTEBOOK, '--runs-dir', runs, '--run-id', 'docs'], capture_output=True,
                       text=True, env=ENV, cwd=runs, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return runs/'docs'

@pytest.fixture(scope='module')
def site(run, tmp_path_factory):
    out = tmp_path_factory.mktemp('site')
    r = subprocess.run([sys.executable, ROOT/'tools'/'docs.py', '--from-run', run, '--out', out, '--work', out.parent/'docs-work',
                        '--jobs', '1'], capture_output=True, text=True, env=ENV, timeout=900)   # the suite's workers keep the cores busy
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    said = [l for l in (r.stdout + r.stderr).splitlines() if re.search(r'WARNING|ERROR|CRITICAL|SEVERE', l)]
    assert said == [], f"the docs build printed {len(said)} warnings or errors (a docstring's RST, a broken reference): {said[:10]}"
    return out

def test_quarto_config_names_files_that_exist():
    "`nbdev-docs` (where Quarto exists) reads nbs/_quarto.yml: its stylesheet and metadata files must be there."
    import yaml
    cfg = yaml.safe_load((ROOT/'nbs'/'_quarto.yml').read_text())
    css = cfg['format']['html']['css']
    assert (ROOT/'nbs'/css).is_file(), css
    generated = {'sidebar.yml'}   # written by nbdev-docs itself (custom_sidebar = false)
    assert all((ROOT/'nbs'/f).is_file() for f in set(cfg['metadata-files']) - generated)

def test_cells_run_by_nbdev_doc_processing_are_imports_only():
    """nbdev's doc preprocessing runs every cell with an import, on its own (no parameters cell, no examples): such a
    cell holds imports only, unless it is exported (see nbdev's FAQ on cells with imports and other code)."""
    bad = []
    for n in list_notebooks():
        for k, c in enumerate(nbformat.read(ROOT/'nbs'/f'{n}.ipynb', as_version=4).cells):
            if c.cell_type != 'code' or re.match(r'#\|\s*export', c.source): continue
            body = ast.parse(c.source).body
            has_import = any(isinstance(x, (ast.Import, ast.ImportFrom)) for x in ast.walk(ast.Module(body=body, type_ignores=[])))
            if has_import and not all(isinstance(x, (ast.Import, ast.ImportFrom)) for x in body): bad.append(f'{n} cell {k}')
    assert not bad, f"cells that mix imports with other code (move the imports into a cell of their own): {bad}"

def plays(page:Page, element:str)->bool:
    "Does the picture of `element` change within two seconds (an animation that plays)?"
    frames = []
    for _ in range(6):
        frames.append(page.screenshot(element=element)); time.sleep(0.4)
    return len(set(frames)) > 1

IMAGES_LOADED = "[...document.querySelectorAll('{sel}')].filter(i => i.complete && i.naturalWidth > 0).length"

def test_site_in_headless_chromium(site, tmp_path):
    pages = {p.stem for p in site.glob('*.html')}
    assert {re.sub(r'^\d+_', '', n) for n in list_notebooks()} <= pages   # every notebook is a chapter, found by number
    with serve_folder(site) as url, Page(tmp_path/'chromium') as page:
        page.goto(f'{url}/index.html')
        assert page.js("document.querySelector('h1').textContent").startswith('genome_lab')
        assert 'A notebook-first lab where agent genomes are bred' in page.js("document.body.innerText")   # the README
        nav = page.js("[...document.querySelectorAll('.navbar-nav a')].map(a => a.textContent.trim())")
        assert nav[:4] == ['Design', 'Chapters', 'API reference', 'Runbooks'], nav
        page.screenshot(tmp_path/'home.png')

        page.goto(f'{url}/design.html')   # docs/design.md: the design the chapters cite by section
        heads = page.js("[...document.querySelectorAll('h2')].map(h => h.textContent.trim())")
        assert all(any(h.startswith(t) for h in heads) for t in ('Game client', 'Selection and diversity', 'Creature physics')), heads

        page.goto(f'{url}/creature_store.html')
        n = page.wait(IMAGES_LOADED.format(sel='.cell_output img'))
        assert n >= 3, n   # the curves and the two replays (animated PNGs) have loaded
        assert page.js("document.querySelectorAll('.cell_output table').length") >= 1
        assert 'not executed' not in page.js("document.body.innerText")
        column = page.js("document.querySelector('.bd-article-container').getBoundingClientRect().width")
        assert column >= 760, column   # the content column at 1280 px (nbs/styles.css; the theme alone gives about 600)
        replay = "document.querySelectorAll('.cell_output img')[1]"
        page.js(f"{replay}.scrollIntoView({{block: 'center'}})")
        assert plays(page, replay)
        page.screenshot(tmp_path/'chapter.png')

        page.goto(f'{url}/registry.html')   # not in the run: shown as source
        assert 'This chapter was not executed for this build' in page.js("document.body.innerText")

        page.goto(f'{url}/api/evaluation.html')
        sig = page.js("document.getElementById('genome_lab.arenas.evaluation.evaluate').textContent")
        assert 'episodes_per_agent' in sig and 'max_steps' in sig, sig
        body = page.js("document.getElementById('genome_lab.arenas.evaluation.evaluate').parentElement.innerText")
        assert 'first episodes of each agent that count on each map (n = maps x agents x this)' in body, body   # its docment
        page.screenshot(tmp_path/'api.png')
        page.goto(f'{url}/api/tournament.html')
        body = page.js("document.getElementById('genome_lab.tournaments.tournament.run_tournament').parentElement.innerText")
        ret = body[body.index('Returns'):]   # each docment by its own parameter, the return's under Returns
        assert 'rating history' in ret and 'after each batch' not in ret and 'as if killed' not in ret, body

        page.goto(f'{url}/search.html?q=evaluate')
        links = page.wait("[...document.querySelectorAll('#search-results a')].map(a => a.getAttribute('href'))", 60)
        assert any(l.startswith('api/evaluation.html#genome_lab.arenas.evaluation.evaluate') for l in links), links
        page.screenshot(tmp_path/'search.html.png')

class Links(HTMLParser):
    "The ids of a page and the targets of its links and sources."
    def __init__(self):
        super().__init__(); self.ids, self.refs = set(), []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get('id'): self.ids.add(a['id'])
        for k in ('href', 'src'):
            if a.get(k) and not (tag == 'a' and k == 'src'): self.refs.append(a[k])

def test_no_internal_link_is_broken(site):
    parsed = {}
    for p in site.rglob('*.html'):
        if '_static' in p.relative_to(site).parts: continue   # the theme's template files, not pages
        parsed[p] = Links(); parsed[p].feed(p.read_text())
    broken, checked = [], 0
    for p, links in parsed.items():
        for ref in links.refs:
            u = urllib.parse.urlsplit(ref)
            if u.scheme or ref.startswith('//'): continue   # external, data: and mailto: links are not followed
            target = (p.parent/urllib.parse.unquote(u.path)).resolve() if u.path else p
            if target.is_dir(): target = target/'index.html'
            checked += 1
            if not target.exists(): broken.append(f'{p.relative_to(site)}: {ref}')
            elif u.fragment and target.suffix == '.html':
                if target not in parsed: parsed[target] = Links(); parsed[target].feed(target.read_text())
                if urllib.parse.unquote(u.fragment) not in parsed[target].ids: broken.append(f'{p.relative_to(site)}: {ref} (no such id)')
    assert checked > 1000 and not broken, (checked, broken[:20])

@contextlib.contextmanager
def jupyterlab(root:Path, home:Path, token:str):
    "JupyterLab on loopback serving `root`, with its own (empty) config, data and settings folders; yields its URL."
    port = free_port()
    env = {**ENV, 'JUPYTER_CONFIG_DIR': str(home/'config'), 'JUPYTER_DATA_DIR': str(home/'data'),
           'JUPYTER_RUNTIME_DIR': str(home/'runtime'), 'JUPYTERLAB_SETTINGS_DIR': str(home/'settings'),
           'JUPYTERLAB_WORKSPACES_DIR': str(home/'workspaces')}
    tracker = home/'settings'/'@jupyterlab'/'notebook-extension'/'tracker.jupyterlab-settings'
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({'windowingMode': 'none'}))   # render every cell, not only those in view
    news = home/'settings'/'@jupyterlab'/'apputils-extension'/'notification.jupyterlab-settings'
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({'fetchNews': 'false'}))   # no question about news over the notebook
    proc = subprocess.Popen([BIN/'jupyter', 'lab', '--no-browser', '--ip=127.0.0.1', f'--port={port}', f'--ServerApp.root_dir={root}',
                             f'--IdentityProvider.token={token}', '--ServerApp.port_retries=0', '--allow-root'],
                            env=env, stdout=subprocess.DEVNULL, stderr=open(home/'jupyterlab.log', 'w'))
    url = f'http://127.0.0.1:{port}'
    try:
        t0 = time.time()
        while True:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f'{url}/api/status?token={token}', timeout=5).status == 200: break
            assert proc.poll() is None and time.time() - t0 < 120, (home/'jupyterlab.log').read_text()[-3000:]
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try: proc.wait(20)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()

def test_jupyterlab_renders_an_untrusted_executed_notebook(run, tmp_path):
    token = 'lab-token-' + os.urandom(8).hex()
    with jupyterlab(run, tmp_path/'jupyter', token) as url, Page(tmp_path/'chromium', 1400, 1000) as page:
        with pytest.raises(urllib.error.HTTPError):   # the token is needed
            urllib.request.urlopen(f'{url}/api/contents/{NOTEBOOK}.ipynb', timeout=10)
        model = json.load(urllib.request.urlopen(f'{url}/api/contents/{NOTEBOOK}.ipynb?token={token}', timeout=30))
        code = [c for c in model['content']['cells'] if c['cell_type'] == 'code']
        assert code and not any(c['metadata'].get('trusted') for c in code)   # the server does not trust it
        page.goto(f'{url}/lab/tree/{NOTEBOOK}.ipynb?token={token}', 120)
        title = page.wait("document.querySelector('.jp-Notebook .jp-RenderedMarkdown h1')?.textContent", 120)
        assert title.startswith('Creature runs'), title
        n_cells = page.wait("document.querySelectorAll('.jp-Notebook .jp-Cell').length", 60)
        assert n_cells > 20, n_cells
        images = page.wait(IMAGES_LOADED.format(sel='.jp-OutputArea-output img'), 60)
        assert images >= 3, images   # the curves and both replays render without trusting the notebook
        assert page.js("document.querySelectorAll('.jp-Dialog').length") == 0   # no error dialog
        assert page.js("document.querySelectorAll('.jp-RenderedJavaScript, .jp-OutputArea-output script').length") == 0
        page.screenshot(tmp_path/'jupyterlab-top.png')
        replay = "document.querySelectorAll('.jp-OutputArea-output img')[1]"
        page.js(f"{replay}.scrollIntoView({{block: 'center'}})")
        assert plays(page, replay)
        page.screenshot(tmp_path/'jupyterlab-replay.png')
