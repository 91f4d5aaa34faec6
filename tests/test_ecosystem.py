"""The continuous ecosystem (`genome-lab ecosystem`): killed with SIGKILL in the middle of a season, it resumes and
finishes its hours with every season done once; SIGTERM stops it and its workers within seconds."""
import json, os, signal, subprocess, sys, time
import pytest
from pathlib import Path
from genome_lab.registry.store import Registry
from genome_lab.core import load_state

TINY = ['--work-s', '4', '--workers', 'clones', '--batch', '2', '--max-meetings', '1', '--arena-settings', 'snake.steps=30',
        'snake.agents=2', 'snake.width=24', 'snake.height=24', 'snake.num_food=10', 'tetris.steps=30', 'tetris.agents=2',
        'creatures.seconds=1']

def _seasons(root:Path)->list:
    try:
        with Registry(root, read_only=True) as reg:
            return [(r['id'], r['status'], len(reg.season_steps(r['id']))) for r in reg.seasons()]
    except Exception: return []   # not made yet

def test_an_ecosystem_killed_mid_season_resumes_and_counts_each_season_once(tmp_path):
    root, cmd = tmp_path/'reg', [str(Path(sys.executable).parent/'genome-lab'), 'ecosystem']
    args = ['--registry', str(tmp_path/'reg'), '--hours', str(25/3600), *TINY]
    proc = subprocess.Popen([*cmd, *args, '--create'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    t0 = time.monotonic()
    while not any(s == 'running' and n >= 2 for _, s, n in _seasons(root)):   # a season half-way: some steps stored
        assert proc.poll() is None and time.monotonic() - t0 < 240, proc.stdout.read()
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL); proc.wait()
    cut = [k for k, s, _ in _seasons(root) if s == 'running']
    done = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    seasons = _seasons(root)
    assert all(s == 'done' for _, s, _ in seasons) and cut and cut[0] in out['seasons'], (seasons, out)
    assert [k for k, _, _ in seasons] == list(range(1, len(seasons) + 1))   # no season played twice
    state = load_state(root/'ecosystem.safetensors', 'ecosystem')
    assert state['cycle'] == len(state['history']) == len(seasons) and state['seconds'] >= 25, state

@pytest.mark.timing
def test_sigterm_stops_the_ecosystem_and_its_workers_within_seconds(tmp_path):
    """Issue 53: the producers work in sessions of their own, which a signal to the ecosystem does not reach; SIGTERM
    now ends the ecosystem within seconds and each worker with it (its lock freed, nothing counted)."""
    root = tmp_path/'reg'
    proc = subprocess.Popen([str(Path(sys.executable).parent/'genome-lab'), 'ecosystem', '--registry', str(root), '--create',
                             '--hours', '1', '--work-s', '120', '--workers', 'ppo', '--ppo-device', 'cpu', '--ppo-maps', '64'],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, 'OMP_NUM_THREADS': '1'})
    lock, t0 = root/'season_work'/'ppo.lock', time.monotonic()
    while not (lock.exists() and lock.read_text().strip()):   # the worker holds its run
        assert proc.poll() is None and time.monotonic() - t0 < 240, proc.stdout.read()
        time.sleep(0.2)
    worker = int(lock.read_text()); time.sleep(2)
    t0 = time.monotonic(); proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]; took = time.monotonic() - t0
    assert proc.returncode == 130 and 'stopped, and its workers' in out and took < 10, (took, out)
    try: os.kill(worker, 0)
    except ProcessLookupError: pass
    else: raise AssertionError(f'worker {worker} outlived the ecosystem')
    assert not (root/'ecosystem.safetensors').exists()   # no cycle counted: a second call starts the first one again
