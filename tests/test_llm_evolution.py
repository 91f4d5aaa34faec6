"""Evolution runs: offline and openai backends, hard limits, the loop protocol (one checkpoint, an exact resume), the
root's code in the sandboxed REPL, the run folder, and the programs producer."""
import builtins, json, shutil, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
import numpy as np
import pytest
from genome_lab.programs.program_policy import program_env
from genome_lab.core import advance, load_state
from genome_lab.programs.llm_evolution import EvolutionConfig, EvolutionRun, CHECKPOINT, ChildCallLimitExceeded
from genome_lab.programs.llm_backends import OfflineMutator, OFFLINE_ROOT_STRATEGY
from genome_lab.programs.program_store import ProgramDatabase
from genome_lab.programs.program_producer import evolve_cli, register_program
from genome_lab.registry.store import Registry
from genome_lab.registry.genomes import NAMING, NAME_MAX

def cfg(**kw):
    d = dict(env='cartpole', max_generations=2, children_per_generation=2, games_per_eval=2, max_ticks=200, seed=1)
    d.update(kw); return EvolutionConfig(**d)

def root(code:str): # a root backend answering `code` every turn
    return lambda messages, rng: dict(text=f"```python\n{code}\n```", prompt_tokens=0, completion_tokens=0)

def stored(run)->dict: # the run's state as its checkpoint keeps it, without the wall clock
    return json.loads(json.dumps({k: v for k, v in run.state_dict().items() if k != 'elapsed'}, default=float))

def test_offline_cartpole_run_and_layout(tmp_path):
    s = EvolutionRun(tmp_path, cfg()).run()
    assert s['stop_reason'] == 'completed' and s['programs'] == 5 and s['backend'] == 'offline' and s['root_refused'] == 0
    assert s['best_metrics']['avg_score'] >= s['seed_score']
    for f in (CHECKPOINT, 'eval_cache.sqlite', 'best_program.py', 'visualizations/scores.png', 'visualizations/lineage.png',
              'visualizations/diversity.png'):
        assert (tmp_path/f).exists(), f
    assert not any((tmp_path/f).exists() for f in ('generations', 'checkpoints', 'evolution_log.jsonl', 'root_llm_log.jsonl'))
    st = load_state(tmp_path/CHECKPOINT, 'evolution')   # one checkpoint holds the run
    assert st['generation'] == 3 and len(st['programs']) == 5 and [h['generation'] for h in st['history']] == [0, 1, 2]
    assert [t['generation'] for t in st['root_turns']] == [1, 2]
    assert all('spawn_rllms' in t['code'] and not t['error'] and not t['failure'] for t in st['root_turns'])
    from genome_lab.core import read_events
    events = [e for f in (tmp_path/'scalars').rglob('events.out.tfevents.*') for e in read_events(f)]
    assert sorted({step for tag, step, _ in events if tag == 'charts/best_so_far'}) == [0, 1, 2]   # logged as they went

class Killed(BaseException): "stands in for SIGKILL: nothing in the run catches it"

def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tmp_path):
    "Stopped between generations (SIGTERM's way) or killed inside one: the resumed run's state is the uninterrupted one's."
    c = cfg(env='tetris', max_generations=4, children_per_generation=3, games_per_eval=1, max_ticks=120, seed=3, islands=2,
            seed_references=True, tune_every=3, cma_generations=1, cma_popsize=3)
    ref = EvolutionRun(tmp_path/'ref', c); ref.run()
    out = advance(b := EvolutionRun(tmp_path/'b', c), tmp_path/'b'/CHECKPOINT, 'evolution', steps=2)
    assert out['stopped'] == 'steps' and b.gen == 2
    resumed = EvolutionRun(tmp_path/'b'); resumed.run()
    assert stored(resumed) == stored(ref)
    killed, calls = EvolutionRun(tmp_path/'k', c), [0]
    orig = killed.backend.child
    def dying(req, rng):
        calls[0] += 1
        if calls[0] == 5: raise Killed()   # generation 2, after two of its children
        return orig(req, rng)
    killed.backend.child = dying
    with pytest.raises(Killed): killed.run()
    assert load_state(tmp_path/'k'/CHECKPOINT, 'evolution')['generation'] == 2   # generation 1's checkpoint
    again = EvolutionRun(tmp_path/'k'); again.run()
    assert stored(again) == stored(ref) and again.cache_counts == ref.cache_counts
    with pytest.raises(ValueError, match='other settings'): EvolutionRun(tmp_path/'b', cfg(seed=9)).run()

