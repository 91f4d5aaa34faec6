"""Hostile player programs: each is contained by the operating system and recorded with its reason, and the harness goes on.

The escapes run as the harness's real user (whoever runs pytest: root on CI) against files and processes that user
owns. Most first switch off every Python-level guard (the audit hook's flag and the restricted import, reached
through a traceback's frames) so that only the OS layers (bubblewrap's namespaces, the seccomp allow-list, the
unprivileged uid, rlimits) stand between them and the harness. Run with `-s` to see each escape's reason."""
import os, shutil, socket, stat, subprocess, sys
from pathlib import Path
import pytest
from genome_lab.programs.sandbox import (play_games, SandboxLimits, CountdownGame, SandboxedPlayer, SandboxUnavailable,
                                sandbox_binds, FAILURE_KINDS, REPORTED_KINDS, SANDBOX_UID)

ROOT = Path(__file__).resolve().parent.parent
LIM = SandboxLimits(step_timeout_s=4, start_timeout_s=20, wall_s=30, cpu_s=8)
# A loop at import meets the start timeout, not the CPU limit, only when the timeout is shorter than `cpu_s`: CPU
# time never runs ahead of the wall clock for a one-threaded child. With LIM's 20 s start either could come first,
# depending on the machine's load.
LIM_IMPORT_LOOP = SandboxLimits(step_timeout_s=4, start_timeout_s=4, wall_s=30, cpu_s=8)
ESC = "find({!r})"
FIND = ("def find(name):\n    todo = list(object.__subclasses__())\n    while todo:\n        c = todo.pop()\n"
        "        if c.__name__ == name: return c\n        todo.extend(type.__subclasses__(c))\n")
GOOD = "def choose_action(obs, view, memory):\n    return min(view['left'], 9)\n"
# Switch off every Python-level guard: the worker's globals through a traceback's frames, the audit hook's flag
# cleared, the real `open`, `__import__` and `os` taken back.
DISARM = '''
def worker_globals():
    try: raise ValueError
    except ValueError as e: f = e.__traceback__.tb_frame
    while f.f_back is not None: f = f.f_back
    return f.f_globals
W = worker_globals()
W['armed'].clear()
W['safe_builtins']['__import__'] = W['builtins'].__import__
os, open, imp, sys = W['os'], W['builtins'].open, W['builtins'].__import__, W['sys']
assert not W['armed']
'''

def play(src, lim=LIM): return play_games(FIND + src, CountdownGame(3), [0], lim)

def escape(body:str, lim=LIM):
    "Run `body` (the body of choose_action, after DISARM) in the sandbox; print and return the result."
    src = DISARM + "def choose_action(obs, view, memory):\n" + ''.join(f"    {l}\n" for l in body.splitlines()) + "    return 0\n"
    r = play_games(src, CountdownGame(3), [0], lim)
    print(f"\n  {body.splitlines()[-1][:70]!r} -> {r.reason or 'ok'}: {r.message}")
    return r

def test_good_program_scores_and_layers():
    r = play(GOOD)
    assert r.ok and r.games[0]['score'] == 3.0, r
    assert r.layers == ['bwrap', f'uid {SANDBOX_UID}', 'rlimits', 'seccomp', 'audit']

def test_a_legitimate_program_uses_what_it_may():
    "numpy, random, re, statistics, time and exceptions the program catches work under the allow-list."
    src = ("import numpy as np, random, re, statistics, time, collections, math\n"
           "def choose_action(obs, view, memory):\n"
           "    a = np.random.default_rng(0).normal(size=(64, 64)); b = a @ a.T; np.linalg.eigh(b); np.sort(a, axis=None)\n"
           "    big = np.zeros(20_000_000); del big\n"
           "    random.seed(1); re.sub('a+', 'b', 'caaat'); statistics.stdev([1, 2, 4]); time.sleep(0.001); time.process_time()\n"
           "    try: {}['x']\n    except KeyError: pass\n"
           "    memory['n'] = memory.get('n', 0) + 1\n"
           "    return min(view['left'], 9)\n")
    r = play_games(src, CountdownGame(3), [0, 1], LIM)
    assert r.ok and [g['score'] for g in r.games] == [3.0, 3.0], r

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
    'os through an allowed module': ("import random\ndef choose_action(obs, view, memory):\n    random._os.unlink('/nonexistent')\n    return 0", 'forbidden'),
    'bad action type': ("def choose_action(obs, view, memory):\n    return 'left'", 'bad_action'),
    'out of range action': ("def choose_action(obs, view, memory):\n    return 10**6", 'bad_action'),
}

