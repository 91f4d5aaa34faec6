"""The genome server (genome_lab.web.server) and client (genome_lab.web.client): API, security, atomic writes, concurrency,
tournament jobs, the season schedule's routes, the CLI, the leaderboard page in headless Chromium, and smoke runs of the
load and fuzz scripts."""
import hashlib, itertools, json, os, pickle, re, socket, subprocess, sys, tempfile, threading, time
from html.parser import HTMLParser
from pathlib import Path
import numpy as np, pytest, torch, httpx
from fastapi.testclient import TestClient
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome, genome_to_bytes
from genome_lab.arenas.arena import arena_version
from genome_lab.arenas.policies import build_policy, RandomPolicy
from genome_lab.web.server import create_app, free_port, serve_in_thread
from genome_lab.web.server_jobs import evaluation_job, TournamentRequest
from genome_lab.web.client import GenomeClient
from loopback import CHROMIUM_FLAGS, chromium

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TOKEN = 'test-token-123'
AUTH = {'Authorization': f'Bearer {TOKEN}'}

@pytest.fixture
def root(tmp_path):
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    return tmp_path/'reg'

@pytest.fixture
def http(root):
    with TestClient(create_app(root, token=TOKEN, max_upload_bytes=2 << 20), raise_server_exceptions=False) as c: yield c

def state(root):
    "Everything a failed write must leave as it was: genome rows, lineage, result count, files."
    with Registry(root) as reg:
        return (sorted(tuple(r) for r in reg.db.execute('SELECT id, sha256, status FROM genomes')),
                reg.db.execute('SELECT COUNT(*) FROM lineage').fetchone()[0],
                reg.db.execute('SELECT COUNT(*) FROM results').fetchone()[0],
                sorted(p.name for p in (root/'genomes').iterdir()))

def genome_file(root, name='Child', **kw):
    with Registry(root) as reg:
        g, p = reg.load(reg.by_name('PufferSnake'))
    meta = dict(name=name, type='hybrid', arena='snake', arch='linear_lstm', config=g.config, source='test',
                parents=[dict(id=g.id, relation='finetune')])
    meta.update(kw)
    return genome_to_bytes(Genome(**meta), p), g

# --- API and schema

def test_openapi_names_models_and_security(http):
    s = http.get('/openapi.json').json()
    for p in ['/get_genome_manifest', '/get_genome/{genome_id}', '/update_genome_stats', '/submit_genome',
              '/run_tournament', '/tournament_status/{job_id}', '/leaderboard']: assert p in s['paths'], p
    body = s['paths']['/update_genome_stats']['post']['requestBody']['content']['application/json']['schema']
    assert body['$ref'].endswith('/StatsUpdate')
    assert 'application/octet-stream' in s['paths']['/submit_genome']['post']['requestBody']['content']
    assert s['paths']['/get_genome_manifest']['get']['responses']['200']['content']['application/json']['schema']['$ref'].endswith('/ManifestOut')
    assert s['components']['securitySchemes']['HTTPBearer']['scheme'] == 'bearer'
    assert s['paths']['/submit_genome']['post']['security'] and 'security' not in s['paths']['/get_genome_manifest']['get']

def test_manifest_and_genome_download(http, root):
    man = http.get('/get_genome_manifest').json()
    assert sorted(g['name'] for g in man['genomes']) == ['HeuristicSnake', 'PufferSnake', 'PufferTetris', 'RandomSnake', 'RandomTetris']
    assert man['max_active'] == 15
    g = next(g for g in man['genomes'] if g['name'] == 'PufferTetris')
    r = http.get(f"/get_genome/{g['id']}")
    assert r.status_code == 200 and r.headers['content-type'] == 'application/octet-stream'
    assert int(r.headers['content-length']) == len(r.content) == g['size_bytes']
    assert r.headers['etag'] == f'"{g["sha256"]}"' == f'"{hashlib.sha256(r.content).hexdigest()}"'
    assert (root/'genomes'/f"{g['id']}.safetensors").read_bytes() == r.content
    r2 = http.get(f"/get_genome/{g['id']}", headers={'If-None-Match': r.headers['etag']})
    assert r2.status_code == 304 and r2.content == b''
    assert http.get(f"/get_genome/{g['id']}", headers={'If-None-Match': '"other"'}).status_code == 200

def test_path_parameters_cannot_escape(root, http):
    (root/'secret.safetensors').write_bytes(b'secret')
    for bad in ['..%2Fsecret', '%2e%2e%2fsecret', '..%5Csecret', 'a.b', 'x' * 65, '%00', 'secret%2Esafetensors']:
        r = http.get(f'/get_genome/{bad}')
        assert r.status_code in (404, 422) and b'secret' != r.content, bad
    assert http.get('/get_genome/secret').status_code == 404
    with serve_in_thread(create_app(root)) as url:  # raw bytes on the wire: no client-side normalisation of '..'
        port = int(url.rsplit(':', 1)[1])
        for path in ['/get_genome/../secret.safetensors', '/get_genome/..%2F..%2Fsecret', '/get_genome/%2e%2e/secret']:
            with socket.create_connection(('127.0.0.1', port)) as s:
                s.sendall(f'GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'.encode())
                data = b''
                while chunk := s.recv(65536): data += chunk
            assert data.split(b' ')[1] in (b'404', b'422') and b'secret' not in data.split(b'\r\n\r\n', 1)[1], (path, data[:100])

# --- security and uploads

