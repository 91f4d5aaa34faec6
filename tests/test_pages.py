"""Every page a newcomer reaches, walked in headless Chromium (tests/loopback.py) on a registry that holds what the quick
pipeline makes: every arena's founders and baselines rated by a tournament tagged as a season, an evolved program, a
league-named genome, candidates beside the active genomes, a highlight clip, producers' scalars of 1 to 3 points.
The walk opens every page the home page links, then what those pages link a person on to (a genome page of each kind,
by id and by name, a highlight and a game of each arena (snake, tetris, creatures) in the viewer, a genome's games),
and fails on any answer of 500 or more, any console error or uncaught exception, and any request that leaves for another host. `GENOME_LAB_WALK_REGISTRY=runs/<id>/registry` walks a real run's
registry too (copied, served read-only). `GENOME_LAB_SCREENSHOTS=<folder>` keeps the screenshots there (home,
leaderboard, dashboard, viewer index, a game in the viewer, the game at /play, a program's page), not in the test's own folder."""
import os, shutil, urllib.parse
import httpx, pytest
from genome_lab.core import log_scalars
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome
from genome_lab.arenas.policies import RandomPolicy
from genome_lab.programs.tetris_players import tetris_baselines
from genome_lab.evolution.creature_store import creature_baselines
from genome_lab.programs.program_policy import program_genome
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.broadcast.highlights import HighlightStore, HighlightConfig, record_highlights, HIGHLIGHTS_DIR
from genome_lab.web.server import create_app, serve_in_thread
from loopback import Page, screenshots

OUTSIDE = 'https://cdn.redoc.ly/redoc/logo-mini.svg' # ReDoc's own "API docs by Redocly" logo: its page's policy refuses it, a console line (tests/test_home.py)

@pytest.fixture(scope='module')
def quick_registry(tmp_path_factory):
    "What a quick run leaves, made in seconds."
    root = tmp_path_factory.mktemp('pages')/'registry'
    with Registry(root) as reg:
        ids = seed_founders(reg) | tetris_baselines(reg) | creature_baselines(reg)
        rnd = dict(type='rl', arena='snake', arch='random', config=dict(num_actions=4))
        reg.add(Genome(name=reg.genome_name('league', ids['PufferSnake']), source='league', parents=[dict(id=ids['PufferSnake'], relation='self-play')], **rnd),
                RandomPolicy(4).state_dict(), status='active')
        farmer = reg.add(Genome(name=reg.genome_name('tune', ids['PufferSnake']), source='hybrids', **dict(rnd, type='hybrid'),
                                parents=[dict(id=ids['PufferSnake'], relation='finetune')]), RandomPolicy(4).state_dict())
        reg.offer(farmer.id, 'hybrids')
        prog = reg.add(program_genome(reg.genome_name('prog', ids['Dellacherie']), 'tetris', reg.genome(ids['Dellacherie'])['config']['source'],
                                      parents=[dict(id=ids['Dellacherie'], relation='mutation')]), {})
        reg.offer(prog.id, 'programs')
        small = dict(width=24, height=16, num_food=12)
        t = run_tournament(reg, arena='snake', agents_per_genome=2, steps=40, progress=False, settings=small, tags=dict(season=1))
        in_arena = lambda a: [i for i in reg.ids('active') if reg.genome(i)['arena'] == a]
        run_tournament(reg, [*in_arena('snake'), farmer.id], arena='snake', agents_per_genome=2, steps=40, seed=1, progress=False,
                       settings=small, tags=dict(season=2))
        run_tournament(reg, arena='creatures', steps=50, progress=False, tags=dict(season=1))
        run_tournament(reg, [*in_arena('tetris'), prog.id], arena='tetris', agents_per_genome=1, steps=50, progress=False, tags=dict(season=1))
        with HighlightStore(root/HIGHLIGHTS_DIR) as store:
            record_highlights(reg, store, t.evaluation, HighlightConfig(width=320, height=180, before=5, after=2, min_record=2), max_games=1)
            assert store.clips(), "no highlight was cut"
    log_scalars(root, 'ppo', 'season-1', [{'round': 1, 'charts/agent_steps': 16384.0}], 'round')
    log_scalars(root, 'hybrids', 'season-1', [{'epoch': e, 'losses/bc': 1.0 / e} for e in (1, 2, 3)], 'epoch')
    return root

def links(p:Page, selector:str)->list: # the hrefs, in page order, without repeats
    return list(dict.fromkeys(p.js(f"[...document.querySelectorAll({selector!r})].map(a => a.getAttribute('href')).filter(h => h)")))