def test_parallel_and_batched_evaluation_equal_serial(tmp_path):
    "The pool (workers=2), the batch (`spawn_rllms`) and one `spawn_rllm` after another: the same programs and scores."
    c = dict(env='tetris', max_generations=1, children_per_generation=3, games_per_eval=1, max_ticks=120, seed=5)
    runs = [EvolutionRun(tmp_path/str(w), cfg(workers=w, **c)) for w in (1, 2)]
    serial = EvolutionRun(tmp_path/'serial', cfg(workers=1, **c))
    one_by_one = OFFLINE_ROOT_STRATEGY.replace('spawn_rllms(children)', 'for c in children: spawn_rllm(**c)')
    assert one_by_one != OFFLINE_ROOT_STRATEGY
    serial.backend.root = lambda m, rng: dict(text=f"```python\n{one_by_one}```", prompt_tokens=0, completion_tokens=0)
    rows = lambda r: [(p.id, p.code, p.parents, p.ok, p.metrics) for p in r.db.values()]
    for r in runs + [serial]: r.run()
    assert len(rows(serial)) == 4 and rows(runs[0]) == rows(runs[1]) == rows(serial)

def test_eval_cache_answers_reformatted_code_keeps_settings_apart_and_persists(tmp_path):
    run = EvolutionRun(tmp_path, cfg(max_generations=0)); run.run()
    seed = run.db['prog_00000']
    again = run.evaluate_program("# reformatted\n" + seed.code.replace('\n\n', '\n\n\n'))
    assert again['cached'] and again['metrics'] == seed.metrics and run.cache_counts == dict(hits=1, misses=1)
    assert not run.evaluate_program(seed.code, games=1)['cached'] and run.cache_counts['misses'] == 2   # other seeds
    assert EvolutionRun(tmp_path).evaluate_program(seed.code)['cached']   # kept in the run's folder

def test_reference_programs_seed_every_island(tmp_path):
    run = EvolutionRun(tmp_path, cfg(env='tetris', max_generations=0, islands=2, games_per_eval=1, max_ticks=60,
                                     seed_references=True))
    run.run()
    notes = [p.notes for p in run.db.values()]
    assert notes == ['the env template', 'reference player Dellacherie', 'reference player ElTetris']
    assert run.islands == [list(run.db)]*2 and all(p.ok for p in run.db.values())

def test_islands_migrate_on_schedule_and_resume(tmp_path):
    c = dict(env='tetris', islands=3, migration_interval=2, max_generations=2, children_per_generation=3,
             games_per_eval=1, max_ticks=120, seed=4)
    a = EvolutionRun(tmp_path/'a', cfg(**c)); a.run()
    h = {x['generation']: x for x in a.history}
    assert h[0]['migrations'] == h[1]['migrations'] == [] and h[2]['migrations']
    for frm, to, pid in h[2]['migrations']:   # the best of island `frm` (by score, then id) joined island `to`
        arrived = {(t, q) for _, t, q in h[2]['migrations']}
        bred = [i for i in a.islands[frm] if (frm, i) not in arrived]   # its members before the moves
        assert pid == min(bred, key=lambda i: (-a.db[i].score, i)) and pid in a.islands[to]
    assert {p.island for p in a.db.values() if p.generation > 0} == {0, 1, 2}
    b = EvolutionRun(tmp_path/'b', cfg(**c)); b.run()   # seeded: the same moves
    assert b.history[2]['migrations'] == h[2]['migrations'] and b.islands == a.islands
    again = EvolutionRun(tmp_path/'a')   # the stored run
    assert again.islands == a.islands and again.archive.cells == a.archive.cells