@pytest.mark.parametrize('name', list(HOSTILE))
def test_hostile_program_is_contained(name):
    src, reason = HOSTILE[name]
    r = play(src, LIM_IMPORT_LOOP if name == 'infinite loop at import' else LIM)
    assert not r.ok and r.reason == reason, (name, r.reason, r.message)
    assert r.message and len(r.message) <= 200

# --- escapes that first switch off every Python-level guard, run as the harness's real user

@pytest.fixture
def owned(tmp_path):
    "A file and a folder the harness's user owns, with their state."
    f = tmp_path/'harness_secret.txt'; f.write_text('secret of the harness ' * 50)
    d = tmp_path/'dir'; d.mkdir()
    snap = lambda: (f.read_bytes(), stat.S_IMODE(f.stat().st_mode), sorted(p.name for p in tmp_path.iterdir()), sorted(d.iterdir()))
    return f, d, snap

def test_the_python_guards_are_really_off():
    "The prelude works: with the audit hook off and the real import back, `import os` no longer ends the child."
    r = escape("import os as real_os\nreturn real_os.getpid()")
    assert r.ok or r.reason == 'bad_action', (r.reason, r.message)   # it ran; its PID in its own namespace is small
    assert r.reason != 'forbidden'

FILE_ESCAPES = {  # what the escape tries -> the reasons that contain it
    'read /etc/passwd': ("open('/etc/passwd').read()", {'exception'}),
    'read /etc/shadow by fd': ("os.read(os.open('/etc/shadow', os.O_RDONLY), 100)", {'exception'}),
    "read the harness's file": ("return len(open(F).read())", {'exception'}),
    "list the harness's folder": ("os.listdir(D)", {'exception'}),
    'read the repository': (f"open({str(ROOT/'README.md')!r}).read()", {'exception'}),
    "write the harness's file": ("open(F, 'w').write('pwned')", {'forbidden'}),
    "append to the harness's file": ("os.open(F, os.O_WRONLY | os.O_APPEND)", {'forbidden'}),
    "truncate the harness's file": ("os.truncate(F, 0)", {'forbidden'}),
    "delete the harness's file": ("os.unlink(F)", {'forbidden'}),
    "rename the harness's file": ("os.rename(F, F + '.moved')", {'forbidden'}),
    "chmod the harness's file": ("os.chmod(F, 0o777)", {'forbidden'}),
    'create a folder': ("os.mkdir(D + '/new')", {'forbidden'}),
    'create a link': ("os.symlink('/', D + '/link')", {'forbidden'}),
    'write into /dev/shm': ("open('/dev/shm/x', 'w').write('x')", {'forbidden'}),
    "shared writable mmap of a file": ("m = imp('mmap')\nfd = os.open(sys.executable, os.O_RDONLY)\nm.mmap(fd, 4096, m.MAP_SHARED, m.PROT_READ)", {'forbidden'}),
    'shared anonymous mmap': ("m = imp('mmap')\nm.mmap(-1, 4096, m.MAP_SHARED)", {'forbidden'}),
    'unlink by raw syscall': ("c = W['ctypes']\nc.CDLL(None).syscall(87, F.encode())", {'forbidden'}),
}

@pytest.mark.parametrize('name', list(FILE_ESCAPES))
def test_file_escapes_are_contained(name, owned):
    f, d, snap = owned
    before = snap()
    body, reasons = FILE_ESCAPES[name]
    r = escape(f"F, D = {str(f)!r}, {str(d)!r}\n" + body)
    assert not r.ok and r.reason in reasons, (name, r.reason, r.message)
    assert snap() == before, name
    assert 'secret of the harness' not in r.message and 'root:' not in r.message

def test_a_file_read_cannot_leak_through_the_message():
    "Nothing outside the sandbox is readable, and whatever a child says is cut to a short printable reason."
    r = escape("raise RuntimeError('\\x1b[2J' + 'A' * 100_000 + '\\n' + open('/etc/hostname').read())")
    assert r.reason == 'exception' and len(r.message) <= 200 and '\x1b' not in r.message and '\n' not in r.message

