"""The run dashboard (`/dashboard`) in headless Chromium (tests/loopback.py): the producers' runs, logged through
`genome_lab.core.log_scalars` as TensorBoard event files, drawn by the vendored uPlot as TensorBoard's scalars page
draws them (runs overlaid on their own step axes, smoothing, hover values, log axis, run picker, markers for short runs,
readable ticks, a flat series with ticks that tell its values apart, a wall-time axis, TensorBoard's regex tag filter,
producers that fold, live refresh that keeps the view, each producer's offered genomes linked); the policy-ops table lists each producer's versions and its mute switch writes to the
registry for a writer signed in at /login; the home page links the dashboard."""
import math
import httpx
from genome_lab.core import log_scalars, producer_names
from genome_lab.registry.store import Registry
from genome_lab.registry.genomes import Genome
from genome_lab.arenas.policies import RandomPolicy
from genome_lab.web.server import create_app, serve_in_thread
from loopback import Page

CHARTS = """window.charts.map(u => ({producer: u.producer, tag: u.tag, width: u.width,
  series: u.series.slice(1).map((s, i) => ({label: s.label, show: s.show, raw: !!s.raw,
                                            points: typeof s.points.show === 'function' ? s.points.show(u, i + 1) : s.points.show,
                                            ys: u.data[i + 1].filter(y => y !== null)})),
  distr: u.scales.y.distr, yticks: u.axes[1]._values, ysize: u.axes[1]._size}))"""

def pixel_near(p, producer, tag, label, step, value):
    "The colour of the chart's canvas at (step, value) of series `label`, and the series' colour."
    return p.js(f"""(() => {{ const u = window.charts.find(u => u.producer === {producer!r} && u.tag === {tag!r});
      const k = u.series.findIndex(s => s.label === {label!r}), x = Math.round(u.valToPos({step}, 'x', true)),
            y = Math.round(u.valToPos({value}, 'y', true)), d = u.ctx.getImageData(x - 2, y - 2, 5, 5).data;
      let best = 1e9; for (let i = 0; i < d.length; i += 4) {{ const c = u.series[k].stroke(u, k);
        const rgb = [1, 3, 5].map(j => parseInt(c.slice(j, j + 2), 16));
        best = Math.min(best, Math.max(...rgb.map((v, j) => Math.abs(v - d[i + j])))); }}
      return best; }})()""")