def test_near_duplicate_children_are_not_played(tmp_path):
    run = EvolutionRun(tmp_path, cfg(max_generations=1, children_per_generation=2))
    run.backend.child = lambda req, rng: dict(text=f"```python\n# a copy\n{req['parents_code'][0]}```", prompt_tokens=0,
                                              completion_tokens=0)
    run.run()
    kids = [p for p in run.db.values() if p.generation == 1]
    assert len(kids) == 2 and all(p.failure == 'duplicate' and not p.ok and 'prog_00000' in p.notes for p in kids)
    assert run.cache_counts['misses'] == 1   # only the seed was played

def test_tune_constants_is_seeded_and_never_worse(tmp_path):
    out = []
    for d in ('a', 'b'):
        run = EvolutionRun(tmp_path/d, cfg(max_generations=0)); run.run()
        tuned = run.db[run.tune_constants('prog_00000', generations=2, popsize=4)]
        assert tuned.score >= run.db['prog_00000'].score
        out.append((tuned.id, tuned.code, tuned.metrics))
    assert out[0] == out[1] and out[0][0] == 'prog_00001'   # the zero-weight template is beaten, the same way twice

def test_diff_answers_edit_the_parent(tmp_path):
    run = EvolutionRun(tmp_path, cfg(max_generations=1, children_per_generation=2))
    diffs = iter(["<<<<<<< SEARCH\nBIAS = 0.0\n=======\nBIAS = 1.0\n>>>>>>> REPLACE",
                  "<<<<<<< SEARCH\nBIAS = 7.0\n=======\nBIAS = 1.0\n>>>>>>> REPLACE"])
    run.backend.child = lambda req, rng: dict(text=next(diffs), prompt_tokens=0, completion_tokens=0)
    run.run()
    good, bad = run.db['prog_00001'], run.db['prog_00002']
    assert good.ok and good.code == run.db['prog_00000'].code.replace('BIAS = 0.0', 'BIAS = 1.0')
    assert (bad.ok, bad.failure) == (False, 'syntax') and 'SEARCH block 1' in bad.notes

def test_offline_diff_children_edit_their_parent(tmp_path):
    run = EvolutionRun(tmp_path, cfg(max_generations=1, children_per_generation=2))
    diff_root = OFFLINE_ROOT_STRATEGY.replace("strategy='mutate'", "strategy='diff'")
    assert diff_root != OFFLINE_ROOT_STRATEGY
    run.backend.root = root(diff_root)
    answers, child = [], run.backend.child
    run.backend.child = lambda req, rng: answers.append(child(req, rng)) or answers[-1]
    run.run()
    kids = run.db.of_generation(1)
    assert len(kids) == 2 and all(p.ok and p.strategy == 'diff' and p.code != run.db[p.parents[0]].code for p in kids)
    assert all(a['text'].startswith('<<<<<<< SEARCH') for a in answers)   # the answers were diffs, not programs

def test_hard_limits_end_the_run_cleanly(tmp_path):
    run = EvolutionRun(tmp_path/'a', cfg(max_child_calls_per_generation=1))
    run.backend.root = root("for i in range(3): spawn_rllm('more')")
    s = run.run()
    assert s['stop_reason'].startswith('ChildCallLimitExceeded') and (tmp_path/'a/best_program.py').exists()
    assert run.history[-1]['generation'] == 1 and run.history[-1]['n'] == 1   # the partial generation is kept
    s = EvolutionRun(tmp_path/'w', cfg(max_wall_s=0.0)).run()
    assert s['stop_reason'].startswith('WallTimeExceeded')
    run = EvolutionRun(tmp_path/'m', cfg(max_generations=1))
    run.backend.root = root("print(modify_parameters(games_per_eval=3)['games_per_eval'])\nmodify_parameters(max_generations=100)")
    run.run()
    assert run.root_turns[0]['stdout'] == '3\n' and 'PermissionError' in run.root_turns[0]['error']
    assert (run.cfg.games_per_eval, run.cfg.max_generations) == (3, 1)

def test_failed_children_are_recorded_and_the_run_goes_on(tmp_path):
    run = EvolutionRun(tmp_path, cfg(max_generations=1))
    run._seed_generation()
    bad = run.evaluate_program("def choose_action(obs, view, memory):\n    while True: pass")
    assert not bad['ok'] and bad['failure'] in ('timeout', 'cpu')
    assert run.evaluate_program(program_env('cartpole').player_template())['ok']

# ---- the openai backend against a local chat-completions server ----
REPLAY = json.loads((Path(__file__).parent/'data'/'llm_replay.json').read_text())

