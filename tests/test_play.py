"""The browser game (`/play`, genome_lab.web.play) played by a script with the keyboard in headless Chromium (Debian's
chromium under Playwright, tests/loopback.py): enemies carry genome names, a death shows the killer's name and
registry record and a link to its page, the session goes up chunk by chunk under the name the page claimed for this
browser, and after a season (its clones producer, its tournaments, its selection) the clone of that player's sessions
is rated, protected, and shows on the contribution panel. The view follows the person's snake, its name is drawn
apart, enemy names are drawn only near it and never overlap, the overlay shows score, length, rank and kills.
Screenshots of the game, the death screen and the panel are kept in the test's folder."""
import time
import pytest
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.web.server import create_app, serve_in_thread
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.web.play_game import PlayConfig
from genome_lab.web.play import PLAYER_COOKIE
from genome_lab.ecosystem.seasons import run_season, SeasonConfig
from genome_lab.players.sessions import uploaded_sessions, read_session
from genome_lab.tournaments.selection import is_protected
from loopback import Page

# the scripted player, one arrow key per frame: for 12 steps it heads for food through free cells, then for the nearest
# cell of an enemy snake (frame codes >= 16), so that an enemy genome kills it
STEER = """(() => {
  const f = window.play.last, W = window.play.start.width, raw = atob(f.cells), [hr, hc] = f.you;
  const at = (r, c) => raw.charCodeAt(r * W + c), hunt = f.t >= 12, want = v => hunt ? v >= 16 : v === 1;
  let best = null;
  for (let i = 0; i < raw.length; i++) if (want(raw.charCodeAt(i))) {
    const r = Math.floor(i / W), c = i % W, d = Math.abs(r - hr) + Math.abs(c - hc);
    if (best === null || d < best[0]) best = [d, r, c];
  }
  const score = ([, dr, dc]) => {
    const v = at(hr + dr, hc + dc), free = v <= 2 || (hunt && v >= 16);
    return (free ? 0 : 1000) + (best ? Math.abs(best[1] - hr - dr) + Math.abs(best[2] - hc - dc) : 0);
  };
  const moves = [["ArrowUp", -1, 0], ["ArrowDown", 1, 0], ["ArrowLeft", 0, -1], ["ArrowRight", 0, 1]];
  return moves.reduce((a, b) => score(b) < score(a) ? b : a)[0];
})()"""

SEASON = SeasonConfig(producers='clones', producer_settings={'clones': dict(clone_hidden=8, clone_epochs=1)},
                      max_meetings=1, arena_settings=dict(snake=dict(steps=60, agents=2, width=30, height=20, num_food=20),
                                                          tetris=dict(steps=30, agents=1)))

@pytest.fixture
def root(tmp_path):
    with Registry(tmp_path/'reg') as reg:
        seed_founders(reg)   # a small tournament gives the founders their records (win rate, games)
        run_tournament(reg, genomes_per_game=3, agents_per_genome=2, steps=60, meetings=4, seed=0, progress=False,
                       settings=dict(width=30, height=20, num_food=20))
    return tmp_path/'reg'

