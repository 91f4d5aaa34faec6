"""Program genomes (genome_lab.programs.program_policy.ProgramPolicy): a program round-trips through the registry and plays, in
evaluations and tournaments, only inside the sandbox: the harness never runs its source (it compiles it to refuse a
syntax error before a child starts, which runs nothing)."""
import builtins, hashlib, os, sys
import numpy as np, pytest
from genome_lab.registry.store import Registry
from genome_lab.registry.genomes import Genome, genome_from_bytes
from genome_lab.arenas.policies import RandomPolicy
from genome_lab.programs.sandbox import SandboxFailure
from genome_lab.programs.program_policy import PROGRAM_LIMITS, ProgramPolicy, program_genome
from genome_lab.arenas.evaluation import evaluate
from genome_lab.tournaments.tournament import run_tournament

MARKER = 'genome_lab_program_marker_9f3'
LEAN = f"# {MARKER}\ndef choose_action(obs, view, memory):\n    memory['t'] = memory.get('t', 0) + 1\n    return 1 if obs[2] + 0.5*obs[3] > 0 else 0\n"

@pytest.fixture
def never_here(monkeypatch):
    "Fail if anything in this process executes the program's source."
    def guard(fn):
        def f(src, *a, **k):
            text = src.decode(errors='ignore') if isinstance(src, bytes) else src
            if isinstance(text, str) and MARKER in text: raise AssertionError("the harness ran the program")
            if not a and not k: a = (sys._getframe(1).f_globals, sys._getframe(1).f_locals)   # the caller's namespace, as exec's own
            return fn(src, *a, **k)
        return f
    monkeypatch.setattr(builtins, 'exec', guard(builtins.exec)); monkeypatch.setattr(builtins, 'eval', guard(builtins.eval))

def test_a_program_genome_round_trips_and_plays_only_in_the_sandbox(tmp_path, never_here):
    reg = Registry(tmp_path/'reg')
    g = reg.add(program_genome('Lean', 'cartpole', LEAN, description='pushes towards where the pole leans'), {}, status='active')
    for k in range(2): reg.add(Genome(name=f'Random{k}', type='baseline', arena='cartpole', arch='random', config=dict(num_actions=2),
                                      source='test'), RandomPolicy(2).state_dict(), status='active')
    back, params = genome_from_bytes(reg._genome_path(g.id).read_bytes())
    assert (back.arch, back.config['source'], back.config['sha256'], params) == ('program', LEAN, hashlib.sha256(LEAN.encode()).hexdigest(), {})
    pol = reg.policy(g.id)
    st = pol.initial_state(3)
    assert st.player.proc.pid != os.getpid() and {'audit'} <= set(st.player.layers)   # a child process with the sandbox's layers
    st.close(); assert st.player is None
    r = evaluate(pol, 'cartpole', seed=1, progress=False, num_envs=3, max_steps=600)
    assert r.n == 3 and r.stats()['score']['mean'] > 100
    t = run_tournament(reg, arena='cartpole', genomes_per_game=3, agents_per_genome=2, steps=300, meetings=1, seed=0, progress=False)
    assert t.leaderboard.name.iloc[0] == 'Lean' and reg.ratings()[g.id]['games'] == len(t.games)

def test_a_program_breaking_a_rule_forfeits_and_a_changed_source_is_refused():
    bad = "def choose_action(obs, view, memory):\n    import socket\n    return 1\n"
    pol = ProgramPolicy('cartpole', bad, hashlib.sha256(bad.encode()).hexdigest())
    st = pol.initial_state(2)
    acts, st = pol.act(np.zeros((2, 4), np.float32), st)
    assert acts.tolist() == [0, 0] and st.failure.kind == 'forbidden' and st.player is None
    with pytest.raises(ValueError, match='sha256'): ProgramPolicy('cartpole', LEAN + "\n", hashlib.sha256(LEAN.encode()).hexdigest())

# A program that answers in advance and never reads its input again: the harness's writes fill the pipe.
FLOOD = ("def _worker_send():\n    try: raise ValueError\n    except ValueError as e: f = e.__traceback__.tb_frame\n"
         "    while f.f_back is not None: f = f.f_back\n    return f.f_globals['send']\n_send = _worker_send()\n"
         "def choose_action(obs, view, memory):\n    while True: _send('A 0')\n")