class FakeLLM(BaseHTTPRequestHandler):
    answers, calls, fail_first = None, None, True
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        cls = type(self)
        cls.calls.append(body)
        if cls.fail_first == 'slow': cls.fail_first = False; time.sleep(3)  # the client times out and retries
        elif cls.fail_first: cls.fail_first = False; self.send_response(500); self.end_headers(); return  # the client must retry
        role = 'root' if body['messages'][0]['content'].startswith('You are the root LLM') else 'child'
        k = sum(1 for b in cls.calls[1:] if b['messages'][0]['content'].startswith('You are the root LLM') == (role == 'root')) - 1
        a = cls.answers[role][k % len(cls.answers[role])]
        out = dict(id=f'c{len(cls.calls)}', object='chat.completion', created=0, model=body['model'],
                   choices=[dict(index=0, finish_reason='stop', message=dict(role='assistant', content=a['text']))],
                   usage=dict(prompt_tokens=a['prompt_tokens'], completion_tokens=a['completion_tokens'],
                              total_tokens=a['prompt_tokens'] + a['completion_tokens']))
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json'); self.send_header('Content-Length', str(len(data)))
        self.end_headers(); self.wfile.write(data)

class JoinedHTTPServer(ThreadingHTTPServer):
    """Request threads are joined when the server closes. A request the client gave up on ('slow') would otherwise
    write into the closed socket seconds later, in a later test, and print its traceback: Python 3.11 parses source
    lines for a traceback's carets, and two threads parsing at once break CPython 3.11.7's shared AST recursion
    counter ("SystemError: AST constructor recursion depth mismatch", seen in a CI run's evolve_cli)."""
    daemon_threads = False

@pytest.fixture
def server():
    FakeLLM.answers, FakeLLM.calls, FakeLLM.fail_first = REPLAY, [], True
    srv = JoinedHTTPServer(('127.0.0.1', 0), FakeLLM)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown(); srv.server_close()   # waits for the request threads

def test_openai_backend_run_tokens_cache_and_replay(tmp_path, server, monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'test-key')
    c = cfg(backend='openai', base_url=server, model='replayed-model', max_generations=1)
    s = EvolutionRun(tmp_path/'live', c).run()
    assert s['stop_reason'] == 'completed' and s['programs'] == 3 and s['backend'] == 'openai'
    assert len(FakeLLM.calls) == 1 + 3  # one retried 500, one root call, two child calls
    assert s['tokens'] == 900 + 120 + 600 + 90 + 610 + 40
    st = load_state(tmp_path/'live'/CHECKPOINT, 'evolution')
    progs = st['programs']
    assert [p['strategy'] for p in progs] == ['seed', 'llm:rewrite', 'llm:rewrite'] and progs[1]['metrics']['avg_score'] > progs[0]['metrics']['avg_score']
    assert st['root_turns'][0]['prompt_tokens'] == 900 and 'prog_00001' in st['root_turns'][0]['stdout']
    assert len((tmp_path/'live/llm_cache.jsonl').read_text().splitlines()) == 3
    # replay: the cache alone answers, the server is not asked again
    (tmp_path/'replay').mkdir(); shutil.copy(tmp_path/'live/llm_cache.jsonl', tmp_path/'replay/llm_cache.jsonl')
    n = len(FakeLLM.calls)
    s2 = EvolutionRun(tmp_path/'replay', cfg(backend='openai', base_url='http://127.0.0.1:9/v1', model='replayed-model',
                                             max_generations=1, replay_only=True)).run()
    assert len(FakeLLM.calls) == n and s2['stop_reason'] == 'completed' and s2['tokens'] == s['tokens']
    assert s2['best_metrics'] == s['best_metrics']

def test_budget_limit_with_llm(tmp_path, server, monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'test-key')
    s = EvolutionRun(tmp_path, cfg(backend='openai', base_url=server, model='m', max_tokens=1500)).run()
    assert s['stop_reason'].startswith('BudgetExceeded') and (tmp_path/'best_program.py').exists()

def test_cli(tmp_path, capsys):
    assert evolve_cli([str(tmp_path), '--env', 'cartpole', '--max-generations', '1', '--children-per-generation', '1', '--max-ticks', '50']) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])['stop_reason'] == 'completed'

