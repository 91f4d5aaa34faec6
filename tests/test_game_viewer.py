"""The game viewer (`/viewer`) in headless Chromium (tests/loopback.py): a stored tournament game is picked from the
index, scrubbed step by step, and a snake clicked on is followed (its length and move probabilities shown); the legend
links each genome, the snakes' panel says each snake's length, kills and deaths and highlights it on hover, names
are drawn on the board (none over another), the camera follows the snake, the speed menu plays faster, and a genome's
page plays its newest game in place when asked (issue 58).
Tetris and creature tournament games replay in the same viewer: their boards and races are drawn, named and played,
and the replay (the arena's own simulator) ends on the stored results; an arena the viewer cannot replay is a 404."""
import json, re
import httpx
import numpy as np
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome
from genome_lab.arenas.policies import RandomPolicy
from genome_lab.programs.tetris_players import tetris_baselines
from genome_lab.evolution.creature_store import creature_baselines
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.web.server import create_app, serve_in_thread
from loopback import Page, screenshots

def test_viewer_picks_scrubs_and_follows(tmp_path):
    root = tmp_path/'reg'
    with Registry(root) as reg:
        ids = seed_founders(reg)
        t = run_tournament(reg, [ids[n] for n in ('PufferSnake', 'HeuristicSnake', 'RandomSnake')], arena='snake',
                           genomes_per_game=3, agents_per_genome=2, steps=30, seed=0, progress=False,
                           settings=dict(width=24, height=16, num_food=12))
    with serve_in_thread(create_app(root)) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        p.goto(f'{url}/viewer')
        p.page.click(f'a[href="/viewer?evaluation={t.evaluation}&game=0"]')
        p.wait("document.body.dataset.rendered === 'yes'")
        first_ms = int(p.js("document.body.dataset.firstFrameMs"))   # the first frame, drawn while the rest is replayed
        p.wait("document.body.dataset.complete === 'yes'")
        board = "document.getElementById('board')"
        first = p.screenshot(element=board)
        p.page.fill('#scrub', '20'); p.js("document.getElementById('scrub').dispatchEvent(new Event('input'))")
        p.page.keyboard.press('ArrowRight')
        step = p.js(f"{board}.dataset.step")
        later = p.screenshot(element=board)
        # click the cell of snake 0's head at this step
        r, c = p.js("viewer.D.frames[viewer.step()].head[0]"); cell = p.js("viewer.CELL")
        p.page.click('#board', position={'x': c * cell + cell / 2, 'y': r * cell + cell / 2})
        followed = p.js(f"{board}.dataset.follow"); panel = p.js("document.getElementById('follow').textContent")
        probs = p.js("document.querySelectorAll('#mind tr').length"); name = p.js("viewer.D.names[viewer.D.genome[0]]")
        kills = p.js("[...document.querySelectorAll('#events li')].map(li => li.textContent)")
        p.screenshot(tmp_path/'viewer.png')
        legend = p.js("[...document.querySelectorAll('#legend a')].map(a => [a.textContent, a.getAttribute('href')])")
        table = p.js("[...document.querySelectorAll('#snakes tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
        labels = p.js("viewer.labels()")
        p.page.hover('#snakes tbody tr[data-snake="1"] td:nth-child(3)'); hovered = p.js(f"{board}.dataset.hover")
        p.page.check('#camera'); view = p.js("viewer.view()")
        p.screenshot(tmp_path/'viewer-camera.png')
        p.page.select_option('#speed', '8'); p.page.click('#play'); p.page.wait_for_timeout(500); p.page.click('#play')
        fast, frames = int(p.js(f"{board}.dataset.step")), p.js("viewer.D.frames.length")   # 8x: 80 steps a second
        p.goto(f"{url}/genome/{ids['PufferSnake']}"); p.page.click('#watch')   # its page plays its newest game in place, when asked
        inner = p.page.wait_for_selector('#replay').content_frame()   # the new iframe starts at about:blank:
        inner.wait_for_url(re.compile('embed'))                         # wait for its own navigation, not the element alone
        inner.wait_for_function("document.body.dataset.rendered === 'yes' && Number(document.getElementById('board').dataset.step) >= 5", timeout=30_000)
        embedded = inner.evaluate("[getComputedStyle(document.querySelector('nav.site')).display, new URL(location.href).searchParams.get('evaluation')]")
        p.screenshot(tmp_path/'genome-watch.png')
    assert first_ms < 2000, first_ms   # issue 58: a game's first frame within 2 s of opening it
    assert step == '21' and first != later   # scrubbed to step 20, one more with the arrow key: the map changed
    assert followed == '0' and panel.startswith(f'{name} · snake 0 · length ') and probs == 4, (followed, panel)
    assert name in ('PufferSnake', 'HeuristicSnake', 'RandomSnake')
    with Registry(root) as reg: names = {reg.genome(i)['name']: i for i in ids.values()}
    assert sorted(legend) == sorted([n, f'/genome/{names[n]}'] for n in ('PufferSnake', 'HeuristicSnake', 'RandomSnake')), legend
    assert len(table) == 6 and all(r[1] in names and r[3].isdigit() for r in table) and [r[2] for r in table] == [str(k) for k in range(6)], table
    died = [int(r[5]) for r in table]   # kills and deaths by step 22, from the game's events
    assert sum(died) == sum(1 for k in kills if int(k.split(':')[0][5:]) <= 22) and sum(int(r[4]) for r in table) <= sum(died), table
    assert labels and all(l['text'] in names and 0 <= l['x'] <= l['x'] + l['w'] <= 24 * cell for l in labels), labels   # names on the board
    assert not any(a['x'] < b['x'] + b['w'] and b['x'] < a['x'] + a['w'] and abs(a['y'] - b['y']) < 13
                   for i, a in enumerate(labels) for b in labels[i + 1:]), labels   # none over another
    assert hovered == '1' and (view['cols'], view['rows'], view['cell']) == (12, 8, 2 * cell), (hovered, view)   # half the map, twice the size
    assert fast == frames - 1, (fast, frames)   # 8x: played to the last frame within half a second
    assert embedded == ['none', str(t.evaluation)], embedded   # the genome page's replay: it plays by itself, without the site's bar
    assert kills and all(re.fullmatch(r'step \d+: \w+ \(snake \d+\) (killed \w+ \(snake \d+\)|hit a wall or itself)', k) for k in kills), kills

def arena_registry(root)->tuple: # ({'tetris', 'creatures', 'cartpole'}: each tournament's evaluation id, {arena: the game to watch})
    """Two tetris baselines on two boards each for 80 ticks, the four founder creatures in 3 s races (the game to watch:
    the first the gait creature races in), and two random carts."""
    with Registry(root) as reg:
        t = run_tournament(reg, list(tetris_baselines(reg).values()), arena='tetris', agents_per_genome=2, steps=80, seed=0, progress=False)
        gait = creature_baselines(reg)['GaitCreature']
        c = run_tournament(reg, arena='creatures', seed=0, progress=False, settings=dict(seconds=3.0))
        race = min(r['game'] for r in reg.evaluation_results(c.evaluation) if r['genome'] == gait)
        cart = dict(type='rl', arena='cartpole', arch='random', config=dict(num_actions=2))
        carts = [reg.add(Genome(name=f'Cart{k}', source='test', **cart), RandomPolicy(2).state_dict(), status='active').id for k in range(2)]
        p = run_tournament(reg, carts, arena='cartpole', agents_per_genome=2, steps=10, progress=False)
    return dict(tetris=t.evaluation, creatures=c.evaluation, cartpole=p.evaluation), dict(tetris=0, creatures=race)

def test_tetris_and_creature_replays_end_on_the_stored_results(tmp_path):
    "The streamed replay's last frame and its end are the results the tournament stored, genome by genome."
    ev, game = arena_registry(root := tmp_path/'reg')
    with Registry(root, read_only=True) as reg:
        stored = {a: [r for r in reg.evaluation_results(ev[a]) if r['game'] == k] for a, k in game.items()}
    with serve_in_thread(create_app(root)) as url:
        got = {a: [json.loads(l) for l in httpx.get(f'{url}/api/game/{ev[a]}/{k}/lines', timeout=60).text.splitlines()] for a, k in game.items()}
        refused = httpx.get(f'{url}/api/game/{ev["cartpole"]}/0/lines', timeout=60)
        page = httpx.get(f'{url}/viewer?evaluation={ev["cartpole"]}&game=0', timeout=60)
    for a, lines in got.items():
        head, last, end = lines[0], lines[-2], lines[-1]
        assert (head['type'], head['arena'], end['type'], end['verified']) == ('head', a, 'end', True), (head, end)
        assert end['scores'] == [r['score'] for r in stored[a]] and head['ids'] == [r['genome'] for r in stored[a]], (end, stored[a])
    genome, boards = np.array(got['tetris'][0]['genome']), got['tetris'][-2]['boards']   # a genome's score: the mean of its boards'
    for stat in ('score', 'lines'):
        assert np.array_equal([np.mean([b[stat] for b, g in zip(boards, genome) if g == k]) for k in range(2)], [r[stat] for r in stored['tetris']]), stat
    pellets = got['creatures'][-2]['pellets']   # a creature's fitness: pellets collected and the share of the way to the next
    assert max(pellets) > 0 and all(p <= r['score'] < p + 1 for p, r in zip(pellets, stored['creatures'])), (pellets, stored['creatures'])
    assert len(got['creatures']) == 2 + 3 * 15 + 1 and len(got['tetris']) == 2 + 80, (len(got['creatures']), len(got['tetris']))
    assert refused.status_code == page.status_code == 404 and 'cartpole tournament: the viewer replays' in refused.json()['detail'], refused.text

INK = """(() => { const c = document.getElementById('board'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = {};
  for (let i = 0; i < d.length; i += 4) { const k = '#' + [d[i], d[i + 1], d[i + 2]].map(x => x.toString(16).padStart(2, '0')).join(''); n[k] = (n[k] || 0) + 1; }
  return n; })()"""   # pixels of each colour on the canvas

def test_tetris_boards_and_creature_races_in_the_viewer(tmp_path):
    "Each game opens from the index, draws its boards or lanes in its genomes' colours, names them, plays and scrubs."
    (ev, game), shots = arena_registry(root := tmp_path/'reg'), screenshots(tmp_path)
    with serve_in_thread(create_app(root)) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        p.goto(f'{url}/viewer'); index = p.js("[...document.querySelectorAll('ol.games a')].map(a => a.getAttribute('href'))")
        seen = {}
        for arena in ('tetris', 'creatures'):
            p.goto(f'{url}/viewer?evaluation={ev[arena]}&game={game[arena]}')
            p.wait("document.body.dataset.complete === 'yes'")
            s = seen[arena] = dict(title=p.js("document.getElementById('title').textContent"), info=p.js("document.getElementById('info').textContent"),
                                   names=p.js("viewer.D.names"), colours=p.js("viewer.D.colours"), frames=p.js("viewer.D.frames.length"),
                                   legend=p.js("[...document.querySelectorAll('#legend li')].map(li => li.textContent)"),
                                   players=p.js("[...document.querySelectorAll('#players tbody tr')].map(r => [...r.cells].map(c => c.textContent))"),
                                   snakes=p.js("document.querySelector('#snakes').offsetParent === null"), first=p.js(INK))
            p.page.select_option('#speed', '4'); p.page.click('#play'); p.page.wait_for_timeout(400); p.page.click('#play')
            s['played'] = int(p.js("document.getElementById('board').dataset.step"))
            p.page.fill('#scrub', str(s['frames'] - 2)); p.js("document.getElementById('scrub').dispatchEvent(new Event('input'))")
            p.page.keyboard.press('ArrowRight')
            s['step'], s['label'], s['last'] = int(p.js("document.getElementById('board').dataset.step")), p.js("document.getElementById('step').textContent"), p.js(INK)
            p.screenshot(shots/f'viewer-{arena}.png')
        errors = p.errors
    assert errors == [], errors
    for arena, s in seen.items():
        assert f'/viewer?evaluation={ev[arena]}&game={game[arena]}' in index, (arena, index)
        assert s['title'] == f'{arena} tournament {ev[arena]}, game {game[arena]}' and 'replay matches the stored scores' in s['info'], s
        assert all(any(l.startswith(n) and ' · score ' in l for l in s['legend']) for n in s['names']), s['legend']
        assert s['snakes'] and sorted({r[1] for r in s['players']}) == sorted(s['names']), s['players']   # the players' panel, not the snakes'
        assert 0 < s['played'] < s['frames'] - 1 and s['step'] == s['frames'] - 1, s   # played at 4x, then scrubbed to the end
        assert all(s['last'].get(c, 0) > 20 for c in s['colours']), (s['colours'], s['last'])   # every genome's boards or body drawn
        assert s['first'] != s['last']   # the pieces fell, the creatures moved
    t, c = seen['tetris'], seen['creatures']
    assert len(t['players']) == 4 and [r[2] for r in t['players']] == ['0', '1', '2', '3'] and t['label'] == 'tick 80 / 80', t
    pieces = sum(t['last'].get(k, 0) for k in ('#f0e000', '#00d8e8', '#30c030', '#e83030', '#9030b0', '#f09000', '#3050f0'))
    assert pieces > 4 * 8 * 8 * 4, pieces   # at least a piece a board, in PufferLib's colours
    assert len(c['players']) == 3 and c['label'] == '3.0 s / 3.0 s' and all(r[4] != '' for r in c['players']), c   # scores once replayed