def test_writes_need_the_token(http, root):
    data, _ = genome_file(root)
    before = state(root)
    assert http.post('/submit_genome', content=data).status_code == 401
    assert http.post('/submit_genome', content=data, headers={'Authorization': 'Bearer wrong-token-123'}).status_code == 403
    assert http.post('/submit_genome', content=data, headers={'Authorization': f'Basic {TOKEN}'}).status_code == 401
    gid = http.get('/get_genome_manifest').json()['genomes'][0]['id']
    assert http.post('/update_genome_stats', json=dict(genome_id=gid, results=[dict(score=1, survival=1)])).status_code == 401
    assert http.post('/run_tournament', json={}).status_code == 401
    assert state(root) == before
    with TestClient(create_app(root)) as ro:
        r = ro.post('/submit_genome', content=data, headers=AUTH)
        assert r.status_code == 403 and 'read-only' in r.json()['detail']
        assert ro.get('/get_genome_manifest').status_code == 200
    assert state(root) == before

def _tamper(data, fn):
    "Rewrite the safetensors header of `data` with `fn(header)`."
    n = int.from_bytes(data[:8], 'little'); h = json.loads(data[8:8+n]); fn(h); hb = json.dumps(h).encode()
    return len(hb).to_bytes(8, 'little') + hb + data[8+n:]

def _meta(data, **kw):
    def fn(h):
        m = json.loads(h['__metadata__']['genome']); m.update(kw); h['__metadata__']['genome'] = json.dumps(m)
    return _tamper(data, fn)

def test_bad_uploads_get_4xx_and_leave_nothing(http, root, monkeypatch):
    unpickled = []
    for mod, name in [(pickle, 'loads'), (pickle, 'load'), (torch, 'load')]:
        monkeypatch.setattr(mod, name, lambda *a, _n=name, **k: unpickled.append(_n))
    good, src = genome_file(root)
    with Registry(root) as reg: _, params = reg.load(src.id)
    params = {k: v.clone() for k, v in params.items()}; params['actor.bias'][0] = float('nan')
    nan = genome_to_bytes(Genome(name='N', type='rl', arena='snake', arch='linear_lstm', config=src.config, source='t'), params)
    cases = [
        (b'', 400, 'safetensors'), (b'hello world, not a genome', 400, 'safetensors'), (good[:5000], 400, 'safetensors'), (good[:300], 400, 'header length'),
        (pickle.dumps({'w': torch.zeros(3)}), 400, 'safetensors'),
        (torch.save.__module__.encode() * 10, 400, 'safetensors'),
        (_tamper(good, lambda h: h.pop('__metadata__')), 400, 'genome_lab metadata'),
        (_meta(good, arch='os.system'), 400, 'unknown architecture'),
        (_meta(good, type='virus'), 400, 'bad genome metadata'),
        (_meta(good, id='../../etc'), 400, 'bad genome metadata'),
        (_meta(good, config=dict(src.config, hidden=64)), 400, 'wrong shape'),
        (_meta(good, arch='snake_heuristic', config=dict(vision=10_000)), 400, 'limit'),
        (_meta(good, parents=[dict(id='nosuchgenome', relation='clone')]), 400, 'not a genome of this registry'),
        (_tamper(good, lambda h: h.pop('actor.bias')), 400, None),
        (nan, 400, 'NaN'),
        (good + b'\0' * (2 << 20), 413, 'limit'),
    ]
    before = state(root)
    for data, code, why in cases:
        r = http.post('/submit_genome', content=data, headers=AUTH)
        assert r.status_code == code, (why, r.status_code, r.text[:300])
        assert why is None or why in r.json()['detail'], (why, r.json())
        assert state(root) == before, why
    assert unpickled == []  # nothing was ever unpickled

def test_submit_stores_a_candidate_with_lineage(http, root):
    data, src = genome_file(root, parents=[dict(id='ada', relation='player')])
    data = _meta(data, parents=[dict(id='ada', relation='player'), dict(id=src.id, relation='finetune')])
    r = http.post('/submit_genome', content=data, headers=AUTH)
    assert r.status_code == 201, r.text
    out = r.json()
    with Registry(root) as reg:
        g = reg.genome(out['id'])
        assert g['status'] == 'candidate' and g['parents'] == [dict(id='ada', relation='player'), dict(id=src.id, relation='finetune')]
        assert torch.equal(reg.load(out['id'])[1]['actor.weight'], reg.load(src.id)[1]['actor.weight'])
    assert http.get(f"/get_genome/{out['id']}").headers['etag'] == f'"{out["sha256"]}"'
    assert http.post('/submit_genome', content=data, headers=AUTH).status_code == 409
    assert out['id'] not in [g['id'] for g in http.get('/get_genome_manifest').json()['genomes']]  # candidates are not served as active

def test_a_failing_write_leaves_nothing_half_written(http, root, monkeypatch):
    "A crash between the file write and the commit (naming the written file fails) leaves no file and no row."
    import genome_lab.registry.genomes as R
    data, _ = genome_file(root)
    before = state(root)
    def boom(*a, **k): raise OSError("disk failed")
    for name in ('link', 'replace'): monkeypatch.setattr(R.os, name, boom)   # `atomic_write` names a new file by a link
    assert http.post('/submit_genome', content=data, headers=AUTH).status_code == 500
    assert state(root) == before
    monkeypatch.undo()
    assert http.post('/submit_genome', content=data, headers=AUTH).status_code == 201

# --- game results and concurrency

def test_update_genome_stats(http, root):
    gid = http.get('/get_genome_manifest').json()['genomes'][0]['id']
    r = http.post('/update_genome_stats', headers=AUTH,
                  json=dict(genome_id=gid, player='ada', results=[dict(score=2, survival=10), dict(score=4, survival=30, kills=1)]))
    assert r.status_code == 200, r.text
    assert r.json()['recorded'] == 2 and r.json()['stats']['games'] == 2 and r.json()['stats']['avg_score'] == 3
    for bad in [dict(genome_id=gid, results=[]), dict(genome_id=gid, results=[dict(score=float('inf'), survival=1)]),
                dict(genome_id=gid, results=[dict(score=1e300, survival=1)]), dict(genome_id=gid, results=[dict(score=True, survival=1)]),
                dict(genome_id=gid, results=[dict(score=1, survival=1, extra=1)])]:
        assert http.post('/update_genome_stats', headers=AUTH, content=json.dumps(bad)).status_code in (400, 422), bad
    assert http.post('/update_genome_stats', headers=AUTH, json=dict(genome_id='nope', results=[dict(score=1, survival=1)])).status_code == 404
    with Registry(root) as reg: assert reg.games(gid) == 2