def test_bench_runs_with_tiny_settings(tmp_path, bench):
    from dataclasses import asdict
    bench = bench('llm_evolution')
    res = bench.main(['--games', '1', '--heldout-ticks', '150', '--evals', '1', '--max-generations', '1', '--children-per-generation', '1',
                      '--max-ticks', '100', '--run-dir', str(tmp_path/'run'), '--out', str(tmp_path/'bench.json')])
    assert res['harness']['evals_per_s'] > 0 and {r['player'] for r in res['heldout']} >= {'pufferlib genome', 'best evolved', 'dellacherie', 'el-tetris'}
    assert all(r['n'] == 1 for r in res['heldout']) and [(r['player'], r['n']) for r in json.loads((tmp_path/'bench.json').read_text())['heldout']] == [(r['player'], r['n']) for r in res['heldout']]
    assert res['config'] == asdict(EvolutionConfig(**{**bench.PRESET, 'max_generations': 1, 'children_per_generation': 1, 'max_ticks': 100}))
    assert all(getattr(EvolutionConfig(), k) != v for k, v in bench.PRESET.items())   # the bench's preset, said in --help
    assert bench.PRESET_WHY in ' '.join(bench.parser().format_help().split())
    with pytest.raises(SystemExit): bench.main(['--env', 'cartpole'])

def test_program_search_bench_runs_with_tiny_settings(tmp_path, bench):
    bench = bench('program_search')
    res = bench.main(['--seeds', '3', '--batch', '2', '--max-generations', '1', '--children-per-generation', '2',
                      '--max-ticks', '100', '--heldout-games', '2', '--heldout-ticks', '150', '--cma-generations', '1',
                      '--cma-popsize', '2', '--out', str(tmp_path/'ps.json')])
    saved = json.loads((tmp_path/'ps.json').read_text())
    assert saved['parallel_speedup'] == res['parallel']['speedup'] > 0 and 0 <= saved['cache_hit_rate'] <= 1
    row, = saved['seeds']
    assert (row['seed'], row['cap'], row['heldout_games'], row['programs']) == (3, 150, 2, 5)   # 3 seeds, 2 kids
    assert row['eltetris_lines'] > 0 and 0 <= row['censored']['evolved'] <= 1
    assert row['cma'] == dict(generations=1, popsize=2, sigma=0.1)
    assert [h['generation'] for h in row['history']] == [0, 1]
    assert row['history'][-1]['cache_misses'] == 5 and row['cache']['misses'] == 5 + 2   # then 2 CMA-ES evaluations
    assert row['lineage'][0]['id'] == row['evolved_id'] and 'seed' in row['steps'] and row['descends_from']
    reg = Registry(tmp_path/'reg')   # the tuned program as a genome: a child of the reference player it descends from
    from genome_lab.programs.tetris_players import tetris_baselines
    refs = tetris_baselines(reg)
    db = ProgramDatabase.from_list(row['lineage'])
    gid = register_program(reg, db, row['evolved_id'], 'tetris', row['run_name'])
    g, seed = reg.genome(gid), db[row['evolved_id']]
    while seed.parents: seed = db[seed.parents[0]]   # the seed program it descends from through first parents
    assert g['config']['source'] == row['evolved_code'] and g['status'] == 'candidate'
    if seed.notes.startswith('reference player '):
        parent = refs[seed.notes.split()[-1]]
        assert g['parents'] == [dict(id=parent, relation='mutation')]
        assert (m := NAMING.fullmatch(g['name'])) and (m['family'], m['method']) == (reg.genome(parent)['name'], 'prog') and len(g['name']) <= NAME_MAX
        assert g['description'].endswith(json.dumps(db[row['evolved_id']].metrics)) and f"<- {reg.genome(parent)['name']}" in g['description']
    assert register_program(reg, db, row['evolved_id'], 'tetris', row['run_name']) == gid   # registered once
    assert row['evolved_train']['avg_score'] >= row['searched_train']['avg_score']   # tuning never keeps a worse program
    assert row['censored']['eltetris'] == 1.0   # El-Tetris outlives 150 ticks
    assert all(getattr(EvolutionConfig(), k) != v for k, v in bench.PRESET.items())   # the bench's preset, said in --help
    assert bench.PRESET_WHY in ' '.join(bench.parser().format_help().split())

