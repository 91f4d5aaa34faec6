"""The game viewer (`/viewer`) in headless Chromium (tests/loopback.py): a stored tournament game is picked from the
index, scrubbed step by step, and a snake clicked on is followed (its length and move probabilities shown); the legend
links each genome, the snakes' panel says each snake's length, kills and deaths and highlights it on hover, names
are drawn on the board (none over another), the camera follows the snake, and the speed menu plays faster (issue 58)."""
import re
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.web.server import create_app, serve_in_thread
from loopback import Page

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
    assert kills and all(re.fullmatch(r'step \d+: \w+ \(snake \d+\) (killed \w+ \(snake \d+\)|hit a wall or itself)', k) for k in kills), kills
