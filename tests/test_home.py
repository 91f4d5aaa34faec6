"""The genome server's home page (`/`) and its API documentation (`/docs`, `/redoc`) served without internet, looked at
in headless Chromium (Debian's chromium under Playwright, tests/loopback.py); screenshots are kept in the test's folder."""
import urllib.parse
import httpx, pytest
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.web.server import create_app, serve_in_thread, NAV
from genome_lab.web.site_pages import home_links, API_DOCS
from loopback import Page

@pytest.fixture
def root(tmp_path):
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    return tmp_path/'reg'

def loopback_only(page:Page)->list: # the URLs refused, filled while the page runs
    "Refuse every request of `page` to a host other than 127.0.0.1 (as if offline); returns the list of refused URLs."
    refused = []
    def route(r):
        if urllib.parse.urlsplit(r.request.url).hostname == '127.0.0.1': r.continue_()
        else: refused.append(r.request.url); r.abort()
    page.context.route('**/*', route)
    return refused

def test_home_page_links_every_page(root, tmp_path):
    "`/` lists the server's HTML pages, the API documentation and the JSON data, each link with a line; the pages answer."
    app = create_app(root)
    pages, data = home_links(app)
    with serve_in_thread(app) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        refused = loopback_only(p)
        p.goto(f'{url}/')
        shown = p.js("[...document.querySelectorAll('li')].map(li => [li.parentElement.id, li.querySelector('a')"
                     ".getAttribute('href'), li.innerText.slice(li.querySelector('a').innerText.length).trim()])")
        p.screenshot(tmp_path/'home.png')
        answers = {h: httpx.get(f'{url}{h}').status_code for ul, h, _ in shown if ul in ('pages', 'api-docs')}
    assert refused == []
    by_list = lambda ul: [(h, d) for u, h, d in shown if u == ul]
    assert by_list('pages') == pages and by_list('api-docs') == API_DOCS and by_list('data') == data
    assert {'/leaderboard', '/stream', '/stream/playlist'} <= {h for h, _ in pages} and {'/health', '/api/leaderboard'} <= {h for h, _ in data}
    assert all(d for _, d in pages + data), shown
    assert answers == {h: 200 for h in answers} and len(answers) >= 6, answers

NAV_LINKS = "[...document.querySelectorAll('nav.site a')].map(a => a.getAttribute('href'))"

def test_api_docs_render_offline(root, tmp_path):
    """Swagger UI at /docs shows every operation with no request leaving 127.0.0.1 (others are refused); ReDoc at /redoc
    too, ReDoc's own "API docs by Redocly" logo image included (issue 58); both under the site's navigation bar."""
    app = create_app(root)
    ops = sorted(op['operationId'] for ops in app.openapi()['paths'].values() for op in ops.values())
    with serve_in_thread(app) as url, Page(tmp_path/'chromium', 1280, 1000) as p:
        refused = loopback_only(p)
        p.goto(f'{url}/docs')
        p.wait("document.querySelectorAll('.opblock').length > 0")
        shown = p.js("[...document.querySelectorAll('.opblock')].map(e => e.id)")
        nav = {'docs': p.js(NAV_LINKS)}
        p.screenshot(tmp_path/'docs.png')
        swagger_refused = list(refused)
        p.goto(f'{url}/redoc')
        p.wait("document.querySelectorAll('[data-section-id^=\"operation/\"]').length > 0")
        redoc = p.js("[...document.querySelectorAll('[data-section-id^=\"operation/\"]')].map(e => e.dataset.sectionId)")
        nav['redoc'] = p.js(NAV_LINKS)
        p.screenshot(tmp_path/'redoc.png')
    assert swagger_refused == [], swagger_refused
    assert refused == [], refused   # ReDoc's logo too: its page allows no outside image
    assert sorted(i.split('-', 2)[2] for i in shown) == ops, (shown, ops)   # Swagger UI's ids: operations-<tag>-<operationId>
    assert sorted(s.split('/', 1)[1] for s in redoc) == ops, redoc
    assert nav == {k: ['/', *(path for path, _ in NAV)] for k in nav}, nav   # the site's navigation bar on both (issue 58)