def walk(url:str, p:Page, shots)->dict: # {path: status} of every page opened
    "Open every page `/` links, then those a person goes on to; `shots`: where the screenshots go."
    bad, seen = [], {}
    p.page.on('response', lambda r: bad.append((r.status, r.url)) if r.status >= 500 else None)
    here = urllib.parse.urlsplit(url).netloc
    def outside(r, failed:bool):   # offline: no request leaves for another host (one the page's policy blocks is never sent)
        u = urllib.parse.urlsplit(r.url)
        if u.scheme in ('http', 'https', 'ws', 'wss') and u.netloc != here and not (failed and 'csp' in (r.failure or '').lower()):
            bad.append(('outside', r.url, r.failure))   # the failure text, if any, says why it was not excused
    p.page.on('requestfinished', lambda r: outside(r, False)); p.page.on('requestfailed', lambda r: outside(r, True))
    def visit(path:str, ready:str="document.readyState === 'complete'", shot:str|None=None):
        if path in seen: return
        r = p.page.goto(url + path, wait_until='load', timeout=60_000)
        seen[path] = r.status
        p.wait(ready, 60)
        if shot: p.page.screenshot(path=shots/shot, full_page=True)
    p.goto(f'{url}/')
    home, data = links(p, '#pages a') + links(p, '#api-docs a'), links(p, '#data a')
    p.page.screenshot(path=shots/'home.png', full_page=True)
    schema = httpx.get(f'{url}/openapi.json').json()['paths']
    for h in data:   # JSON a browser opens: an answer, or a refusal the API documents (/schedule: 409 on a server without a scheduler)
        r = httpx.get(url + h, timeout=60); seen[h] = r.status_code
        if r.status_code != 200 and str(r.status_code) not in schema[h]['get'].get('responses', {}): bad.append((r.status_code, url + h))
    for h in home:
        ready = {'/leaderboard': "document.body.dataset.rendered === 'yes'", '/dashboard': "Number(document.body.dataset.charts) > 0",
                 '/docs': "document.querySelectorAll('.opblock').length > 0", '/stream/playlist': "window.playlistStats && window.playlistStats.played.length > 0",
                 '/stream': "window.streamStats && window.streamStats.connected",
                 # ReDoc has drawn the API and its logo's request has failed (the policy refused it; the link is left as text):
                 # moving on before that aborts the request, and an aborted request to another host is not excused
                 '/redoc': "document.querySelector('.api-content') && [...document.querySelectorAll('a[href*=\"redocly.com\"]')].some(a => !a.querySelector('img'))"}.get(h, "document.readyState === 'complete'")
        visit(h, ready, {'/leaderboard': 'leaderboard.png', '/dashboard': 'dashboard.png', '/viewer': 'viewer-index.png',
                         '/stream/playlist': 'playlist.png'}.get(h))
        if h == '/leaderboard': genomes = links(p, 'table.top a')
        if h == '/play':   # a game under way, started as a person starts one
            until = lambda cond: p.js(f"""new Promise(ok => {{ const t0 = Date.now(); (function f() {{ if (window.play && {cond}) ok(true);
                                          else if (Date.now() - t0 > 30000) ok(false); else setTimeout(f, 100); }})(); }})""")
            p.page.fill('#player', 'walker'); p.page.click('#start')   # read-only: no consent box
            shown = until("window.play.frames >= 1")   # the socket is open: a key pressed now is sent (one pressed before is dropped)
            p.page.keyboard.press('ArrowUp')           # a key starts the game
            started = shown and until("window.play.frames >= 5 && window.play.last.t > 0")
            p.page.screenshot(path=shots/'play.png', full_page=True)
            if not started: bad.append(('no frame in 30 s', url + h))
        if h == '/viewer':   # a highlight, then the first game of each arena's newest tournament (snake, tetris, creatures)
            arenas = dict(reversed(p.js("[...document.querySelectorAll('details')].map(d => [d.querySelector('summary b').textContent.split(' ')[0],"
                                         " d.querySelector('ol.games a').getAttribute('href')])")))
            games = links(p, '#highlights a')[:1] + list(arenas.values())
        if h == '/stream/playlist': clips = links(p, '#list a')
    return dict(seen=seen, bad=bad, home=home + data, genomes=genomes, games=games, arenas=arenas, clips=clips, visit=visit)

