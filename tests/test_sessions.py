"""Sessions: the chunked format, damaged chunks, the heading rule against the real arena, bots and human play."""
import json, warnings
import numpy as np
import pandas as pd
import pytest
import torch
from genome_lab.arenas.arena import SnakeArena, own_body, SNAKE_DR, SNAKE_DC
from genome_lab.players.sessions import (SESSION_FORMAT, HeadingTracker, SessionWriter, SessionFormatError, read_session, list_sessions,
                                 load_sessions, record_bot_sessions, HumanGame, play_widget, make_bot)

torch.set_num_threads(1)


def _write(root, n=10, chunk_rows=4, sid='s', close=True):
    w = SessionWriter(root, dict(player='human:t', kind='human'), chunk_rows=chunk_rows, session_id=sid)
    obs = np.random.default_rng(0).integers(0, 8, (n, 121)).astype(np.int8)
    for i in range(n): w.append(obs=obs[i], action=i % 4, reward=0.0, move=i % 4, turn=1)
    if close: w.close()
    return w, obs


def test_roundtrip_and_pandas(tmp_path):
    _, obs = _write(tmp_path)
    s = read_session(tmp_path/'s')
    assert len(s) == 10 and s.meta['format'] == SESSION_FORMAT and s.meta['closed']
    assert np.array_equal(s.obs().reshape(10, -1), obs) and s.frame.action.tolist() == [i % 4 for i in range(10)]
    assert s.frame.label.eq(-1).all() and s.frame.kill.eq(-1).all()
    whole = pd.concat([pd.read_parquet(f) for f in sorted((tmp_path/'s').glob('chunk-*.parquet'))])
    assert whole.step.tolist() == list(range(10)) and bytes(whole.obs.iloc[3]) == obs[3].tobytes()
    assert list_sessions(tmp_path).loc['s', 'steps'] == 10


def test_crash_keeps_flushed_chunks(tmp_path):
    "A writer that dies without close(): the flushed chunks read back, the buffered rows are lost, nothing is invented."
    w, obs = _write(tmp_path, n=10, chunk_rows=4, close=False)
    s = read_session(tmp_path/'s')
    assert len(s) == 8 and not s.meta['closed'] and s.problems == []
    assert np.array_equal(s.obs().reshape(8, -1), obs[:8])


def test_a_kill_while_a_chunk_is_written_leaves_no_file(tmp_path):
    "A process killed (SIGKILL) in the middle of writing a chunk, as an upload killed with the server: no chunk and no .tmp- file."
    import subprocess, sys, textwrap
    _write(tmp_path, n=4, chunk_rows=4, close=False)
    code = textwrap.dedent(f"""
        import os, signal, json
        from pathlib import Path
        from genome_lab.players.sessions import add_chunk
        folder = Path({str(tmp_path/'s')!r}); meta = json.loads((folder/'session.json').read_text())
        os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)   # killed once the chunk's bytes are written
        add_chunk(folder, meta, b'PAR1' + os.urandom(200_000), 4)
    """)
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert r.returncode == -9, r.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path/'s').iterdir()) == ['chunk-000000.parquet', 'session.json']
    assert len(read_session(tmp_path/'s')) == 4