def test_a_program_that_stops_reading_forfeits_in_evaluations_and_server_jobs(tmp_path, monkeypatch):
    "It plays zeros once the step timeout kills it: the evaluation returns, and the server's job ends and frees its slot."
    import threading, time
    from fastapi.testclient import TestClient
    from genome_lab.programs import program_policy, sandbox
    from genome_lab.web.server import create_app
    from genome_lab.tournaments.selection import tournament_job
    monkeypatch.setattr(program_policy, 'PROGRAM_LIMITS', sandbox.SandboxLimits(cpu_s=60, wall_s=600, step_timeout_s=2))
    reg = Registry(tmp_path/'reg')
    g = reg.add(program_genome('Flood', 'snake', FLOOD), {}, status='active')
    for k in range(2): reg.add(Genome(name=f'Random{k}', type='baseline', arena='snake', arch='random', config=dict(num_actions=4),
                                      source='test'), RandomPolicy(4).state_dict(), status='active')
    out = []
    t = threading.Thread(target=lambda: out.append(evaluate(reg.policy(g.id), 'snake', episodes_per_agent=10**6, max_steps=1500,
                                                            progress=False, num_snakes=1, width=24, height=24, num_food=8)), daemon=True)
    t.start(); t.join(60)
    assert not t.is_alive() and out[0].steps > 0, "the evaluation hung on a program that stopped reading"
    reg.close()
    settings = dict(width=24, height=24, num_food=8)
    def finished(http, jid:str)->dict: # the job's status once it is no longer queued or running (60 s at most)
        for _ in range(600):
            s = http.get(f"/tournament_status/{jid}").json()
            if s['status'] not in ('queued', 'running'): return s
            time.sleep(0.1)
        return s
    with TestClient(create_app(tmp_path/'reg', token='t0k3n-secret', job=tournament_job)) as http:
        auth = {'Authorization': 'Bearer t0k3n-secret'}
        r = http.post('/run_tournament', headers=auth, json=dict(arena='snake', agents=3, max_steps=1500, settings=settings))
        assert r.status_code == 202, r.text
        assert (s := finished(http, r.json()['id']))['status'] == 'done', s   # not 'running' for ever
        r = http.post('/run_tournament', headers=auth, json=dict(arena='snake', agents=3, max_steps=10, settings=settings))
        assert r.status_code == 202 and finished(http, r.json()['id'])['status'] == 'done', r.text   # the slot is free

# --- pace with a budget (issue 45): a too-slow program is failed with its reason, and costs a season little

SLEEPER = "import time\ndef choose_action(obs, view, memory):\n    time.sleep(0.045)\n    return 0\n"

def test_a_too_slow_program_is_failed_and_the_season_keeps_its_pace(tmp_path):
    """A snake program sleeping 0.045 s per call (under the former 50 ms pace, 4.5x today's 10 ms) fails its
    qualifying game, is retired with its reason and stays out of the tournament: the season takes at most its credit
    and the sandbox's start longer than the founders-only season (measured before and after it; on main it took 26x)."""
    import time
    from genome_lab.registry.store import seed_founders
    from genome_lab.ecosystem.seasons import SeasonConfig, run_season
    cfg = SeasonConfig(producers='', arena_settings=dict(snake=dict(steps=100)))   # the 100-step snake games; the rest the season's own
    def season(root, sleeper:bool):
        with Registry(root) as reg:
            seed_founders(reg)
            sid = reg.add(program_genome('Sleeper', 'snake', SLEEPER), {}, status='candidate').id if sleeper else None
            said, t = [], time.perf_counter()
            row = run_season(reg, cfg, log=said.append)
            out = dict(seconds=time.perf_counter() - t, games=row['games'], said=said)
            if sleeper:
                t = run_tournament(reg, evaluation=reg.tagged_evaluation('tournament', 'snake', 'season', 1), progress=False)
                out.update(status=reg.genome(sid)['status'], failure=t.failures.get(sid, ''), played=reg.games(sid))
            return out
    before, slow, after = season(tmp_path/'a', False), season(tmp_path/'b', True), season(tmp_path/'c', False)
    founders_only = (before['seconds'] + after['seconds'])/2
    # failing costs the season the program's credit (`burst_s`) and the sandbox's start, never its games: a bound in
    # seconds, not a ratio to a 2 s season (CI measured 2.6 s more, 2.1x, where 2x was asserted)
    assert slow['seconds'] - founders_only <= PROGRAM_LIMITS.burst_s + 3.0, (slow, before, after)
    assert slow['status'] == 'retired' and slow['played'] == 0 and slow['games'] == before['games']
    assert slow['failure'].startswith('timeout') and 'on average' in slow['failure'], slow['failure']
    assert any('Sleeper failed and was retired: timeout' in m for m in slow['said']), slow['said']   # issue 57: in the season's log too

def test_a_program_that_slows_down_in_a_game_forfeits_the_rest_and_is_retired(tmp_path):
    "Fast in its qualifying game, too slow later: it forfeits its later games at no cost, and selection never sees it."
    from genome_lab.tournaments.tournament import QUALIFY_STEPS
    late = ("import time\ndef choose_action(obs, view, memory):\n    memory['t'] = memory.get('t', 0) + 1\n"
            f"    if memory['t'] > {QUALIFY_STEPS + 20}: time.sleep(0.2)\n    return 1 if obs[2] + 0.5*obs[3] > 0 else 0\n")
    reg = Registry(tmp_path/'reg')
    g = reg.add(program_genome('Late', 'cartpole', late), {}, status='active')
    for k in range(2): reg.add(Genome(name=f'Random{k}', type='baseline', arena='cartpole', arch='random', config=dict(num_actions=2),
                                      source='test'), RandomPolicy(2).state_dict(), status='active')
    t = run_tournament(reg, arena='cartpole', genomes_per_game=2, agents_per_genome=2, steps=400, meetings=2, seed=0,
                       batch=1, progress=False)
    lb = t.leaderboard.set_index('id')
    assert lb.failure[g.id].startswith('timeout') and reg.genome(g.id)['status'] == 'retired'
    assert (lb.failure.drop(g.id) == '').all() and t.seconds < 30   # its later games were forfeits that cost nothing
    pol = reg.policy(g.id); pol.failure = SandboxFailure('timeout', 'too slow')
    st = pol.initial_state(2)
    assert st.player is None and st.failure is pol.failure   # a failed policy starts no child