def test_llm_timeout_is_retried(tmp_path, server, monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'test-key')
    FakeLLM.fail_first = 'slow'
    s = EvolutionRun(tmp_path, cfg(backend='openai', base_url=server, model='m', max_generations=1, llm_timeout_s=1.0)).run()
    assert s['stop_reason'] == 'completed' and s['programs'] == 3
    assert len(FakeLLM.calls) == 1 + 3  # the timed-out request was sent again

MARKER = 'genome_lab_root_marker_5e1'

def test_the_root_repl_is_sandboxed_persistent_and_audited(tmp_path, monkeypatch):
    """The root's code runs in the sandboxed REPL, never in this process: its variables last from turn to turn; reading
    a host file or opening a socket is refused, recorded with the sandbox's reason, and the run goes on."""
    secret = tmp_path/'secret.txt'; secret.write_text('host secret')
    def guard(fn):
        def f(src, *a, **k):
            if MARKER in (src.decode(errors='ignore') if isinstance(src, bytes) else str(src)): raise AssertionError("the root's code ran here")
            if not a and not k: a = (sys._getframe(1).f_globals, sys._getframe(1).f_locals)   # the caller's namespace, as exec's own
            return fn(src, *a, **k)
        return f
    monkeypatch.setattr(builtins, 'exec', guard(builtins.exec)); monkeypatch.setattr(builtins, 'eval', guard(builtins.eval))
    turns = iter([f"# {MARKER}\nx = 41\nspawn_rllm('go')\nadvance_generation()",
                  f"# {MARKER}\nx += 1\nprint(x, current_generation, len(program_database))",
                  f"# {MARKER}\nimport numpy\nprint(numpy.load({str(secret)!r}))",
                  f"# {MARKER}\nimport socket\nsocket.create_connection(('127.0.0.1', 9))",
                  f"# {MARKER}\nprint(open({str(secret)!r}).read())"])
    run = EvolutionRun(tmp_path/'run', cfg(max_generations=5, children_per_generation=1))
    run.backend.root = lambda messages, rng: dict(text=f"```python\n{next(turns)}\n```", prompt_tokens=0, completion_tokens=0)
    s = run.run()
    t = run.root_turns
    assert s['stop_reason'] == 'completed' and [x['generation'] for x in t] == [1, 2, 3, 4, 5]
    assert t[1]['stdout'] == '42 2 2\n' and not t[1]['failure']   # x kept; the shared variables as the REPL sees them
    assert [x['failure'] for x in t[2:4]] == ['forbidden', 'forbidden'] and all('seccomp' in x['error'] for x in t[2:4])
    assert t[4]['failure'] == '' and "NameError: name 'open' is not defined" in t[4]['error']   # a fresh REPL after a refusal
    assert s['root_refused'] == 2 and not any('host secret' in x['stdout'] for x in t)
    assert [h['generation'] for h in run.history] == [0, 1, 2, 3, 4, 5]   # the system closed every generation

# --- the command's refusals (issue 26): nothing lost, no tracebacks, 0 kept, one process per run

def test_cli_refuses_to_overwrite_or_invent_a_run(tmp_path, capsys):
    d = tmp_path/'run'
    small = ['--env', 'cartpole', '--max-generations', '1', '--children-per-generation', '1', '--max-ticks', '0', '--games-per-eval', '1']
    assert evolve_cli([str(d), *small]) == 0
    assert load_state(d/CHECKPOINT, 'evolution')['config']['max_ticks'] == 0   # 0 is a value, not "unset"
    before = (d/CHECKPOINT).read_bytes()
    assert evolve_cli([str(d), *small]) == 2 and 'holds a run' in capsys.readouterr().err
    assert (d/CHECKPOINT).read_bytes() == before
    with pytest.raises(SystemExit) as e: evolve_cli([str(tmp_path/'missing'), '--resume'])   # a usage error
    assert e.value.code == 2 and 'nothing to resume' in capsys.readouterr().err and not (tmp_path/'missing').exists()
    assert evolve_cli([str(d), '--resume', '--max-generations', '9']) == 2 and 'only' in capsys.readouterr().err
    d2 = tmp_path/'run2'
    advance(EvolutionRun(d2, cfg(max_generations=1, children_per_generation=1, games_per_eval=1, max_ticks=20)), d2/CHECKPOINT,
            'evolution', steps=1)   # generation 0 only
    assert evolve_cli([str(d2), '--resume', '--games-per-eval', '3']) == 0
    last = load_state(d2/CHECKPOINT, 'evolution')
    assert last['generation'] == 2 and last['config']['games_per_eval'] == 3   # the soft change was applied and kept
    assert [p['metrics']['games'] for p in last['programs'] if p['generation'] == 1] == [3]