def test_concurrent_stats_updates_lose_nothing(root):
    "32 clients on their own connections each record 10 games at once on a live server: all 320 are counted."
    C, G = 32, 10
    with Registry(root) as reg: gid = reg.by_name('PufferSnake')
    errors = []
    with serve_in_thread(create_app(root, token=TOKEN)) as url:
        def client(c):
            with httpx.Client(base_url=url, headers=AUTH, timeout=60) as h:
                for k in range(G):
                    r = h.post('/update_genome_stats', json=dict(genome_id=gid, results=[dict(score=c*1000 + k, survival=1)]))
                    if r.status_code != 200: errors.append(r.text)
        ts = [threading.Thread(target=client, args=(c,)) for c in range(C)]
        for t in ts: t.start()
        for t in ts: t.join()
    assert errors == []
    with Registry(root) as reg:
        got = sorted(r[0] for r in reg.db.execute('SELECT score FROM results WHERE genome=?', (gid,)))
    assert got == sorted(float(c*1000 + k) for c in range(C) for k in range(G))

# --- tournament jobs

def test_run_tournament_job_reports_progress_and_result(root):
    "The evaluation job (every active genome in its arena) reports progress and records its results."
    with TestClient(create_app(root, token=TOKEN, job=evaluation_job)) as http:
        r = http.post('/run_tournament', headers=AUTH, json=dict(arena='snake', agents=8, max_steps=200, settings=dict(width=32, height=24, num_food=16)))
        assert r.status_code == 202
        job = r.json(); seen = set()
        for _ in range(600):
            job = http.get(f"/tournament_status/{job['id']}").json(); seen.add(job['status'])
            if job['status'] not in ('queued', 'running'): break
            time.sleep(0.1)
        assert job['status'] == 'done', job
        assert job['progress'] == 1.0 and job['finished']
        with Registry(root) as reg:
            snakes = [g for g in reg.ids('active') if reg.genome(g)['arena'] == 'snake']
            assert sorted(job['result']) == sorted(snakes) and len(snakes) == 3
            kinds = [r[0] for r in reg.db.execute('SELECT kind FROM evaluations')]
            assert kinds.count('evaluation') == 3   # solo evaluations, kept apart from tournament games
            for gid, res in job['result'].items(): assert res['n'] == reg.games(gid) and res['n'] + res['censored'] == 8
            assert sum(res['n'] for res in job['result'].values()) > 0
        assert http.get('/get_genome_manifest').json()['last_tournament'] is not None
        assert http.get('/tournament_status/ffff').status_code == 404

def test_tournament_job_is_pluggable_and_one_at_a_time(root):
    go, calls = threading.Event(), []
    def job(registry, req, progress):
        progress(0.5, 'half way'); calls.append(req.seed); go.wait(10)
        return dict(winner=registry.ids('active')[0])
    with TestClient(create_app(root, token=TOKEN, job=job)) as http:
        j = http.post('/run_tournament', headers=AUTH, json=dict(seed=7)).json()
        for _ in range(100):
            s = http.get(f"/tournament_status/{j['id']}").json()
            if s['message'] == 'half way': break
            time.sleep(0.02)
        assert s['status'] == 'running' and s['progress'] == 0.5 and s['kind'] == 'job'
        assert http.post('/run_tournament', headers=AUTH, json={}).status_code == 409
        go.set()
        for _ in range(100):
            s = http.get(f"/tournament_status/{j['id']}").json()
            if s['status'] == 'done': break
            time.sleep(0.02)
        assert s['result']['winner'] in Registry(root).ids('active') and calls == [7]
    def failing(registry, req, progress): raise RuntimeError("no arena")
    with TestClient(create_app(root, token=TOKEN, job=failing)) as http:
        j = http.post('/run_tournament', headers=AUTH, json={}).json()
        for _ in range(100):
            s = http.get(f"/tournament_status/{j['id']}").json()
            if s['status'] != 'running' and s['status'] != 'queued': break
            time.sleep(0.02)
        assert s['status'] == 'failed' and 'no arena' in s['error']

def test_a_running_job_can_be_cancelled_with_the_token(root):
    "A job that would run for ever stops at its next progress report; the slot is free again. Unknown or ended jobs: 404, 409."
    def endless(registry, req, progress):
        for k in itertools.count(): progress(0.5, f'step {k}'); time.sleep(0.05)
    with TestClient(create_app(root, token=TOKEN, job=endless)) as http:
        j = http.post('/run_tournament', headers=AUTH, json={}).json()
        assert http.post(f"/cancel_job/{j['id']}").status_code == 401   # the token is needed
        assert http.post('/cancel_job/ffff', headers=AUTH).status_code == 404
        r = http.post(f"/cancel_job/{j['id']}", headers=AUTH)
        assert r.status_code == 202 and r.json()['message'] == 'cancelling', r.text
        for _ in range(300):
            s = http.get(f"/tournament_status/{j['id']}").json()
            if s['status'] != 'running': break
            time.sleep(0.05)
        assert s['status'] == 'cancelled' and s['finished'], s
        assert http.post(f"/cancel_job/{j['id']}", headers=AUTH).status_code == 409   # it has ended
        j2 = http.post('/run_tournament', headers=AUTH, json={})
        assert j2.status_code == 202   # the slot is free
        assert http.post(f"/cancel_job/{j2.json()['id']}", headers=AUTH).status_code == 202   # and the app's shutdown waits for it

# --- the CLI