def test_play_a_scripted_game(root, tmp_path):
    app = create_app(root, token='play-test-token')
    app.state.play_config = PlayConfig(enemies=24, fps=15, protect_s=1.0, min_steps=10, chunk_rows=2, map=dict(width=32, height=20, num_food=20))
    with Registry(root) as reg:
        names = {g['name']: g for g in reg.manifest()['genomes'] if g['arena'] == 'snake'}
    with serve_in_thread(app) as url, Page(tmp_path/'chromium', 1280, 800) as p:
        p.goto(f'{url}/play?seed=5')
        nav = p.js("[...document.querySelectorAll('nav.site a')].map(a => [a.getAttribute('href'), a.getAttribute('aria-current')])")
        p.page.fill('#player', 'ivy'); p.page.check('#consent'); p.page.click('#start')
        deaths = []
        for game in range(3):   # a stale key can make the script run into itself: then it plays again
            if game: p.page.click('#again')
            p.wait('window.play.frames >= 1')
            pressed, t0 = [], time.monotonic()
            while not p.js('window.play.death') and time.monotonic() - t0 < 30:
                key = p.js(STEER); p.page.keyboard.press(key); pressed.append(key)
                if game == 0 and len(pressed) == 6:   # the game under way, still under spawn protection
                    labels, boxes, hud = p.js('window.play.labels'), p.js('window.play.boxes'), p.js('window.play.hud')
                    view, last = p.js('window.play.view'), p.js('window.play.last')
                    legend = p.js("[...document.querySelectorAll('#legend li a')].map(a => [a.innerText, a.getAttribute('href')])")
                    p.screenshot(tmp_path/'game.png')
                time.sleep(0.03)
            p.wait('window.play.closed')
            death, closed, uploads = p.js('window.play.death'), p.js('window.play.closed'), p.js('window.play.uploads')
            deaths.append(death)
            if death['killer'] in names: break
        shown = p.js("['killer', 'record'].map(id => document.getElementById(id).innerText)")
        link = p.js("document.querySelector('#killer a') && document.querySelector('#killer a').getAttribute('href')")
        cookie = {c['name']: c for c in p.context.cookies()}.get(PLAYER_COOKIE)
        p.screenshot(tmp_path/'death.png')
        with Registry(root) as reg:   # a season (small games): its clones producer clones ivy's sessions
            season = run_season(reg, SEASON)
            clone = reg.genome(reg.by_name('Ivy-clone1'))
        p.goto(f'{url}/play')
        p.page.fill('#player', 'ivy'); p.page.dispatch_event('#player', 'change')   # the panel asks the server again
        p.wait("document.querySelectorAll('#contrib li').length > 0")
        panel = p.js("[...document.querySelectorAll('#contrib li')].map(li => [li.dataset.genome, li.innerText])")
        p.screenshot(tmp_path/'contribution.png')
    assert nav[0] == ['/', None] and ['/play', 'page'] in nav and len(nav) > 5, nav   # the site's navigation bar, this page marked
    assert 1 <= len(labels) <= 8 and set(labels) <= set(names), labels   # names near the person's head only
    assert boxes[0]['text'] == 'you: ivy' and len(boxes) == len(labels) + 1, boxes
    assert not any(a['x'] < b['x'] + b['w'] and b['x'] < a['x'] + a['w'] and a['y'] < b['y'] + b['h'] and b['y'] < a['y'] + a['h']
                   for i, a in enumerate(boxes) for b in boxes[i + 1:]), boxes   # no two labels overlap
    assert view['r0'] <= last['you'][0] < view['r0'] + view['rows'] and view['c0'] <= last['you'][1] < view['c0'] + view['cols']
    assert [h.split(' ')[0] for h in hud[:5]] == ['Score', 'Length', 'Rank', 'Kills', 'Time'], hud
    assert len(legend) >= 1 and all(n in names and href == f"/genome/{names[n]['id']}" for n, href in legend), legend
    assert cookie is not None and cookie['httpOnly'] and cookie['value'].startswith('ivy.'), cookie   # the name this browser claimed
    assert len(pressed) > 0 and death['type'] == 'death', (pressed, death)
    assert death['killer'] in names, death   # the scripted player runs into enemy snakes
    rec = names[death['killer']]['performance']
    assert (death['games'], death['win_rate']) == (rec['games_played'], rec['win_rate']), (death, rec)
    assert death['games'] > 0, death
    record = f"{round(100*rec['win_rate'])}% win rate, {rec['games_played']} games"
    assert shown == [f"Killed by {death['killer']}", record], shown
    assert link == f"/genome/{names[death['killer']]['id']}", link   # the killer's name links to its page
    assert [u['chunk'] for u in uploads] == list(range(closed['chunks'])) and closed['chunks'] >= 2, (uploads, closed)
    s = read_session(uploaded_sessions(root)/closed['session'])
    assert (s.meta['player'], s.meta['kind'], s.meta['closed'], len(s)) == ('ivy', 'human', True, closed['steps'])
    assert closed['steps'] == death['t']
    assert clone['name'] == 'Ivy-clone1' and {'id': 'ivy', 'relation': 'player'} in clone['parents']
    assert is_protected(clone)   # selection keeps it, as the design keeps IvyBot (docs/design.md, Selection and diversity)
    assert len(panel) == 1 and panel[0][0] == clone['id'], panel
    assert f"Ivy-clone1 learned from {len(deaths)} of your sessions (its lineage names you)" in panel[0][1], (panel, deaths)
    assert f"season {season['id']}: rating" in panel[0][1], (panel, season)   # rated in the season's tournament

def test_play_on_a_phone(root, tmp_path):
    "On a phone's screen (390x844) the Play button is on the first screen and the map fits the width (issue 58)."
    app = create_app(root, token='play-test-token')
    app.state.play_config = PlayConfig(enemies=6, fps=15, map=dict(width=32, height=20, num_food=20))
    with serve_in_thread(app) as url, Page(tmp_path/'chromium', 390, 844) as p:
        p.goto(f'{url}/play?seed=5')
        start = p.js("(() => { const r = document.getElementById('start').getBoundingClientRect(); return [r.top, r.bottom]; })()")
        p.page.fill('#player', 'kim'); p.page.click('#start')
        p.wait('window.play.frames >= 1')   # the first frame came over the socket, so it is open: a key sent before was lost
        p.page.keyboard.press('ArrowUp')   # the game starts on a move
        p.wait('window.play.frames >= 2')
        canvas = p.js("(() => { const r = document.getElementById('map').getBoundingClientRect(); return [r.left, r.right, r.width, r.height]; })()")
        p.screenshot(tmp_path/'phone.png')
        errors = p.errors
    assert 0 < start[0] and start[1] <= 844, start   # Play without scrolling
    assert canvas[0] >= 0 and canvas[1] <= 390 and canvas[3] <= 844 - 60, canvas   # the view fits the screen, its bar below it
    assert errors == [], errors
