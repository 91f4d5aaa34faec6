"""The run dashboard (`/dashboard`) in headless Chromium (tests/loopback.py): two runs of a producer, logged through
`genome_lab.core.log_scalars` as TensorBoard event files, are overlaid on each chart; the policy-ops table lists each
producer's versions and its mute switch writes to the registry; the home page links the dashboard."""
import math
from genome_lab.core import log_scalars, producer_names
from genome_lab.registry import Registry, Genome
from genome_lab.policies import RandomPolicy
from genome_lab.server import create_app, serve_in_thread
from loopback import Page

def test_dashboard_overlays_two_runs_and_mutes_a_producer(tmp_path):
    root = tmp_path/'reg'
    with Registry(root) as reg:
        g = reg.add(Genome(name='Hybrid1', type='rl', arena='snake', arch='random', config=dict(num_actions=4),
                           source='test'), RandomPolicy(4).state_dict(), status='candidate')
        reg.offer(g.id, 'hybrids')
    for s, rate in ((1, 0.5), (2, 0.2)):
        rows = [{'epoch': e, 'losses/bc': 1.4 * (1 - rate)**e, 'charts/accuracy': 1 - 0.6 * (1 - rate)**e} for e in range(1, 9)]
        log_scalars(root, 'hybrids', f'season-{s}', rows, 'epoch')
    with serve_in_thread(create_app(root, token='dashboard-token')) as url, Page(tmp_path/'chromium', 1280, 900) as p:
        p.goto(f'{url}/')
        linked = p.js("[...document.querySelectorAll('#pages a')].map(a => a.getAttribute('href'))")
        p.goto(f'{url}/dashboard')
        charts = p.js("[...document.querySelectorAll('section[data-producer=hybrids] svg.chart')].map(s => ({tag: s.dataset.tag, "
                      "runs: [...s.querySelectorAll('polyline')].map(l => l.dataset.run), colours: [...s.querySelectorAll('polyline')]"
                      ".map(l => l.getAttribute('stroke')), ys: [...s.querySelectorAll('polyline')].map(l => l.points.length), "
                      "box: s.getBoundingClientRect().width}))")
        ops = p.js("[...document.querySelectorAll('#ops tbody tr')]"
                   ".map(r => [...r.cells].map(c => c.textContent.trim()))")
        table_width = p.js("document.querySelector('#ops table').getBoundingClientRect().width")
        p.js("const t = document.getElementById('token'); t.value = 'dashboard-token'; "
             "t.dispatchEvent(new Event('change')); document.querySelector('input.mute[data-producer=ppo]').click()")
        said = p.wait("document.getElementById('ops-status').textContent")
        muted_row = p.js("document.querySelector('#ops tr[data-producer=ppo]').className")
        p.screenshot(tmp_path/'dashboard.png')
    assert '/dashboard' in linked
    assert sorted(c['tag'] for c in charts) == ['charts/accuracy', 'losses/bc']
    for c in charts:
        assert c['runs'] == ['season-1', 'season-2'] and len(set(c['colours'])) == 2 and c['ys'] == [8, 8], c
        assert 0 < c['box'] <= 1280 and not math.isnan(c['box'])
    rows = {r[0]: r for r in ops}
    assert sorted(rows) == producer_names() and rows['hybrids'][2:4] == ['1', 'Hybrid1'], rows['hybrids']
    assert 0 < table_width <= 1280
    assert said == 'ppo muted' and muted_row == 'is-muted'
    with Registry(root) as reg: assert reg.muted_producers() == {'ppo'}

def test_a_step_logged_again_keeps_its_last_value_and_nothing_is_lost(tmp_path):
    """Before: a second `log_scalars` call within the same second wrote an event file of the same name over the first
    (its points lost), and a step logged again (a producer's round killed after it logged, then resumed) was drawn
    twice."""
    from genome_lab.dashboard import read_scalars
    row = lambda e, v: {'epoch': e, 'losses/bc': v}
    log_scalars(tmp_path, 'ppo', 'season-1', [row(1, 1.0), row(2, 2.0)], 'epoch')
    log_scalars(tmp_path, 'ppo', 'season-1', [row(2, 2.5), row(3, 3.0)], 'epoch')   # the resumed round: step 2 again
    assert read_scalars(tmp_path)['ppo']['season-1']['losses/bc'] == [(1, 1.0), (2, 2.5), (3, 3.0)]
    assert len(list((tmp_path/'scalars'/'ppo'/'season-1').glob('events.out.tfevents.*'))) == 2