@pytest.fixture
def refused_serve(cli, monkeypatch):
    """`genome-lab serve ARGS` without GENOME_LAB_TOKEN in this process (`cli`), for a command line it refuses before it
    serves: serving fails the test (where it would wait for ever)."""
    import uvicorn
    monkeypatch.delenv('GENOME_LAB_TOKEN', raising=False)
    monkeypatch.setattr(uvicorn, 'run', lambda *a, **kw: pytest.fail('genome-lab serve served a command line it should refuse'))
    return lambda *args: cli('serve', *args)

def test_serve_refuses_to_start_writable_without_a_token(tmp_path, refused_serve):
    r = refused_serve('--registry', tmp_path/'r', '--port', free_port())
    assert r.returncode == 2 and 'no token' in r.stderr

def test_serve_cli_serves_and_guards_writes(tmp_path):
    port = free_port()
    p = subprocess.Popen([BIN/'genome-lab', 'serve', '--registry', tmp_path/'r', '--port', str(port), '--seed-founders'],
                         env={**os.environ, 'GENOME_LAB_TOKEN': TOKEN}, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            try:
                if httpx.get(f'http://127.0.0.1:{port}/health').json()['writable']: break
            except httpx.HTTPError: time.sleep(0.1)
        man = httpx.get(f'http://127.0.0.1:{port}/get_genome_manifest').json()
        assert len(man['genomes']) == 5
        gid = man['genomes'][0]['id']
        body = dict(genome_id=gid, results=[dict(score=1, survival=2)])
        assert httpx.post(f'http://127.0.0.1:{port}/update_genome_stats', json=body).status_code == 401
        assert httpx.post(f'http://127.0.0.1:{port}/update_genome_stats', json=body, headers=AUTH).status_code == 200
    finally:
        p.terminate(); p.wait(20)

def test_serve_drops_a_client_that_sends_its_headers_slowly(tmp_path):
    "slowloris: a request's headers sent a byte every half second are cut off at the header timeout (10 s), not served for ever."
    from genome_lab.web.server import HeaderTimeoutProtocol
    Registry(tmp_path/'r').close()
    port = free_port()
    p = subprocess.Popen([BIN/'genome-lab', 'serve', '--registry', tmp_path/'r', '--port', str(port), '--read-only'], stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            try: httpx.get(f'http://127.0.0.1:{port}/health'); break
            except httpx.HTTPError: time.sleep(0.1)
        with socket.create_connection(('127.0.0.1', port), timeout=5) as s:
            s.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\n')
            t0, closed = time.monotonic(), False
            while not closed and time.monotonic() - t0 < 60:
                try: s.sendall(b'X')   # one more byte of a header that never ends
                except OSError: closed = True; break
                try: s.settimeout(0.5); closed = s.recv(100) == b''
                except socket.timeout: pass
                except OSError: closed = True
        assert closed, "the server kept a connection whose headers never ended for 60 s"
        assert time.monotonic() - t0 < HeaderTimeoutProtocol.header_timeout_s + 20
        assert httpx.get(f'http://127.0.0.1:{port}/health').status_code == 200
    finally:
        p.terminate(); p.wait(20)

# --- the client

def add_random_genomes(root, n, arena='snake', status='active'):
    ids = []
    with Registry(root) as reg:
        for k in range(n):
            g = Genome(name=f'R{k:02d}', type='baseline', arena=arena, arch='random', config=dict(num_actions=4), source='test')
            pol = RandomPolicy(4); pol.logits.data[:] = torch.arange(4.) * k  # distinct bytes
            reg.add(g, pol.state_dict(), status=status); ids.append(g.id)
    return ids

def test_client_progressive_loading_and_cache(root, tmp_path):
    with TestClient(create_app(root, token=TOKEN)) as http:
        c = GenomeClient(http=http, cache_dir=tmp_path/'cache', arena='snake')
        c.refresh()
        order = c.load_order()
        sizes = [c.genomes[g]['size_bytes'] for g in order]
        assert sizes == sorted(sizes) and len(order) == 3
        usable = []
        for gid in c.load_all():
            usable.append(len(c.policies))
            assert gid in c.policies and c.policies[gid].act(np.zeros((2, 11, 11), np.int8))[0].shape == (2,)
        assert usable == [1, 2, 3] and c.order_loaded == order and (c.downloads, c.cache_hits) == (3, 0)
        assert sorted(p.name for p in (tmp_path/'cache').iterdir()) == sorted(f"{c.genomes[g]['sha256']}.safetensors" for g in order)
        c2 = GenomeClient(http=http, cache_dir=tmp_path/'cache', arena='snake')
        assert list(c2.load_all()) == order and (c2.downloads, c2.cache_hits) == (0, 3)
        # a cached file that was damaged is fetched again, not trusted
        (tmp_path/'cache'/f"{c.genomes[order[0]]['sha256']}.safetensors").write_bytes(b'junk')
        c3 = GenomeClient(http=http, cache_dir=tmp_path/'cache', arena='snake')
        list(c3.load_all())
        assert (c3.downloads, c3.cache_hits) == (1, 2)

def test_client_background_loading_makes_genomes_usable_one_by_one(root):
    gate = threading.Semaphore(0)
    class Slow(httpx.BaseTransport):
        def __init__(self, inner): self.inner = inner
        def handle_request(self, req):
            if '/get_genome/' in req.url.path: gate.acquire(timeout=10)
            return self.inner.handle_request(req)
    with TestClient(create_app(root)) as http:
        http._transport = Slow(http._transport)
        c = GenomeClient(http=http, arena='tetris')
        t = c.start_loading()
        time.sleep(0.2); assert c.policies == {}
        gate.release()
        for _ in range(200):
            if len(c.policies) == 1: break
            time.sleep(0.01)
        assert len(c.policies) == 1 and c.spawn(np.random.default_rng(0))[0] == c.order_loaded[0]
        gate.release(); t.join(10)
        assert len(c.policies) == 2

def test_spawn_shares(root):
    "10% player genome, 30% top 5, 60% default, over 20,000 draws (4 sigma), with 8 genomes ranked by their ratings."
    ids = add_random_genomes(root, 8)
    with Registry(root) as reg, reg.transaction() as db:   # ratings as tournaments write them: mu grows with k
        db.executemany('INSERT INTO ratings VALUES (?,?,?,?,?,?)',
                       [(gid, arena_version('snake'), 20.0 + k, 2.0, 10, '2026-01-01') for k, gid in enumerate(ids)])
    with TestClient(create_app(root)) as http:
        c = GenomeClient(http=http, arena='snake')
        list(c.load_all())
        top5 = set(ids[-5:])  # the highest ordinals
        assert {g for g in c.genomes if (c.genomes[g]['rank'] or 99) <= 5} == top5
        player, default = ids[0], ids[1]
        rng, n = np.random.default_rng(1), 20_000
        draws = [c.spawn(rng, player_genome=player, default_genome=default) for _ in range(n)]
        for reason, p, pool in [('player', 0.1, {player}), ('top', 0.3, top5), ('default', 0.6, {default})]:
            got = [g for g, r in draws if r == reason]
            assert set(got) <= pool, reason
            assert abs(len(got)/n - p) < 4*np.sqrt(p*(1-p)/n), (reason, len(got)/n)
        counts = np.array([sum(g == t for g, r in draws if r == 'top') for t in sorted(top5)])
        assert abs(counts/counts.sum() - 0.2).max() < 0.03  # uniform over the top 5
        d2 = [c.spawn(rng, player_genome=player, shares=(0.5, 0.0, 0.5)) for _ in range(4000)]
        assert abs(sum(r == 'player' for _, r in d2)/4000 - 0.5) < 0.04 and not any(r == 'top' for _, r in d2)

# --- the leaderboard page in headless Chromium

class _Dom(HTMLParser):
    "Collects elements' attributes and text of the rendered page."
    def __init__(self):
        super().__init__(); self.stack, self.items = [], []
    def handle_starttag(self, tag, attrs):
        el = dict(tag=tag, attrs=dict(attrs), text=''); self.items.append(el)
        if tag not in ('br', 'meta', 'img', 'input', 'link'): self.stack.append(el)
    def handle_endtag(self, tag):
        while self.stack:
            el = self.stack.pop()
            if el['tag'] == tag: break
    def handle_data(self, data):
        for el in self.stack: el['text'] += data

def test_leaderboard_page_in_headless_chromium(root, tmp_path):
    "Per arena the ratings in order with mu ± sigma and '73% win rate, 47 games', the season's replacements, players, and a family tree whose labels fit their boxes with no edge crossing another."
    from genome_lab.tournaments.tournament import run_tournament
    from genome_lab.tournaments.selection import select, SelectionRules
    browser = chromium()
    ids = add_random_genomes(root, 6, status='candidate')
    with Registry(root) as reg:
        for k, gid in enumerate(ids): reg.record_games(gid, [dict(score=float(k), survival=1.0)] * 2, player='ada' if k < 3 else 'bob')
        child = Genome(name='Kid<script>alert(1)</script>', type='behavioral', arena='snake', arch='random', config=dict(num_actions=4),
                       source='test', parents=[dict(id='ada', relation='player'), dict(id=ids[-1], relation='clone')])
        reg.add(child, RandomPolicy(4).state_dict())
        t = run_tournament(reg, arena='snake', genomes_per_game=3, agents_per_genome=3, steps=60, meetings=2, seed=1, progress=False,
                           settings=dict(width=32, height=24, num_food=16), tags=dict(season=1))
        plan = select(reg, t.leaderboard, t.evaluation, SelectionRules(n_replace=2, max_active=7), arena_only=True)
        rated = {r['genome']: r for r in map(dict, reg.db.execute('SELECT * FROM ratings'))}
        added = [reg.genome(a)['name'] for _, a in plan.changes]
        active = set(reg.ids('active'))
    assert len(plan.changes) == 2
    with serve_in_thread(create_app(root)) as url:
        data = httpx.get(f'{url}/api/leaderboard').json()
        r = subprocess.run([browser, *CHROMIUM_FLAGS, f'--user-data-dir={tmp_path/"chromium"}', '--virtual-time-budget=3000',
                            '--dump-dom', f'{url}/leaderboard'], capture_output=True, text=True, timeout=120)
        shot = subprocess.run([browser, *CHROMIUM_FLAGS, f'--user-data-dir={tmp_path/"chromium2"}', '--virtual-time-budget=3000',
                               '--window-size=1400,1800', f'--screenshot={tmp_path/"leaderboard.png"}', f'{url}/leaderboard'], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shot.returncode == 0 and (tmp_path/'leaderboard.png').stat().st_size > 10_000
    dom = _Dom(); dom.feed(r.stdout)
    find = lambda tag, **kw: [e for e in dom.items if e['tag'] == tag and all(e['attrs'].get(k.replace('_', '-')) == v for k, v in kw.items())]
    assert find('body', data_rendered='yes'), "the page's script did not render"
    rows = [e for e in dom.items if e['tag'] == 'tr' and e['attrs'].get('class') == 'genome-row']
    snake_rows = [e['attrs']['data-id'] for e in rows if e['attrs']['data-id'] in {g['id'] for g in data['arenas']['snake']}]
    assert snake_rows == [g['id'] for g in data['arenas']['snake']] and len(snake_rows) == 10   # 3 founders + 7 candidates
    status = [g['status'] for g in data['arenas']['snake']]
    assert status == sorted(status), status   # the active genomes first, then the candidates (46: apart)
    for st in ('active', 'candidate'):   # each in rating order
        ordinals = [rated[i]['mu'] - 3*rated[i]['sigma'] for i, s in zip(snake_rows, status) if s == st]
        assert ordinals == sorted(ordinals, reverse=True), (st, ordinals)
    records = [e['text'] for e in find('td', **{'class': 'record'})]
    for g, text in zip(data['arenas']['snake'], records):
        assert text == f"{round(100*g['win_rate'])}% win rate, {g['games']} games", (text, g)   # the design's record format (docs/design.md, Player loop)
        assert g['games'] == rated[g['id']]['games']
    assert all(re.fullmatch(r'-?\d+\.\d\d ± \d+\.\d\d', e['text']) for e in find('td', **{'class': 'num rating'}))
    reps = find('tr', **{'class': 'replacement-row', 'data-season': '1'})
    assert len(reps) == 2 and all(any(n in e['text'] for e in reps) for n in added)   # the season's swaps, by name
    assert all(sum(e['attrs'].get('href') == f'genome/{a}' for e in find('a')) == 2 for _, a in plan.changes)   # its row and its swap (issue 58)
    players = {e['attrs']['data-player']: e['text'] for e in find('tr', **{'class': 'player-row'})}
    assert set(players) == {'ada', 'bob'} and players['ada'] == 'ada61' and players['bob'] == 'bob60'   # games reported, genomes with the player as parent
    nodes = [e for e in dom.items if e['tag'] == 'g' and 'node' in e['attrs'].get('class', '')]
    assert {e['attrs']['data-id'] for e in nodes if 'genome' in e['attrs']['class']} >= active   # the active genomes and their ancestors
    assert all(int(e['attrs']['data-label-width']) <= int(e['attrs']['data-box-width']) for e in nodes)   # no label clipped
    assert find('svg', id='family-tree')[0]['attrs']['data-crossings'] == '0'
    assert any('Kid<script>alert(1)</script>' in e['text'] for e in find('td', **{'class': 'name'}))   # shown as text, never parsed as HTML
    assert not any(e['tag'] == 'script' and e['text'].strip() == 'alert(1)' for e in dom.items)  # no injected script element

# --- the benchmark and the fuzz run, with tiny settings

def test_load_benchmark_runs():
    r = subprocess.run([sys.executable, ROOT/'bench'/'server_load.py', '--seconds', '0.2', '--conns', '1,4', '--clients', '8', '--games', '5',
                        '--servers', 'h11:1,httptools:2'],
                       capture_output=True, text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'genome 1MB' in r.stdout and 'counted 40 of 40' in r.stdout and 'stats updates: OK' in r.stdout
    assert 'status 200 (200 = not stale), ETag changed: True' in r.stdout and '2 worker process(es)' in r.stdout

def test_fuzz_small_budget():
    r = subprocess.run([sys.executable, ROOT/'bench'/'fuzz_server.py', '--max-examples', '5', '--min-requests', '40', '--max-time', '20',
                        '--phases', 'fuzzing,stateful'],
                       capture_output=True, text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'}, timeout=300)
    assert r.returncode == 0 and 'fuzz: OK' in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]

def test_a_damaged_genome_file_is_not_served(root):
    with Registry(root) as reg: gid = reg.by_name('RandomSnake')
    path = root/'genomes'/f'{gid}.safetensors'
    path.write_bytes(path.read_bytes()[:-4] + b'\0\0\0\1')
    with TestClient(create_app(root), raise_server_exceptions=False) as http:
        r = http.get(f'/get_genome/{gid}')
        assert r.status_code == 500 and 'damaged' in r.json()['detail']

def test_a_crowded_snake_map_is_refused(http):
    "PufferLib's snake looks for free cells in a loop that holds the GIL: a full map would freeze the server."
    r = http.post('/run_tournament', headers=AUTH, json=dict(arena='snake', agents=256, settings=dict(width=16, height=16, num_food=4096)))
    assert r.status_code == 422 and 'crowd' in r.text
    r = http.post('/run_tournament', headers=AUTH, json=dict(arena='tetris', agents=4, max_steps=100))
    assert r.status_code == 202
    for _ in range(300):  # let the job end before the test does
        if http.get(f"/tournament_status/{r.json()['id']}").json()['status'] == 'done': break
        time.sleep(0.1)
    assert http.get(f"/tournament_status/{r.json()['id']}").json()['status'] == 'done'

# --- hardening (issue 26): tokens, body caps, hostile inputs, arena fit, retiring, read-only, the manifest cache

def test_serve_never_takes_the_token_on_the_command_line(tmp_path):
    "A token on the command line is readable by every process (/proc/PID/cmdline): there is no such flag."
    with Registry(tmp_path/'r') as reg: seed_founders(reg)
    env = {k: v for k, v in os.environ.items() if k != 'GENOME_LAB_TOKEN'}
    r = subprocess.run([BIN/'genome-lab', 'serve', '--registry', tmp_path/'r', '--port', str(free_port()), '--token', TOKEN],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and 'unrecognized argument --token' in r.stderr, r.stderr
    (tmp_path/'token').write_text(TOKEN + '\n')
    port = free_port()
    p = subprocess.Popen([BIN/'genome-lab', 'serve', '--registry', tmp_path/'r', '--port', str(port), '--token-file', tmp_path/'token'],
                         env=env, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            try:
                if httpx.get(f'http://127.0.0.1:{port}/health').json()['writable']: break
            except httpx.HTTPError: time.sleep(0.1)
        assert TOKEN not in Path(f'/proc/{p.pid}/cmdline').read_bytes().decode(errors='replace')
        gid = httpx.get(f'http://127.0.0.1:{port}/get_genome_manifest').json()['genomes'][0]['id']
        body = dict(genome_id=gid, results=[dict(score=1, survival=2)])
        assert httpx.post(f'http://127.0.0.1:{port}/update_genome_stats', json=body, headers=AUTH).status_code == 200
    finally: p.terminate(); p.wait(20)

def test_the_token_is_checked_before_the_body_is_read(http):
    "Without the token a write answers 401/403 whatever its body (it is never parsed); before, a malformed body got 422."
    for path in ('/update_genome_stats', '/run_tournament', '/retire_genome/x'):
        assert http.post(path, content=b'{' * 100_000, headers={'Content-Type': 'application/json'}).status_code == 401, path
        assert http.post(path, content=b'{' * 100_000, headers={'Content-Type': 'application/json', 'Authorization': 'Bearer wrong-token-1'}).status_code == 403

def test_every_body_is_capped(http):
    "A token holder's body over the cap gets 413, declared (Content-Length) or streamed in chunks, before it is parsed."
    gid = http.get('/get_genome_manifest').json()['genomes'][0]['id']
    big = json.dumps(dict(genome_id=gid, results=[dict(score=1.0, survival=1.0)] * 60_000)).encode()   # about 2 MiB
    assert len(big) > 1 << 20
    assert http.post('/update_genome_stats', content=big, headers={**AUTH, 'Content-Type': 'application/json'}).status_code == 413
    chunks = (big[i:i + 65536] for i in range(0, len(big), 65536))
    assert http.post('/update_genome_stats', content=chunks, headers={**AUTH, 'Content-Type': 'application/json'}).status_code == 413
    assert http.post('/update_genome_stats', json=dict(genome_id=gid, results=[dict(score=1.0, survival=1.0)]), headers=AUTH).status_code == 200

def test_hostile_safetensors_headers_get_400(http, root):
    good, _ = genome_file(root)
    deep = b'{"a":' * 5000 + b'1' + b'}' * 5000
    first = lambda h: next(k for k in h if k != '__metadata__')
    cases = [len(deep).to_bytes(8, 'little') + deep,
             _tamper(good, lambda h: h[first(h)].update(shape=5)), _tamper(good, lambda h: h[first(h)].update(shape=None)),
             _tamper(good, lambda h: h[first(h)].update(shape=['a'])), _tamper(good, lambda h: h[first(h)].update(shape=[-1])),
             _tamper(good, lambda h: h[first(h)].pop('dtype')), _tamper(good, lambda h: h.update({first(h): 7}))]
    before = state(root)
    for data in cases:
        r = http.post('/submit_genome', content=data, headers=AUTH)
        assert r.status_code == 400 and r.json()['detail'], r.text[:300]
    assert state(root) == before

def test_nan_and_infinity_in_requests_get_422(http):
    "Python's JSON reads NaN and Infinity; the 422 must still be JSON (it named the input before, and could not be written)."
    gid = http.get('/get_genome_manifest').json()['genomes'][0]['id']
    bodies = [('/update_genome_stats', '{"genome_id": "%s", "results": [{"score": NaN, "survival": 1}]}' % gid),
              ('/update_genome_stats', '{"genome_id": "%s", "results": [{"score": 1, "survival": Infinity}]}' % gid),
              ('/run_tournament', '{"arena": "snake", "settings": {"width": NaN}}'),
              ('/run_tournament', '{"arena": "tetris", "settings": {"x": -Infinity}}')]
    for path, body in bodies:
        r = http.post(path, content=body, headers={**AUTH, 'Content-Type': 'application/json'})
        assert r.status_code == 422 and r.json()['detail'], (path, r.status_code, r.text[:300])

def test_a_genome_that_does_not_fit_its_arena_is_refused(http, root):
    "A random policy with 1000 actions for snake, or tetris's network for snake, would break every later tournament."
    rnd = genome_to_bytes(Genome(name='R1000', type='baseline', arena='snake', arch='random', config=dict(num_actions=1000), source='t'),
                          RandomPolicy(1000).state_dict())
    with Registry(root) as reg: tg, tp = reg.load(reg.by_name('PufferTetris'))
    tetris_net = genome_to_bytes(Genome(name='T', type='rl', arena='snake', arch='linear_lstm', config=tg.config, source='t'), tp)
    before = state(root)
    for data, why in [(rnd, '4 actions'), (tetris_net, "cannot read snake's observations")]:
        r = http.post('/submit_genome', content=data, headers=AUTH)
        assert r.status_code == 400 and why in r.json()['detail'], r.text[:300]
    assert state(root) == before
    ok = genome_to_bytes(Genome(name='R4', type='baseline', arena='snake', arch='random', config=dict(num_actions=4), source='t'), RandomPolicy(4).state_dict())
    assert http.post('/submit_genome', content=ok, headers=AUTH).status_code == 201

def test_a_program_is_checked_at_the_door(http, root):
    """Issue 57: `/submit_genome` stored a 3 MB program and hostile ones that only a season's sandbox stopped. Now a
    program's size and its qualifying game decide at the door, with the reason in the answer, and nothing is stored."""
    from genome_lab.programs.program_policy import program_genome
    from genome_lab.web.submission import PROGRAM_MAX_BYTES
    good = "def choose_action(obs, view, memory):\n    return 0\n"
    huge = good + '#' * PROGRAM_MAX_BYTES + '\n'
    slow = "import time\ndef choose_action(obs, view, memory):\n    time.sleep(0.045)\n    return 0\n"
    rude = "import os\ndef choose_action(obs, view, memory):\n    os.system('true')\n    return 0\n"
    up = lambda name, src: genome_to_bytes(program_genome(name, 'snake', src, origin='test'), {})
    before = state(root)
    for name, src, why in [('Huge', huge, 'bytes of source; the limit is'), ('Slow', slow, 'on average'), ('Rude', rude, 'forbidden')]:
        r = http.post('/submit_genome', content=up(name, src), headers=AUTH)
        assert r.status_code == 400 and why in r.json()['detail'], (name, r.text[:300])
    assert state(root) == before
    assert http.post('/submit_genome', content=up('Plain', good), headers=AUTH).status_code == 201
    from genome_lab.programs.tetris_players import tetris_baselines
    with Registry(root.parent/'players') as reg:   # the reference players fit ten times over (81_submission's comment on the limit)
        assert all(len(reg.genome(i)['config']['source'].encode()) * 10 < PROGRAM_MAX_BYTES for i in tetris_baselines(reg).values())

def test_a_token_holder_retires_a_genome(http, root):
    man = http.get('/get_genome_manifest').json()
    gid = next(g['id'] for g in man['genomes'] if g['name'] == 'RandomSnake')
    assert http.post(f'/retire_genome/{gid}').status_code == 401
    assert http.post('/retire_genome/nosuchgenome', headers=AUTH).status_code == 404
    r = http.post(f'/retire_genome/{gid}', headers=AUTH)
    assert r.status_code == 200 and r.json()['status'] == 'retired'
    assert gid not in [g['id'] for g in http.get('/get_genome_manifest').json()['genomes']]
    assert http.get(f'/get_genome/{gid}').status_code == 200   # its file, results and lineage stay

def test_read_only_never_writes_the_registry(tmp_path, refused_serve):
    "An emptied registry.sqlite served --read-only is refused, and stays empty (before: a new schema was written into it)."
    (tmp_path/'r').mkdir(); (tmp_path/'r'/'registry.sqlite').write_bytes(b'')
    r = refused_serve('--registry', tmp_path/'r', '--read-only', '--port', free_port())
    assert r.returncode == 2 and 'not a registry' in r.stderr, r.stderr
    assert sorted(p.name for p in (tmp_path/'r').iterdir()) == ['registry.sqlite'] and (tmp_path/'r'/'registry.sqlite').stat().st_size == 0
    (tmp_path/'file').write_text('x')
    r = refused_serve('--registry', tmp_path/'file', '--read-only')
    assert r.returncode == 2 and 'is a file' in r.stderr, r.stderr

def test_the_manifest_cache_is_never_stale(root):
    "ETag and 304; every write (this app, another app on the same registry as another worker would be, another process) shows at once."
    with TestClient(create_app(root, token=TOKEN)) as a, TestClient(create_app(root)) as b:
        r = b.get('/get_genome_manifest'); etag = r.headers['etag']
        assert b.get('/get_genome_manifest', headers={'If-None-Match': etag}).status_code == 304
        gid = next(g['id'] for g in r.json()['genomes'] if g['name'] == 'PufferSnake')
        games = lambda c: next(g for g in c.get('/get_genome_manifest').json()['genomes'] if g['id'] == gid)['performance']['by_kind'].get('client')
        assert games(b) is None
        for k in range(1, 4):
            assert a.post('/update_genome_stats', json=dict(genome_id=gid, results=[dict(score=1.0, survival=1.0)]), headers=AUTH).status_code == 200
            assert games(b)['games'] == k and games(a)['games'] == k
        assert b.get('/get_genome_manifest', headers={'If-None-Match': etag}).status_code == 200
        subprocess.run([sys.executable, '-c', f"from genome_lab.registry.store import Registry; Registry({str(root)!r}).set_status({gid!r}, 'retired')"], check=True)
        assert gid not in [g['id'] for g in b.get('/get_genome_manifest').json()['genomes']]

BAD_SCHEDULES = {  # issue 30: each was stored by PUT /schedule; message expected in the 422
    'steps as text': (dict(config=dict(arena_settings=dict(snake=dict(steps='abc')))), "steps='abc' is not an int"),
    'negative steps': (dict(config=dict(arena_settings=dict(snake=dict(steps=-5)))), 'steps=-5 is not an int in [0, 1000000]'),
    'fractional steps': (dict(config=dict(arena_settings=dict(snake=dict(steps=1.5)))), 'steps=1.5 is not an int'),
    'unknown arena setting': (dict(config=dict(arena_settings=dict(snake=dict(stepz=5)))), "arena 'snake' has no season settings ['stepz']"),
    'unknown arena': (dict(config=dict(arena_settings=dict(chess=dict(steps=5)))), "unknown arena 'chess'"),
    'crowded map': (dict(config=dict(arena_settings=dict(snake=dict(width=16, height=16, num_food=500)))), 'crowd a 16x16 snake map'),
    'huge seed': (dict(config=dict(seed=10**30)), 'seed=1000000000000000000000000000000 is outside'),
    'zero batch': (dict(config=dict(batch=0)), 'batch=0 is outside'),
    'cron that never fires': (dict(cron='0 0 31 2 *'), "'0 0 31 2 *' never fires"),
    'unknown key': (dict(config=dict(snake_stepz=100)), "unknown season settings ['snake_stepz']"),
    "an older genome_lab's field": (dict(config=dict(snake_steps=100)), "an arena's own go in arena_settings"),
    'every second': (dict(cron='* * * * * *'), 'fires 1 s apart'),   # issue 45
    'a season every 5 minutes': (dict(cron='*/5 * * * *'), 'fires 300 s apart'),   # issue 57: more often than a season lasts
    'a step of 0': (dict(cron='0 0 * * 1/0'), 'not valid cron'),   # issue 57: accepted before
    'producer twice': (dict(config=dict(producers='clones,clones')), "name ['clones'] more than once"),
}

@pytest.fixture(scope='module')
def schedule_server(tmp_path_factory):
    root = tmp_path_factory.mktemp('sched')
    with Registry(root) as reg: seed_founders(reg)
    with TestClient(create_app(root, token='schedule-token')) as http:   # the `seasons` router (web.server_jobs) mounted
        yield http, {'Authorization': 'Bearer schedule-token'}

@pytest.mark.parametrize('fault', list(BAD_SCHEDULES))
def test_put_schedule_refuses_bad_settings_before_storing_them(schedule_server, fault):
    http, auth = schedule_server
    body, message = BAD_SCHEDULES[fault]
    before = http.get('/schedule').json()
    r = http.put('/schedule', headers=auth, json=dict(cron='0 3 * * 1', config={}) | body)
    assert r.status_code == 422 and message in r.json()['detail'], r.text
    assert http.get('/schedule').json() == before   # nothing was stored