def check_walk(url:str, p:Page, shots, registry):
    w = walk(url, p, shots)
    with Registry(registry, read_only=True) as reg:
        kinds = {}
        for h in w['genomes']:   # a genome page of each type and status (a program, a creature, a league genome, a candidate ...)
            g = reg.genome(urllib.parse.unquote(h.rsplit('/', 1)[1]))
            kinds.setdefault((g['type'], g['status']), (h, g))
    for (kind, status), (h, g) in sorted(kinds.items()):
        w['visit'](f'/{h.lstrip("/")}', shot='program.png' if kind == 'program' else None)
        played = links(p, '#stored-games a')   # its games, in the viewer
        w['visit'](f'/genome/{urllib.parse.quote(g["name"])}')   # the page by name too
        if played: w['visit'](played[0], "document.body.dataset.rendered === 'yes'")
    for h in w['games'] + w['clips'][:1]: w['visit'](h, "document.body.dataset.rendered === 'yes'", shot='viewer-game.png')
    return w, kinds

def test_every_page_a_newcomer_reaches_works(quick_registry, tmp_path):
    with serve_in_thread(create_app(quick_registry)) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        w, kinds = check_walk(url, p, screenshots(tmp_path), quick_registry)
        w['visit']('/stream?mode=mjpeg', "window.streamStats && window.streamStats.painted >= 3", shot='stream-mjpeg.png')   # no clock stamp: frames still count
        mjpeg = p.js("[document.getElementById('mode').textContent, document.getElementById('frames').textContent]")
        errors = [e for e in p.errors if OUTSIDE not in e]
        notes = p.js("fetch('/api/leaderboard').then(r => r.json()).then(d => d.notes)")
    assert {'/leaderboard', '/dashboard', '/viewer', '/stream', '/stream/playlist', '/docs', '/health'} <= set(w['home']), w['home']
    assert w['bad'] == [] and errors == [], (w['bad'], errors)
    assert all(s == 200 for k, s in w['seen'].items() if k != '/schedule'), {k: s for k, s in w['seen'].items() if s != 200}
    assert {('program', 'candidate'), ('baseline', 'active'), ('rl', 'active'), ('hybrid', 'candidate')} <= set(kinds), sorted(kinds)
    assert w['games'] and w['clips'] and any('/viewer?evaluation=' in h for h in w['seen']), w['seen']
    assert set(w['arenas']) == {'snake', 'tetris', 'creatures'} and all(h in w['seen'] for h in w['arenas'].values()), w['arenas']   # each replayed
    assert mjpeg[0] == 'MJPEG' and int(mjpeg[1].removeprefix('frames: ')) >= 3, mjpeg   # issue 58: it said "frames: 0" while playing
    assert 'random reference' not in notes.get('creatures', ''), notes   # the gait founder is not random: no such note

@pytest.mark.skipif(not os.environ.get('GENOME_LAB_WALK_REGISTRY'), reason='set GENOME_LAB_WALK_REGISTRY to walk a real run')
def test_a_real_runs_pages_work(tmp_path):
    root = shutil.copytree(os.environ['GENOME_LAB_WALK_REGISTRY'], tmp_path/'registry')
    with serve_in_thread(create_app(root)) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        w, kinds = check_walk(url, p, shots := screenshots(tmp_path), root)
        errors = [e for e in p.errors if OUTSIDE not in e]
    print(f"walked {len(w['seen'])} pages of {root} ({len(kinds)} kinds of genome); screenshots in {shots}")
    assert w['bad'] == [] and errors == [], (w['bad'], errors)
    assert all(s == 200 for k, s in w['seen'].items() if k != '/schedule'), {k: s for k, s in w['seen'].items() if s != 200}

def test_a_mistyped_genome_is_an_html_page_with_the_names_near_it(quick_registry, tmp_path):
    "Issue 58: `/genome/<typo>` and unknown paths answered raw JSON in a browser; now a page in the site's frame, with did-you-mean."
    with serve_in_thread(create_app(quick_registry)) as url, Page(tmp_path/'chromium', 1280, 700) as p:
        r = p.page.goto(f'{url}/genome/PufferSnak', wait_until='load')
        p.page.screenshot(path=screenshots(tmp_path)/'not-found.png', full_page=True)
        shown = p.js("[document.querySelector('h1').textContent, document.querySelectorAll('nav.site a').length, "
                     "[...document.querySelectorAll('main a')].map(a => a.getAttribute('href'))]")
        other = p.page.goto(f'{url}/no/such/page', wait_until='load')
        nav = p.js("document.querySelectorAll('nav.site a').length")
    assert r.status == 404 and shown[0] == 'Not found' and shown[1] > 5 and '/genome/PufferSnake' in shown[2], shown
    assert other.status == 404 and nav == shown[1]
