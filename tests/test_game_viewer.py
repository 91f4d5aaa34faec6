"""The game viewer (`/viewer`) in headless Chromium (tests/loopback.py): a stored tournament game is picked from the
index, scrubbed step by step, and a snake clicked on is followed (its length and move probabilities shown)."""
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
    assert step == '21' and first != later   # scrubbed to step 20, one more with the arrow key: the map changed
    assert followed == '0' and panel.startswith(f'{name} · snake 0 · length ') and probs == 4, (followed, panel)
    assert name in ('PufferSnake', 'HeuristicSnake', 'RandomSnake')
    assert kills and all(re.fullmatch(r'step \d+: \w+ \(snake \d+\) (killed \w+ \(snake \d+\)|hit a wall or itself)', k) for k in kills), kills