def test_signals_cannot_leave_the_sandbox():
    "Kill the harness, its process group, every process, or the parent: each ends the child (seccomp), and all stay alive."
    sleeper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    try:
        for body in (f"os.kill({os.getpid()}, 9)", f"os.kill({sleeper.pid}, 9)", "os.kill(-1, 9)", f"os.killpg({os.getpgid(0)}, 9)",
                     "os.kill(1, 9)", "os.kill(os.getpid(), 9)"):
            r = escape(body)
            assert not r.ok and r.reason == 'forbidden', (body, r.reason, r.message)
        assert sleeper.poll() is None
    finally: sleeper.kill(); sleeper.wait()

def test_other_processes_are_invisible():
    "No /proc: the harness's command line (a server's token would be there) and the list of processes are out of reach."
    for body in (f"open('/proc/{os.getpid()}/cmdline').read()", "os.listdir('/proc')", "open('/proc/self/environ').read()"):
        r = escape(body)
        assert not r.ok and r.reason == 'exception' and 'FileNotFoundError' in r.message, (body, r.reason, r.message)

def test_the_child_is_unprivileged_and_alone():
    "uid 65534, PID 2 of its own namespace, no /etc or /home, a read-only root holding little (the action carries the facts)."
    facts = [f"os.getuid() == os.geteuid() == {SANDBOX_UID}", "os.getpid() == 2", "not os.path.exists('/etc')",
             "not os.path.exists('/home')", "set(os.listdir('/')) <= {'dev', 'lib', 'lib64', 'sandbox'}",
             "not os.access('/sandbox', os.W_OK)"]
    src = DISARM + "def choose_action(obs, view, memory):\n    return sum(1 << i for i, f in enumerate([" + ', '.join(facts) + "]) if f)\n"
    with SandboxedPlayer(src, LIM, 2**len(facts)) as p:
        a = p.act(*CountdownGame(1).reset(0))
    assert a == 2**len(facts) - 1, [f for i, f in enumerate(facts) if not (a >> i) & 1]

def test_network_is_unreachable():
    "A server listening on the host's loopback cannot be reached: socket() ends the child, and the namespace has no route."
    srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1); port = srv.getsockname()[1]
    try:
        r = escape(f"s = imp('socket')\ns.create_connection(('127.0.0.1', {port}), timeout=2)")
        assert not r.ok and r.reason == 'forbidden', (r.reason, r.message)
        srv.settimeout(0.2)
        with pytest.raises(socket.timeout): srv.accept()
    finally: srv.close()

def test_processes_limits_and_syscalls_the_filter_refuses():
    for body in ("os.fork()", "os.execv(sys.executable, [sys.executable])", "imp('resource').setrlimit(0, (10**9, 10**9))",
                 "W['ctypes'].CDLL(None).prctl(22, 0, 0, 0, 0)", "W['ctypes'].CDLL(None).syscall(425, 8, 0)",   # io_uring_setup
                 "W['ctypes'].CDLL(None).syscall(101, 0, 1, 0, 0)", "os.setuid(0)", "os.chdir('/')", "os._exit(159)"):
        r = escape(body)
        assert not r.ok and r.reason == 'forbidden', (body, r.reason, r.message)

def test_the_program_cannot_choose_its_verdict():
    "Fake protocol lines and exit statuses: the harness names the failure from what it observes."
    for body, reason in [("W['send']('E timeout faked'); os._exit(0)", 'protocol'),
                         ("W['send']('E crash faked'); os._exit(0)", 'protocol'),
                         ("W['send']('E forbidden faked'); os._exit(0)", 'protocol'),
                         ("W['send']('A 3'); W['send']('A 99'); return 3", 'bad_action'),
                         ("os._exit(0)", 'crash'), ("os._exit(152)", 'forbidden'), ("os._exit(137)", 'forbidden')]:
        r = escape(body)
        assert not r.ok and r.reason == reason, (body, r.reason, r.message)
    assert set(REPORTED_KINDS) < set(FAILURE_KINDS) and not {'crash', 'timeout', 'forbidden', 'bad_action', 'cpu'} & set(REPORTED_KINDS)

def test_the_score_cannot_be_touched():
    "Printing fake protocol lines goes to /dev/null: the harness's score is what the game measured."
    r = play("def choose_action(obs, view, memory):\n    print('A 5')\n    print('score 1000000')\n    return 0\n")
    assert r.ok and r.games[0]['score'] == 0.0  # action 0 is never the right answer in CountdownGame(3)

