"""Short, unique genome names on the leaderboard and the genome page (`/genome/{id}`), looked at in headless Chromium
(tests/loopback.py): the leaderboard's tables sort and filter and link each name to its genome page, which shows the
rating after each season's tournament, the games, the lineage and a working download link."""
import httpx, pytest
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome, NAME_MAX
from genome_lab.arenas.policies import RandomPolicy
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.web.server import create_app, serve_in_thread
from loopback import Page

@pytest.fixture
def root(tmp_path):
    "A registry with PufferLib's snake, two hybrids of it (made by the hybrids' own naming) and two season tournaments."
    with Registry(tmp_path/'reg') as reg:
        ids = seed_founders(reg)
        kids = [reg.add(Genome(name=reg.genome_name('tune', ids['PufferSnake']), type='hybrid', arena='snake', arch='random',
                               config=dict(num_actions=4), source='test', parents=[dict(id=ids['PufferSnake'], relation='finetune')]),
                        RandomPolicy(4).state_dict(), status='active').id for _ in range(2)]
        snake = [ids['PufferSnake'], ids['HeuristicSnake'], ids['RandomSnake'], *kids]
        for s in (1, 2):
            run_tournament(reg, snake, arena='snake', genomes_per_game=3, agents_per_genome=2, steps=40, seed=s,
                           progress=False, tags=dict(season=s))
    return tmp_path/'reg'

def test_leaderboard_sorts_filters_and_links_genome_pages(root, tmp_path):
    "Names are short and unique; a header click sorts, the filter asks the server (every rated row, says when none matches), a name opens the genome page, which shows the rating over both seasons."
    with Registry(root, read_only=True) as reg:
        names = {reg.genome(i)['name'] for i in reg.ids()}
        assert len(names) == len(reg.ids()) and max(len(n) for n in names) <= max(NAME_MAX, len('HeuristicSnake'))
        rt = reg.ratings()
    with serve_in_thread(create_app(root)) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        p.goto(f'{url}/leaderboard'); p.wait("document.body.dataset.rendered === 'yes'")
        table = "document.querySelector('table.top[data-arena=snake]')"
        col = lambda k: p.js(f"[...{table}.querySelectorAll('tr.genome-row')].filter(r => !r.hidden).map(r => r.children[{k}].dataset.sort)")
        by_rank = col(0)
        p.js(f"{table}.querySelectorAll('th')[4].click()")   # rating (ordinal): ascending, then descending
        up = [float(v) for v in col(4)]
        p.js(f"{table}.querySelectorAll('th')[4].click()")
        down = [float(v) for v in col(4)]
        p.js("document.body.dataset.rendered = 'no'"); p.page.fill('#filter', '-tun')   # the server filters: wait for its answer
        p.wait("document.body.dataset.rendered === 'yes'")
        kept = p.js(f"[...{table}.querySelectorAll('tr.genome-row')].filter(r => !r.hidden).map(r => r.children[1].textContent)")
        p.screenshot(tmp_path/'leaderboard.png')
        p.js("document.body.dataset.rendered = 'no'"); p.page.fill('#filter', 'no-such-genome')
        p.wait("document.body.dataset.rendered === 'yes'"); none = p.js("document.getElementById('no-rows').textContent")
        p.screenshot(tmp_path/'leaderboard-none.png')
        p.js("document.body.dataset.rendered = 'no'"); p.page.fill('#filter', '-tun'); p.wait("document.body.dataset.rendered === 'yes'")
        width = p.js('document.documentElement.scrollWidth')
        p.page.click(f"tr.genome-row >> text={kept[0]}")
        p.wait("document.getElementById('genome-name')")
        shown = p.js("({name: document.getElementById('genome-name').textContent, points: document.querySelectorAll('#rating-plot circle').length,"
                     " rows: document.querySelectorAll('#rating-table tbody tr').length, parents: document.getElementById('parents').innerText,"
                     " href: document.getElementById('download').getAttribute('href'), path: location.pathname})")
        p.screenshot(tmp_path/'genome.png')
        data = httpx.get(f"{url}{shown['href']}").content
    assert by_rank == sorted(by_rank, key=int) and up == sorted(up) and down == sorted(up, reverse=True)
    assert sorted(kept) == sorted(n for n in names if '-tune' in n)
    assert none == 'No rated genome\'s name, type or status contains "no-such-genome".', none
    assert len(kept) == 2 and len(set(kept)) == 2 and width <= 1280   # two hybrids, two names, the table fits the window
    gid = shown['path'].rsplit('/', 1)[1]
    assert shown['name'] == kept[0] and shown['points'] == 2 and shown['rows'] == 2 and gid in rt
    assert 'PufferSnake' in shown['parents'] and 'finetune' in shown['parents']
    with Registry(root, read_only=True) as reg: assert data == reg.genome_file(gid).read_bytes()

def test_the_leaderboard_filter_finds_a_genome_below_the_top_10(tmp_path):
    "Issue 58: the filter searched only the rows shown (the top 10 per arena and status); it asks the server for every rated genome."
    with Registry(tmp_path/'reg') as reg:
        rnd = dict(type='rl', arena='snake', arch='random', config=dict(num_actions=4), source='test')
        ids = [reg.add(Genome(name=f'Walker{k:02d}', **rnd), RandomPolicy(4).state_dict(), status='active').id for k in range(12)]
        run_tournament(reg, ids, arena='snake', genomes_per_game=3, agents_per_genome=1, steps=20, seed=0, progress=False,
                       settings=dict(width=24, height=16, num_food=12))
        order = [reg.genome(i)['name'] for i in sorted(ids, key=lambda i: -reg.ratings()[i]['ordinal'])]
    with serve_in_thread(create_app(tmp_path/'reg')) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        p.goto(f'{url}/leaderboard'); p.wait("document.body.dataset.rendered === 'yes'")
        rows = "[...document.querySelectorAll('table.top[data-arena=snake] tr.genome-row')].filter(r => !r.hidden).map(r => r.children[1].textContent)"
        shown = p.js(rows)
        p.js("document.body.dataset.rendered = 'no'"); p.page.fill('#filter', order[-1]); p.wait("document.body.dataset.rendered === 'yes'")
        found = p.js(rows)
    assert len(shown) == 10 and order[-1] not in shown, shown   # the last of 12 is not among the rows shown at first
    assert found == [order[-1]], found