@pytest.mark.parametrize('args,why', [(['--env', 'nosuch'], 'unknown arena'), (['--backend', 'nosuch'], 'backend'),
                                      (['--max-ticks', '-5'], 'max_ticks'), (['--games-per-eval', '0'], 'games_per_eval'),
                                      (['--workers', '0'], 'workers'), (['--islands', '0'], 'islands')])
def test_cli_bad_settings_are_one_line_errors(tmp_path, capsys, args, why):
    assert evolve_cli([str(tmp_path/'r'), *args]) == 2
    err = capsys.readouterr().err
    assert why in err and 'Traceback' not in err and not (tmp_path/'r').exists()

def test_cli_refuses_a_file_and_a_second_process(tmp_path, capsys):
    from genome_lab.core import run_lock
    (tmp_path/'f').write_text('x')
    assert evolve_cli([str(tmp_path/'f')]) == 2 and 'is a file' in capsys.readouterr().err
    with run_lock(tmp_path/'r'/'.lock'):
        assert evolve_cli([str(tmp_path/'r'), '--env', 'cartpole']) == 2 and 'in use' in capsys.readouterr().err

# --- the programs producer: chapter 65's search as a loop producer

def test_the_programs_producer_offers_its_best_at_fixed_intervals(tmp_path):
    """Seeded with the reference players, it offers the qualifier's winner after each CMA-ES generation, named as a
    child of the reference player it descends from; a later round continues the search; a pending offer registers
    once; other settings on the same folder are refused."""
    from dataclasses import replace
    from genome_lab.core import find_producer, ProducerContext
    from genome_lab.programs.program_producer import ProgramSettings, ProgramSearch, QUALIFIER_SEED0
    from genome_lab.ecosystem.seasons import work
    from genome_lab.programs.tetris_players import tetris_baselines
    assert find_producer('programs').loop is ProgramSearch
    reg = Registry(tmp_path/'reg'); refs = tetris_baselines(reg)
    s = ProgramSettings(program_ticks=120, program_children=2, program_games=1, program_cma_generations=1, program_cma_popsize=2,
                        program_qualifier_games=2, program_patience=1)   # every qualifier offers, new or not
    a = work(reg, 'programs', s, offers=1)
    assert (a['steps'], a['stopped']) == (3, 'offers')   # generation 0 (the seeds), 1, and 2: CMA-ES, then the offer
    ck = reg.root/'season_work'/'programs.safetensors'
    st = load_state(ck, 'producer')
    [gid] = a['offered']; [(pid, _)] = st['offered'].items()
    progs = {p['id']: p for p in st['run']['programs']}
    made = [p for p in progs.values() if p['strategy'] != 'seed' and p['ok']]
    q = st['qualified']
    assert st['last'] == pid and (-q[pid]['lost'], q[pid]['lines']) == max((-v['lost'], v['lines']) for v in q.values())   # the qualifier's winner
    assert set(st['qualified']) <= {p['id'] for p in made} and len(st['qualified']) == min(3, len(made))   # the finalists
    g = reg.genome(gid)
    assert g['parents'][0]['id'] in refs.values() and g['status'] == 'candidate' and g['arch'] == 'program'
    assert (m := NAMING.fullmatch(g['name'])) and (m['family'], m['method']) == (reg.genome(g['parents'][0]['id'])['name'], 'prog')
    b = work(reg, 'programs', s, offers=1)   # the next round: two more generations, the second CMA-ES
    assert b['steps'] == 2 and load_state(ck, 'producer')['run']['generation'] == 5
    loop = ProgramSearch(ProducerContext(reg, 1, s, reg.root/'season_work'))
    loop.load_state_dict(load_state(ck, 'producer')); loop.pending = dict(program=pid)
    assert loop.qualifiers == 2   # each on boards of its own: the first offer played both
    assert all(loop.run.cache.get(progs[pid]['code'], loop.run.eval_settings(2, QUALIFIER_SEED0 + k)) for k in (0, 2))
    n = len(reg.ids())
    assert loop.commit() == [gid] and len(reg.ids()) == n   # registered once, whatever the resumes
    with pytest.raises(ValueError, match='other settings'): work(reg, 'programs', replace(s, program_ticks=200), offers=1)