def test_cpu_limit_kills():
    r = play("def choose_action(obs, view, memory):\n    while True: pass", SandboxLimits(cpu_s=1, step_timeout_s=20, wall_s=30))
    assert not r.ok and r.reason == 'cpu', (r.reason, r.message)

def test_wall_clock_kills_the_child():
    r = play("import time\ndef choose_action(obs, view, memory):\n    time.sleep(60)\n    return 0", SandboxLimits(step_timeout_s=1, wall_s=8))
    assert not r.ok and r.reason == 'timeout' and r.seconds < 8

def test_the_run_goes_on_after_failures():
    rs = [play(HOSTILE[k][0]) for k in ('infinite loop', 'huge allocation', 'fork bomb via escape')] + [play(GOOD)]
    assert [r.ok for r in rs] == [False, False, False, True]

def test_the_child_sees_only_read_only_binds_of_the_interpreter():
    srcs = {src for src, _ in sandbox_binds()}
    assert not any(s.startswith(str(ROOT) + os.sep) and '/site-packages/numpy' not in s for s in srcs), srcs
    assert not any(s.startswith(('/etc', '/home', '/proc')) for s in srcs)

def test_a_missing_bwrap_is_a_clear_error(monkeypatch):
    "Without bubblewrap no program runs, and the error says what to install (it is no failure of the program)."
    monkeypatch.setattr(shutil, 'which', lambda name: None)
    with pytest.raises(SandboxUnavailable, match='apt-get install bubblewrap'): play_games(GOOD, CountdownGame(3), [0], LIM)

# --- a child that stops reading, or stalls under the step timeout, cannot hold the harness

def returns_within(fn, seconds:float):
    "Run `fn` on a daemon thread; its value if it returns within `seconds`, else fail (the harness hung)."
    import threading
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True); t.start(); t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s: the harness hung"
    return out[0]

def test_a_child_that_stops_reading_is_killed():
    "It answers in advance and never reads: the harness's writes fill the pipe, and the step timeout ends the child."
    flood = DISARM + "def choose_action(obs, view, memory):\n    while True: W['send']('A 0')\n"
    lim = SandboxLimits(step_timeout_s=2, start_timeout_s=20, wall_s=15, cpu_s=60)
    r = returns_within(lambda: play_games(flood, CountdownGame(100_000), [0], lim), 60)
    assert not r.ok and r.reason == 'timeout' and 'input' in r.message, (r.reason, r.message)

def test_a_slow_program_is_held_to_its_pace():
    "Each action just under the step timeout: the mean budget per action ends it long before the game would end."
    slow = "import time\ndef choose_action(obs, view, memory):\n    time.sleep(0.5)\n    return min(view['left'], 9)\n"
    lim = SandboxLimits(step_timeout_s=2, wall_s=600, mean_step_s=0.05)
    r = returns_within(lambda: play_games(slow, CountdownGame(100), [0], lim), 60)   # 100 actions of 0.5 s: 50 s unchecked
    assert not r.ok and r.reason == 'timeout' and 'on average' in r.message and r.steps < 10, (r.reason, r.message, r.steps)

BUSY = ("import time\ndef choose_action(obs, view, memory):\n    t = time.process_time()\n"
        "    while time.process_time() - t < {busy}: pass\n    return min(view['left'], 9)\n")

def _charged(busy:float, actions:int, lim:SandboxLimits)->tuple: # (seconds charged per action, wall seconds per action)
    import time
    with SandboxedPlayer(BUSY.format(busy=busy), lim, 10) as p:
        t = time.monotonic()
        for _ in range(actions): p.act(0, dict(left=actions))
        return p.thinking / actions, (time.monotonic() - t) / actions

@pytest.mark.timing
def test_a_legal_program_near_its_pace_passes_on_a_loaded_host():
    """Issue 57: the pace was judged by the wall clock, so a program at 95% of it was retired at load 12 and promoted
    at load 2. Now an action is charged the program's own time (the host's run-queue delays taken out): a program at
    90% of `PROGRAM_LIMITS`' pace on its own plays 1000 actions with eight busy processes on the host."""
    from genome_lab.programs.program_policy import PROGRAM_LIMITS
    lim, n, target = PROGRAM_LIMITS, 1000, 0.9 * PROGRAM_LIMITS.mean_step_s
    busy = target - _charged(0.0, 100, lim)[0]   # less the harness's and the child's own cost of an action
    for _ in range(2): busy += target - _charged(busy, 200, lim)[0]   # then as charged on this host: 90% of the pace
    quiet = _charged(busy, 200, lim)[0]
    assert quiet < lim.mean_step_s + lim.burst_s / n, quiet   # legal: a game of n actions within its pace and credit
    hogs = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(8)]
    try: _charged(busy, n, lim)   # raises SandboxFailure('timeout') where the load is charged
    finally:
        for h in hogs: h.kill(); h.wait()

