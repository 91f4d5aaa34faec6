"Hostile player programs: each is contained and recorded with its reason, and the harness goes on."
import os, socket, subprocess, sys, threading, tempfile
import pytest
from genome_lab.sandbox import play_games, SandboxLimits, CountdownGame, _preexec

LIM = SandboxLimits(step_timeout_s=2, start_timeout_s=6, wall_s=15, cpu_s=8)
ESC = "find({!r})"
FIND = ("def find(name):\n    todo = list(object.__subclasses__())\n    while todo:\n        c = todo.pop()\n"
        "        if c.__name__ == name: return c\n        todo.extend(type.__subclasses__(c))\n")
GOOD = "def choose_action(obs, view, memory):\n    return min(view['left'], 9)\n"

def play(src, lim=LIM): return play_games(FIND + src, CountdownGame(3), [0], lim)

def test_good_program_scores_and_layers():
    r = play(GOOD)
    assert r.ok and r.games[0]['score'] == 3.0 and {'seccomp', 'audit'} <= set(r.layers)

HOSTILE = {
    'syntax': ("def choose_action(obs, view, memory) return 1", 'syntax'),
    'missing function': ("x = 1", 'missing'),
    'exception': ("def choose_action(obs, view, memory):\n    return 1/0", 'exception'),
    'infinite loop': ("def choose_action(obs, view, memory):\n    while True: pass", 'timeout'),
    'infinite loop at import': ("while True: pass", 'timeout'),
    'huge allocation': ("def choose_action(obs, view, memory):\n    x = bytearray(16 * 2**30)\n    return 0", 'memory'),
    'huge numpy allocation': ("import numpy as np\ndef choose_action(obs, view, memory):\n    x = np.ones(10**10)\n    return 0", 'memory'),
    'import os': ("import os\ndef choose_action(obs, view, memory): return 0", 'forbidden'),
    'import socket': ("import socket\ndef choose_action(obs, view, memory): return 0", 'forbidden'),
    'fork bomb via escape': ("def choose_action(obs, view, memory):\n    os = " + ESC.format('_wrap_close') + ".__init__.__globals__\n"
                             "    while True: os['fork']()\n", 'forbidden'),
    'system via escape': ("def choose_action(obs, view, memory):\n    os = " + ESC.format('_wrap_close') + ".__init__.__globals__\n"
                          "    os['system']('echo pwned > /tmp/pwned_by_sandbox_test')\n    return 0", 'forbidden'),
    'socket via escape': ("def choose_action(obs, view, memory):\n    b = " + ESC.format('_wrap_close') + ".__init__.__globals__['__builtins__']\n"
                          "    s = b['__import__']('socket').socket()\n    return 0", 'forbidden'),
    'ctypes via escape': ("def choose_action(obs, view, memory):\n    import sys\n    return 0", 'forbidden'),
    'bad action type': ("def choose_action(obs, view, memory):\n    return 'left'", 'bad_action'),
    'out of range action': ("def choose_action(obs, view, memory):\n    return 10**6", 'bad_action'),
}

@pytest.mark.parametrize('name', list(HOSTILE))
def test_hostile_program_is_contained(name):
    src, reason = HOSTILE[name]
    r = play(src)
    assert not r.ok and r.reason == reason, (name, r.reason, r.message)
    assert r.message

def test_file_write_via_escape_is_refused():
    path = os.path.join(tempfile.mkdtemp(), 'written_by_program.txt')
    src = ("def choose_action(obs, view, memory):\n    f = " + ESC.format('FileIO') + f"({path!r}, 'w')\n"
           "    f.write(b'x' * 100)\n    return 0")
    r = play(src)
    assert not r.ok and r.reason == 'forbidden' and not os.path.exists(path)

def test_cpu_limit_kills():
    r = play("def choose_action(obs, view, memory):\n    while True: pass", SandboxLimits(cpu_s=1, step_timeout_s=20, wall_s=30))
    assert not r.ok and r.reason == 'cpu', (r.reason, r.message)

def test_wall_clock_kills_the_process_group():
    r = play("import time\ndef choose_action(obs, view, memory):\n    time.sleep(60)\n    return 0",
             SandboxLimits(step_timeout_s=1, wall_s=5))
    assert not r.ok and r.reason == 'timeout' and r.seconds < 5

def test_score_cannot_be_touched():
    "Printing fake protocol lines goes to /dev/null: the harness's score is what the game measured."
    cheat = ("import sys\n" if False else "") + (
        "def choose_action(obs, view, memory):\n    print('A 5')\n    print('score 1000000')\n    return 0\n")
    r = play(cheat)
    assert r.ok and r.games[0]['score'] == 0.0  # action 0 is never the right answer in CountdownGame(3)

def test_the_run_goes_on_after_failures():
    rs = [play(HOSTILE[k][0]) for k in ('infinite loop', 'huge allocation', 'fork bomb via escape')] + [play(GOOD)]
    assert [r.ok for r in rs] == [False, False, False, True]

def test_no_network_in_the_namespace():
    "A child started with the sandbox's pre-exec step cannot reach a server listening on the host's loopback."
    srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1); port = srv.getsockname()[1]
    code = f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')\nexcept OSError as e: print('refused', e)"
    p = subprocess.run([sys.executable, '-c', code], preexec_fn=_preexec(SandboxLimits()), capture_output=True, text=True, timeout=30)
    srv.close()
    assert 'refused' in p.stdout and 'connected' not in p.stdout, p.stdout + p.stderr
