"""bench/watching.py: a smoke run writes the figures file's keys (22_watching covers the module itself)."""
import json, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def test_bench_writes_the_issue_keys(tmp_path):
    out = tmp_path/'watching.json'
    args = ['--seeds', '1', '--steps', '40', '--snakes', '5', '--label-frac', '0.2', '--idm-epochs', '1',
            '--clone-epochs', '1', '--eval-seeds', '10', '--window', '20', '60', '--json', out]
    subprocess.run([sys.executable, ROOT/'bench'/'watching.py', *args], capture_output=True, text=True, check=True,
                   env=os.environ | {'OMP_NUM_THREADS': '1'})
    r = json.loads(out.read_text())
    assert {'idm_accuracy', 'labelled_fraction', 'video_clone_ratio'} <= set(r)
    assert r['labelled_fraction'] == 2 / 10 and 0 <= r['idm_accuracy']['snake'] <= 1
    assert r['idm_n'] == 8 * 40 and sum(m['size'] for m in r['failure_modes'].values()) == r['idm_n']
    assert set(r['ratios']) == {'first episodes', 'continuous'}