def test_the_time_a_loaded_host_keeps_a_program_waiting_is_not_charged(monkeypatch):
    """The accounting itself, with the load made exact: a program sleeping 30 ms an action (3x a 10 ms pace) whose
    every action the host is said to have kept waiting 25 ms (`_waited`, the run-queue delays) is charged about 5 ms
    and passes 60 actions; charged the wall clock, it fails its pace within them."""
    import time
    lim = SandboxLimits(step_timeout_s=2, wall_s=60, mean_step_s=0.01, burst_s=0.2)
    src = "import time\ndef choose_action(obs, view, memory):\n    time.sleep(0.03)\n    return min(view['left'], 9)\n"
    def play(waited_per_action:float)->float: # seconds charged an action
        clock = {'waited': 0.0}
        def waited(self): clock['waited'] += waited_per_action; return clock['waited']   # asked before and after an action: that much between
        monkeypatch.setattr(SandboxedPlayer, '_waited', waited)
        with SandboxedPlayer(src, lim, 10) as p:
            for _ in range(60): p.act(0, dict(left=60))
            return p.thinking / 60
    assert 0.0 < play(0.025) < 0.01
    with pytest.raises(Exception, match='on average'): play(0.0)

def test_the_base_pythons_site_packages_are_hidden():
    "The standard library is bound whole, but its site-packages (every package of the base Python) is an empty read-only folder."
    src = DISARM + ("def choose_action(obs, view, memory):\n    d = os.path.dirname(os.__file__) + '/site-packages'\n"
                    "    return min(len(os.listdir(d)), 5) if os.path.isdir(d) else 6\n")
    with SandboxedPlayer(src, LIM, 7) as p: test = p.act(*CountdownGame(1).reset(0))
    assert test == 0, f"the child sees {'no folder' if test == 6 else f'{test} or more entries'} in the base Python's site-packages"

# --- the sandboxed REPL (model-written code of a root LLM, 65_llm_evolution): the same layers, its calls answered here

def test_the_repl_keeps_its_namespace_and_answers_only_its_functions():
    from genome_lab.programs.sandbox import SandboxedREPL
    calls = []
    with SandboxedREPL(dict(add=lambda a, b: calls.append((a, b)) or a + b), lambda: dict(programs=[dict(id='p1', code='x')]),
                       LIM) as r:
        assert r.run("y = add(2, 3)\nprint(y, program_database['p1'].code)") == dict(stdout='5 x\n', error='')
        out = r.run("print(y)\ntry: add(1)\nexcept RuntimeError as e: print('refused:', e)")
        assert out['stdout'].startswith('5\nrefused: TypeError') and not out['error']
        escape_call = DISARM.split("W['armed']")[0] + "W['send']('C ' + W['json'].dumps(['system', ['ls'], {}]))\nprint(W['recv']())"
        assert "no function 'system'" in r.run(escape_call)['stdout'] and calls == [(2, 3)] and r.alive

@pytest.mark.parametrize('what,code', [
    ('a host file', "import numpy\nnumpy.load('/etc/passwd')"),
    ('a socket', "import socket\nsocket.create_connection(('127.0.0.1', 9))"),
    ('a file, guards off', DISARM + "print(open('/etc/hostname').read())"),
    ('a socket, guards off', DISARM + "imp('socket').socket()"),
    ('a host process, guards off', DISARM + f"os.kill({os.getpid()}, 9)")])
def test_the_repl_refuses_what_a_player_may_not_do(what, code):
    "Each refusal is the sandbox's verdict (the REPL then is dead); the host is untouched and goes on."
    from genome_lab.programs.sandbox import SandboxedREPL, SandboxFailure
    r = SandboxedREPL({}, limits=LIM)
    try: out = r.run(code)
    except SandboxFailure as e: out = dict(failure=e.kind, message=e.message)
    print(f"\n  {what} -> {out}")
    assert out.get('failure') == 'forbidden' or 'FileNotFoundError' in out.get('error', ''), out   # /etc is not in the sandbox
    assert r.alive == ('failure' not in out)
    r.close()
