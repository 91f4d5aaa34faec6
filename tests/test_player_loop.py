"""The player loop (genome_lab.web.player_loop): chunked session uploads are never double-counted, writes need the token,
game reports give engagement."""
import hashlib, json
from pathlib import Path
import pytest
from fastapi.testclient import TestClient
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.web.server import create_app
from genome_lab.web.client import GenomeClient
from genome_lab.players.sessions import record_bot_sessions, load_sessions
from genome_lab.web.player_loop import upload_session, report_game
from genome_lab.players.sessions import uploaded_sessions

TOKEN = 'loop-token-123'
AUTH = {'Authorization': f'Bearer {TOKEN}'}

@pytest.fixture
def server(tmp_path):
    with Registry(tmp_path/'reg') as reg: seed_founders(reg)
    with TestClient(create_app(tmp_path/'reg', token=TOKEN), raise_server_exceptions=False) as http: yield tmp_path/'reg', http

@pytest.fixture
def session(tmp_path):
    sid = record_bot_sessions(tmp_path/'local', ['hunter'], per_style=1, steps=90, seed=3, chunk_rows=30, progress=False,
                              width=32, height=32, num_food=20)[0]
    return tmp_path/'local'/sid

def put(http, sid, k, data, sha=None):
    return http.put(f'/sessions/{sid}/chunks/{k}', content=data, headers={**AUTH, 'X-Chunk-SHA256': sha or hashlib.sha256(data).hexdigest()})

def test_a_repeated_chunk_is_not_double_counted(server, session):
    root, http = server
    meta = json.loads((session/'session.json').read_text())
    chunks = [(session/c['file']).read_bytes() for c in meta['chunks']]
    opened = {k: meta[k] for k in ('player', 'kind', 'style', 'arena', 'seed', 'chunk_rows') if meta.get(k) is not None}
    assert http.post('/sessions', headers=AUTH, json=dict(opened, session_id=meta['id'])).status_code == 200
    assert http.post('/sessions', headers=AUTH, json=dict(opened, session_id=meta['id'], style='farmer')).status_code == 409
    assert put(http, meta['id'], 0, chunks[0]).json() == dict(stored=True, steps=30)
    for _ in range(3): assert put(http, meta['id'], 0, chunks[0]).json() == dict(stored=False, steps=30)   # retries: ignored
    assert put(http, meta['id'], 1, chunks[1][:-20], hashlib.sha256(chunks[1]).hexdigest()).status_code == 400   # truncated: refused
    assert put(http, meta['id'], 2, chunks[2]).status_code == 409                                              # out of order
    assert put(http, meta['id'], 1, chunks[2]).status_code == 400                                              # wrong steps
    assert put(http, meta['id'], 0, chunks[1]).status_code == 409                                              # another chunk 0
    assert http.get(f"/sessions/{meta['id']}", headers=AUTH).json()['steps'] == 30
    client = GenomeClient(http=http, token=TOKEN)
    out = upload_session(client, session); again = upload_session(client, session)   # resumes after chunk 0, then sends nothing
    assert out == again and (out['steps'], out['chunks'], out['closed']) == (90, 3, True)
    s, = load_sessions(uploaded_sessions(root))
    assert len(s) == 90 and s.frame.step.tolist() == list(range(90)) and s.problems == []
    assert put(http, meta['id'], 3, chunks[0]).status_code == 409   # closed

def test_writes_need_the_token_and_reports_give_engagement(server, session):
    root, http = server
    assert http.post('/sessions', json=dict(session_id='x1', player='ada', kind='human')).status_code == 401
    assert http.post('/report_game', json=dict(report_id='r1', player='ada', genomes=['a'], played_again=True)).status_code == 401
    with Registry(root) as reg: snake = reg.by_name('PufferSnake'); rnd = reg.by_name('RandomSnake')
    client = GenomeClient(http=http, token=TOKEN)
    assert report_game(client, 'r1', 'ada', [snake, rnd], True)['stored']
    assert not report_game(client, 'r1', 'ada', [snake, rnd], True)['stored']        # a retry: ignored
    assert report_game(client, 'r2', 'bob', [snake], False)['engagement'] == {snake: 0.5}
    assert http.post('/report_game', headers=AUTH, json=dict(report_id='r2', player='bob', genomes=[snake], played_again=True)).status_code == 409
    assert http.post('/report_game', headers=AUTH, json=dict(report_id='r3', player='bob', genomes=['nope'], played_again=True)).status_code == 404
    perf = {g['name']: g['performance'] for g in http.get('/get_genome_manifest').json()['genomes']}
    assert (perf['PufferSnake']['player_engagement'], perf['PufferSnake']['engagement_reports']) == (0.5, 2)
    assert (perf['RandomSnake']['player_engagement'], perf['RandomSnake']['engagement_source']) == (1.0, 'reports')
    assert (perf['HeuristicSnake']['player_engagement'], perf['HeuristicSnake']['engagement_source']) == (0.5, 'neutral')