def test_the_programs_producer_widens_its_search_before_it_offers_nothing_new(tmp_path):
    """When the last offer wins a qualifier again, the producer commits nothing and widens its search in turn: wider
    steps, an island of the arena's program genomes it lacks, a restart island of the seeds; after `program_patience`
    such qualifiers it offers the last offer again, which `work`'s idle rule counts."""
    from genome_lab.core import ProducerContext
    from genome_lab.programs.program_producer import ProgramSettings, ProgramSearch, WIDENINGS
    from genome_lab.programs.program_policy import program_genome
    from genome_lab.programs.tetris_players import tetris_baselines, player_source, NAIVE_WEIGHTS
    reg = Registry(tmp_path/'reg'); tetris_baselines(reg)
    other = player_source(dict(NAIVE_WEIGHTS, holes=-3.0, ticks=-0.1), 'other')
    reg.add(program_genome('Other', 'tetris', other, origin='test'), {}, status='active')   # an arena program the search lacks
    s = ProgramSettings(program_ticks=60, program_children=2, program_games=1, program_cma_generations=1, program_cma_popsize=2,
                        program_qualifier_games=0, program_patience=3, program_islands=2)   # qualifiers on the training games
    loop = ProgramSearch(ProducerContext(reg, 1, s, tmp_path/'work'))
    for _ in range(3): loop.step()
    assert loop.pending and loop.stale == 0; loop.commit()
    sigma, runs = loop.run.cfg.mutation_sigma, []
    while len(runs) < 3:   # three qualifiers the last offer wins (forced: its training lines made the highest)
        loop.run.db[loop.last].metrics['avg_score'] = 1e9
        m = loop.step()
        if 'offers/stale' in m: runs.append((m['offers/stale'], bool(loop.pending), len(loop.run.islands)))
    assert [r[0] for r in runs] == [1, 2, 3] and [r[1] for r in runs] == [False, False, True]   # offered again at patience
    assert loop.run.cfg.mutation_sigma == 2*sigma and [r[2] for r in runs] == [2, 3, 4]   # 'sigma', then two new islands
    notes = {loop.run.db[i].notes for i in loop.run.islands[2]}
    assert 'reference player Other' in notes and loop.run.islands[3] == [p.id for p in loop.run.db.of_generation(0)]
    loop.widen('restart'); assert len(loop.run.islands) == 4   # at most twice program_islands: the weakest replaced
    x = next(p.id for p in loop.run.db.values() if p.strategy != 'seed' and p.ok and p.id != loop.last)
    loop.offered[x] = 'an earlier offer'; loop.run.db[loop.last].metrics['avg_score'] = 0.0; loop.run.db[x].metrics['avg_score'] = 2e9
    loop.pending = None; loop.qualify()
    assert loop.last == x and loop.stale == 4 and not loop.pending   # an earlier offer winning back: nothing new
    assert WIDENINGS == ('sigma', 'arena', 'restart')
    with pytest.raises(ValueError, match='unknown widening'): loop.widen('nothing')

def test_the_earlier_round_producers_checkpoint_is_a_clear_error(tmp_path):
    from genome_lab.core import save_state
    from genome_lab.programs.program_producer import ProgramSettings
    from genome_lab.ecosystem.seasons import work
    reg = Registry(tmp_path/'reg')
    save_state(reg.root/'season_work'/'programs.safetensors', 'producer', dict(round=3, pending=None))   # main's Rounds state
    with pytest.raises(ValueError, match="earlier programs producer's checkpoint"): work(reg, 'programs', ProgramSettings(), offers=1)