@pytest.mark.parametrize('damage', ['truncate', 'flip', 'delete'])
def test_damaged_chunk_reported_and_skipped(tmp_path, damage):
    _write(tmp_path, n=12, chunk_rows=4)
    f = tmp_path/'s'/'chunk-000001.parquet'
    data = f.read_bytes()
    if damage == 'truncate': f.write_bytes(data[:len(data)//2])
    elif damage == 'flip': f.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else: f.unlink()
    with pytest.warns(UserWarning, match='chunk-000001'):
        s = read_session(tmp_path/'s')
    assert s.frame.step.tolist() == [0, 1, 2, 3, 8, 9, 10, 11] and s.segments() == [(0, 4), (4, 8)]
    assert len(s.problems) == 1


def test_unlisted_chunk_and_other_format(tmp_path):
    _write(tmp_path)
    (tmp_path/'s'/'chunk-000007.parquet').write_bytes((tmp_path/'s'/'chunk-000000.parquet').read_bytes())
    s = read_session(tmp_path/'s', warn=False)
    assert len(s) == 10 and any('not listed' in p for p in s.problems)
    m = json.loads((tmp_path/'s'/'session.json').read_text()); m['format'] = 'genome_lab.session/99'
    (tmp_path/'s'/'session.json').write_text(json.dumps(m))
    with pytest.raises(SessionFormatError, match='session/99'): read_session(tmp_path/'s')


def test_heading_rule_matches_the_real_arena():
    "The tracked move shifts the view as the C env moved the head (checked on walls, which never move)."
    arena = SnakeArena(width=24, height=24, num_snakes=8, num_food=20)
    rng = np.random.default_rng(1)
    ht, checked, reversals = HeadingTracker(8), 0, 0
    obs = arena.reset(1).copy()
    for _ in range(400):
        a = rng.integers(0, 4, 8)
        nobs, r, _ = arena.step(a)
        move, turn, died = ht.update(a, r)
        reversals += int(((turn == 1) & (a != move)).sum())
        for i in np.flatnonzero(~died):
            dr, dc = SNAKE_DR[move[i]], SNAKE_DC[move[i]]
            before = obs[i] == 3; after = nobs[i] == 3
            # cell (r, c) of the new view is cell (r+dr, c+dc) of the old one
            old = before[max(dr, 0):11+min(dr, 0), max(dc, 0):11+min(dc, 0)]
            new = after[max(-dr, 0):11+min(-dr, 0), max(-dc, 0):11+min(-dc, 0)]
            if old.any(): assert np.array_equal(old, new); checked += 1
        obs = nobs.copy()
    arena.close()
    assert checked > 200 and reversals > 20  # many moves checked, including moves into the neck turned to straight on


def test_bot_sessions_labelled_and_reproducible(tmp_path):
    a = record_bot_sessions(tmp_path/'a', ['farmer', 'random'], per_style=2, steps=60, seed=3, progress=False, chunk_rows=25)
    b = record_bot_sessions(tmp_path/'b', ['farmer', 'random'], per_style=2, steps=60, seed=3, progress=False, chunk_rows=25)
    ta, tb = list_sessions(tmp_path/'a'), list_sessions(tmp_path/'b')
    assert (ta.kind == 'bot').all() and sorted(ta['style']) == ['farmer', 'farmer', 'random', 'random']
    assert (ta.chunks == 3).all() and (ta.steps == 60).all()
    sa, sb = load_sessions(tmp_path/'a', a), load_sessions(tmp_path/'b', b)
    for x, y in zip(sa, sb):
        assert x.meta['style'] == y.meta['style'] and x.meta['agent'] == y.meta['agent']
        assert x.frame.drop(columns='obs').equals(y.frame.drop(columns='obs')) and np.array_equal(x.obs(), y.obs())
    with pytest.raises(ValueError, match='unknown bot style'): make_bot('sniper')


def test_own_body_is_connected_cells_of_the_head_colour():
    o = np.zeros((1, 11, 11), np.int8)
    o[0, 5, 5] = o[0, 5, 6] = o[0, 4, 6] = 5   # own body: head and two cells
    o[0, 2, 2] = 5; o[0, 8, 8] = 6              # same colour but apart; another colour
    body = own_body(o)[0]
    assert body.sum() == 3 and body[4, 6] and not body[2, 2] and not body[8, 8]


def test_human_game_step_and_widget(tmp_path):
    g = HumanGame(tmp_path, player='human:ana', seed=2, chunk_rows=4)
    ui = play_widget(g)
    for b in ('up', 'left', 'left', 'down'): ui.buttons[b].click()
    info = g.step(None)
    assert info['steps'] == 5 and g.last == 1
    ui.ticker.value += 1; ui.ticker.value += 1
    assert g.steps == 7 and 'step 7' in ui.status.value and ui.image.value[:4] == b'\x89PNG'
    with pytest.raises(ValueError, match='0..3'): g.step(4)
    ui.save.click()  # save session
    s = read_session(tmp_path/g.session_id)
    assert s.frame.action.tolist() == [0, 2, 2, 1, 1, 1, 1] and s.meta['kind'] == 'human' and s.player == 'human:ana'
    assert s.meta['closed'] and 'saved session' in ui.status.value and ui.buttons['up'].disabled