def test_dashboard_draws_runs_as_tensorboard_does_and_mutes_a_producer(tmp_path):
    root = tmp_path/'reg'
    with Registry(root) as reg:
        g = reg.add(Genome(name='Hybrid1', type='rl', arena='snake', arch='random', config=dict(num_actions=4),
                           source='test'), RandomPolicy(4).state_dict(), status='candidate')
        reg.offer(g.id, 'hybrids')
    for s, rate in ((1, 0.5), (2, 0.2)):
        rows = [{'epoch': e, 'losses/bc': 1.4 * (1 - rate)**e, 'charts/accuracy': 1 - 0.6 * (1 - rate)**e} for e in range(1, 9)]
        log_scalars(root, 'hybrids', f'season-{s}', rows, 'epoch')
    # a quick run's producer: one round in season 1 (one point), three in season 2, large values
    log_scalars(root, 'ppo', 'season-1', [{'round': 1, 'charts/agent_steps': 400_000.0}], 'round')
    log_scalars(root, 'ppo', 'season-2', [{'round': r, 'charts/agent_steps': 250_000.0 * r} for r in (1, 2, 3)], 'round')
    # a producer whose seasons go on counting its generations (season 2 starts at generation 3)
    for s, g0 in ((1, 0), (2, 3)): log_scalars(root, 'creatures', f'season-{s}', [{'generation': g, 'charts/fitness_best': 1.0 + g} for g in range(g0, g0 + 3)], 'generation')
    # a nearly flat series: before, a learning rate held near 1e-4 drew an empty chart with no y labels
    log_scalars(root, 'replicator', 'main', [{'generation': g, 'charts/learning_rate': 1e-4 * (1 + 1e-4 * g)} for g in range(6)], 'generation')
    with serve_in_thread(create_app(root, token='dashboard-token')) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        p.goto(f'{url}/')
        linked = p.js("[...document.querySelectorAll('#pages a')].map(a => a.getAttribute('href'))")
        p.goto(f'{url}/dashboard')
        p.wait("Number(document.body.dataset.charts) === 5")
        offered_links = p.js("[...document.querySelectorAll('#runs-hybrids .offered a')].map(a => a.getAttribute('href'))")
        p.page.fill('#tag-filter', 'LOSS')   # TensorBoard's filter: a regular expression, case-insensitive
        filtered = p.js("({shown: [...document.querySelectorAll('#runs .chart:not([hidden])')].map(c => c.dataset.tag),"
                        " producers: [...document.querySelectorAll('#runs .producer:not([hidden])')].map(s => s.dataset.producer),"
                        " said: document.getElementById('filter-said').textContent})")
        p.page.fill('#tag-filter', 'loss|(')
        bad_regex = p.js("[document.getElementById('filter-said').textContent, document.querySelectorAll('#runs .chart[hidden]').length]")
        p.page.fill('#tag-filter', '')
        p.page.select_option('#x-axis', 'wall'); walls = p.js("window.charts.find(u => u.producer === 'ppo').data[0]")
        p.page.select_option('#x-axis', 'relative')
        xs = lambda: p.js("window.charts.find(u => u.producer === 'creatures').data[0]")
        overlaid = xs()
        p.page.select_option('#x-axis', 'step'); logged_x = xs(); p.page.select_option('#x-axis', 'relative')
        smoothed = p.js(CHARTS)
        one_point = pixel_near(p, 'ppo', 'charts/agent_steps', 'season-1', 0, 400_000)
        p.page.screenshot(path=tmp_path/'dashboard.png', full_page=True)
        # hover: the legend shows each run's value at the step under the pointer
        p.js("(() => { const u = window.charts.find(u => u.tag === 'losses/bc'); u.setCursor({left: u.valToPos(3, 'x'), top: 20}); })()")
        hover = p.js("[...window.charts.find(u => u.tag === 'losses/bc').root.querySelectorAll('.u-legend .u-series')]"
                     ".filter(r => r.style.display !== 'none').map(r => r.textContent)")
        p.page.fill('#smoothing', '0'); p.js("document.getElementById('smoothing').dispatchEvent(new Event('input'))")
        raw = p.js(CHARTS)
        p.js("document.getElementById('log-y').click()")
        logged = p.js(CHARTS)
        p.js("document.querySelector('#runs-picker input[data-run=\"hybrids/season-1\"]').click()")
        picked = p.js(CHARTS)
        log_scalars(root, 'ppo', 'season-3', [{'round': 1, 'charts/agent_steps': 1e6}], 'round')   # a producer at work
        p.page.click('#runs-creatures > summary')   # folded; a redraw keeps it folded
        p.js("refresh()"); p.wait("window.charts.some(u => u.series.some(s => s.label === 'season-3'))")
        folds = p.js("[...document.querySelectorAll('#runs details.producer')].map(d => [d.dataset.producer, d.open])")
        p.screenshot(tmp_path/'dashboard-picked.png')
        ops = p.js("[...document.querySelectorAll('#ops tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()))")
        signed_out = p.js("[document.querySelector('input.mute[data-producer=ppo]').disabled, "
                          "document.querySelector('#sign-in a').getAttribute('href')]")
        p.page.click('#sign-in a'); p.page.fill('#login-token', 'dashboard-token'); p.page.click('#login')   # a writer signs in
        p.page.wait_for_url(f'{url}/dashboard'); p.wait("Number(document.body.dataset.charts) >= 5")
        p.js("document.querySelector('input.mute[data-producer=ppo]').click()")
        p.wait("!document.getElementById('schedule-form').hidden")
        p.page.fill('#cron', '0 5 * * 2'); p.page.click('#schedule-save')   # the season schedule, changed signed in
        saved = p.wait("document.getElementById('schedule-said').textContent")
        schedule_now = httpx.get(f'{url}/schedule').json()['cron']
        said = p.wait("document.getElementById('ops-status').textContent")
        muted_row = p.js("document.querySelector('#ops tr[data-producer=ppo]').className")
        errors = p.errors
    assert '/dashboard' in linked and errors == [], errors
    by = lambda charts: {(c['producer'], c['tag']): c for c in charts}
    s = by(smoothed)
    assert sorted(s) == [('creatures', 'charts/fitness_best'), ('hybrids', 'charts/accuracy'), ('hybrids', 'losses/bc'),
                         ('ppo', 'charts/agent_steps'), ('replicator', 'charts/learning_rate')]
    flat = s[('replicator', 'charts/learning_rate')]['yticks']
    assert len(flat) >= 2 and len(set(flat)) == len(flat) and all(t for t in flat), flat   # labelled, and told apart
    assert filtered == dict(shown=['losses/bc'], producers=['hybrids'], said='1 of 5 charts match'), filtered
    assert bad_regex[0].startswith('not a regular expression') and bad_regex[1] == 0, bad_regex   # every tag shown
    assert len(walls) == 4 and all(1.7e9 < t < 4e9 for t in walls), walls   # the wall-time axis: UNIX seconds
    assert offered_links == [f'/genome/{g.id}'], offered_links
    assert dict(folds) == {'creatures': False, 'hybrids': True, 'ppo': True, 'replicator': True}, folds
    assert overlaid == [0, 1, 2] and logged_x == [0, 1, 2, 3, 4, 5], (overlaid, logged_x)   # seasons overlaid, not end to end
    loss = s[('hybrids', 'losses/bc')]
    # each run on its own step axis (both from epoch 1), smoothed (default 0.6) over its faint raw curve
    assert [(x['label'], x['raw']) for x in loss['series']] == [('season-1 raw', True), ('season-1', False), ('season-2 raw', True), ('season-2', False)]
    assert all(len(x['ys']) == 8 for x in loss['series'])
    ema, w, last = [], 0.6, 0.0
    for n, y in enumerate(loss['series'][0]['ys'], 1): last = w * last + (1 - w) * y; ema.append(last / (1 - w**n))
    assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(loss['series'][1]['ys'], ema))   # TensorBoard's debiased EMA
    assert math.isclose(loss['series'][1]['ys'][0], loss['series'][0]['ys'][0])                # its first point is the raw one
    ppo = s[('ppo', 'charts/agent_steps')]
    assert [(x['label'], x['points']) for x in ppo['series'] if not x['raw']] == [('season-1', True), ('season-2', True)]
    assert one_point < 40, one_point   # the one-point run is drawn: its marker's colour at its step and value
    assert all(len(t) <= 5 for t in ppo['yticks']) and any(t.endswith('k') for t in ppo['yticks']), ppo['yticks']   # 250k, not .53e+05
    assert 0 < loss['width'] <= 640
    assert any(t.startswith('season-1') for t in hover) and any(t.startswith('step3') for t in hover), hover
    r = by(raw)
    assert [x['raw'] for x in r[('hybrids', 'losses/bc')]['series']] == [False, False]   # no smoothing: the raw curves alone
    assert r[('hybrids', 'losses/bc')]['series'][0]['ys'] == loss['series'][0]['ys']
    assert all(c['distr'] == 3 for c in logged) and all(c['distr'] == 1 for c in raw)   # the log axis
    hidden = {(c['tag'], x['label']): x['show'] for c in picked if c['producer'] == 'hybrids' for x in c['series']}
    assert hidden == {(t, l): l != 'season-1' for t, l in hidden}, hidden                   # the picker hides season 1 everywhere
    rows = {r[0]: r for r in ops}
    assert sorted(rows) == producer_names() and rows['hybrids'][2:4] == ['1', 'Hybrid1'], rows['hybrids']
    assert signed_out == [True, '/login?next=/dashboard'], signed_out   # signed out: shown, not changed
    assert said == 'ppo muted' and muted_row == 'is-muted'   # signed in (the session cookie, no token in the page)
    assert saved == 'saved: "0 5 * * 2"' and schedule_now == '0 5 * * 2', (saved, schedule_now)
    with Registry(root) as reg: assert reg.muted_producers() == {'ppo'}

def test_a_step_logged_again_keeps_its_last_value_and_nothing_is_lost(tmp_path):
    """Before: a second `log_scalars` call within the same second wrote an event file of the same name over the first
    (its points lost), and a step logged again (a producer's round killed after it logged, then resumed) was drawn
    twice."""
    from genome_lab.web.dashboard import read_scalars
    row = lambda e, v: {'epoch': e, 'losses/bc': v}
    log_scalars(tmp_path, 'ppo', 'season-1', [row(1, 1.0), row(2, 2.0)], 'epoch')
    log_scalars(tmp_path, 'ppo', 'season-1', [row(2, 2.5), row(3, 3.0)], 'epoch')   # the resumed round: step 2 again
    assert [(s, v) for s, v, _ in read_scalars(tmp_path)['ppo']['season-1']['losses/bc']] == [(1, 1.0), (2, 2.5), (3, 3.0)]
    assert len(list((tmp_path/'scalars'/'ppo'/'season-1').glob('events.out.tfevents.*'))) == 2
