"""The run dashboard (`/dashboard`) in headless Chromium (tests/loopback.py): two runs of a producer, logged through
`genome_lab.core.log_scalars` as TensorBoard event files, are overlaid on each chart; the home page links it."""
import math
from genome_lab.core import log_scalars
from genome_lab.registry import Registry
from genome_lab.server import create_app, serve_in_thread
from loopback import Page

def test_dashboard_overlays_two_runs(tmp_path):
    root = tmp_path/'reg'
    Registry(root).close()
    for s, rate in ((1, 0.5), (2, 0.2)):
        rows = [{'epoch': e, 'losses/bc': 1.4 * (1 - rate)**e, 'charts/accuracy': 1 - 0.6 * (1 - rate)**e} for e in range(1, 9)]
        log_scalars(root, 'hybrids', f'season-{s}', rows, 'epoch')
    with serve_in_thread(create_app(root)) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        p.goto(f'{url}/')
        linked = p.js("[...document.querySelectorAll('#pages a')].map(a => a.getAttribute('href'))")
        p.goto(f'{url}/dashboard')
        charts = p.js("[...document.querySelectorAll('section[data-producer=hybrids] svg.chart')].map(s => ({tag: s.dataset.tag, "
                      "runs: [...s.querySelectorAll('polyline')].map(l => l.dataset.run), colours: [...s.querySelectorAll('polyline')]"
                      ".map(l => l.getAttribute('stroke')), ys: [...s.querySelectorAll('polyline')].map(l => l.points.length), "
                      "box: s.getBoundingClientRect().width}))")
        p.screenshot(tmp_path/'dashboard.png')
    assert '/dashboard' in linked
    assert sorted(c['tag'] for c in charts) == ['charts/accuracy', 'losses/bc']
    for c in charts:
        assert c['runs'] == ['season-1', 'season-2'] and len(set(c['colours'])) == 2 and c['ys'] == [8, 8], c
        assert 0 < c['box'] <= 1280 and not math.isnan(c['box'])
