"""A new arena is one class and one registration: evaluation, a tournament and the server accept it unchanged."""
import ast, importlib, os, subprocess, sys, threading, time, types
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from genome_lab.arenas.arena import SnakeArena, Arena, Episodes, register_arena, find_arena, arena_names, make_arena, ARENAS
from genome_lab.arenas.evaluation import evaluate
from genome_lab.arenas.policies import RandomPolicy, Policy
from genome_lab.registry.store import Registry
from genome_lab.registry.genomes import Genome
from genome_lab.players.sessions import SessionWriter, uploaded_sessions, list_sessions
from genome_lab.tournaments.tournament import run_tournament
from genome_lab.web.server import create_app

class GuessArena(Arena):
    "Guess a hidden digit 0..9 drawn per agent from the seed: an episode ends at the first right guess; score = 10 - guesses."
    name, num_actions, stats = 'guess', 10, ('score', 'ret', 'length')
    limits = dict(num_envs=(1, 64))
    game_settings = dict(num_envs=3)
    def __init__(self, num_envs:int=4):
        self.config = dict(num_envs=num_envs)
        self._make_buffers(num_envs, (1,))
        self.reset(0)
    def _reset(self, seed):
        self.hidden = np.random.default_rng(seed).integers(0, 10, self.num_agents)
        self.obs[:] = 0; self.guesses = np.zeros(self.num_agents, np.int64)
    def _step(self):
        self.guesses += 1
        self.rewards[:] = (self.actions == self.hidden)
        self.obs[:, 0] = np.sign(self.hidden - self.actions)   # -1: lower, +1: higher, 0: right
    def _track(self):
        done = self.rewards > 0
        if done.any():
            i = np.flatnonzero(done)
            self._finished.append(Episodes(agent=i, ret=np.ones(len(i)), length=self.guesses[i].astype(float),
                                           score=10.0 - self.guesses[i], lines=np.zeros(len(i))))
            self.guesses[i] = 0
        return done

class Bisect(Policy):
    "Guesses by bisection from the hint: a far better guesser than random."
    arch = 'bisect_test'
    def __init__(self): super().__init__(); self.config = {}; self.w = torch.nn.Parameter(torch.zeros(1))
    def initial_state(self, n): return (torch.zeros(n, dtype=torch.long), torch.full((n,), 9, dtype=torch.long), torch.full((n,), -1))
    def forward(self, obs, state):
        lo, hi, last = state
        hint = obs[:, 0].long()
        lo = torch.where((last >= 0) & (hint > 0), last + 1, lo); hi = torch.where((last >= 0) & (hint < 0), last - 1, hi)
        lo = torch.where((last >= 0) & (hint == 0), 0, lo); hi = torch.where((last >= 0) & (hint == 0), 9, hi)   # a new digit
        guess = (lo + hi) // 2
        return torch.nn.functional.one_hot(guess, 10).float() * 10, (lo, hi, guess)

@pytest.fixture
def guess():
    register_arena(GuessArena)
    from genome_lab.arenas.policies import ARCHITECTURES
    ARCHITECTURES['bisect_test'] = Bisect
    yield GuessArena
    ARENAS.pop('guess'); ARCHITECTURES.pop('bisect_test')

def test_registry_refuses_a_taken_name_and_non_arenas():
    with pytest.raises(ValueError, match='taken'): register_arena(type('Other', (GuessArena,), {'name': 'snake'}))
    with pytest.raises(ValueError, match='not an Arena'): register_arena(int)
    with pytest.raises(ValueError, match='unknown arena'): find_arena('chess')
    assert {'snake', 'tetris', 'cartpole', 'creatures'} <= set(arena_names())

def test_evaluation_tournament_and_server_accept_a_new_arena(guess, tmp_path):
    r = evaluate(Bisect(), 'guess', episodes_per_agent=3, seed=1, progress=False, num_envs=8)
    rr = evaluate(RandomPolicy(10), 'guess', episodes_per_agent=3, seed=1, progress=False, num_envs=8)
    assert r.n == rr.n == 24 and r.stats()['score']['mean'] > rr.stats()['score']['mean'] + 2
    assert set(r.stats()) == {'score', 'ret', 'length'}
    reg = Registry(tmp_path/'reg')
    ids = [reg.add(Genome(name=n, type='baseline', arena='guess', arch=p.arch, config=p.config, source='test'), p.state_dict(),
                   status='active').id for n, p in (('bisect', Bisect()), ('random', RandomPolicy(10)), ('random2', RandomPolicy(10)))]
    t = run_tournament(reg, arena='guess', genomes_per_game=3, agents_per_genome=4, steps=60, meetings=3, seed=2, progress=False)
    assert t.leaderboard.name.iloc[0] == 'bisect' and len(t.games) >= 3
    assert reg.db.execute("SELECT arena FROM evaluations WHERE id=?", (t.evaluation,)).fetchone()[0] == 'guess'
    token, auth = 'test-token-123', {'Authorization': 'Bearer test-token-123'}
    with TestClient(create_app(tmp_path/'reg', token=token)) as http:
        assert http.post('/run_tournament', headers=auth, json=dict(arena='guess', agents=99)).status_code == 422   # beyond its limits
        job = http.post('/run_tournament', headers=auth, json=dict(arena='guess', agents=6, max_steps=40, settings=dict(num_envs=2))).json()
        for _ in range(300):
            job = http.get(f"/tournament_status/{job['id']}").json()
            if job['status'] not in ('queued', 'running'): break
            time.sleep(0.1)
        assert job['status'] == 'done', job
        assert job['result']['guess']['leaderboard'][0]['name'] == 'bisect'
        assert {g['arena'] for g in http.get('/get_genome_manifest').json()['genomes']} == {'guess'}

def test_imports_from_threads_keep_the_working_directory(tmp_path, monkeypatch):
    "PufferLib imported from several threads at once (an evolution run's evaluation threads) leaves the working directory as it was."
    from genome_lab.arenas.pufferlib_import import import_pufferlib_module
    monkeypatch.chdir(tmp_path)
    names = ['pufferlib', 'pufferlib.ocean.snake.binding', 'pufferlib.ocean.tetris.binding']*3
    with ThreadPoolExecutor(len(names)) as ex: mods = list(ex.map(import_pufferlib_module, names))
    assert [m.__name__ for m in mods] == names
    assert os.getcwd() == str(tmp_path) and os.listdir(tmp_path) == []

def test_pufferlib_is_imported_without_changing_directory(tmp_path):
    "A fresh process imports PufferLib (its package, the snake and tetris bindings) with `os.chdir` forbidden: no `resources` link appears."
    code = ("import os\n"
            "def refuse(*a): raise AssertionError('os.chdir called')\n"
            "os.chdir = refuse\n"
            "from genome_lab.arenas.arena import SnakeArena, TetrisArena\n"
            "SnakeArena(num_snakes=2, width=20, height=20, num_food=2).close(); TetrisArena().close()\n"
            "import pufferlib; assert pufferlib.__version__ == 3.0\n"
            "print(sorted(os.listdir('.')))")
    r = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout.strip()) == (0, '[]'), r.stderr[-2000:]

def test_no_chdir_in_the_package():
    "No module of genome_lab calls `chdir`: the working directory belongs to every thread of the process."
    import genome_lab
    calls = []
    root = Path(genome_lab.__file__).parent
    for f in sorted(root.rglob('*.py')):
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, ast.Call) and getattr(n.func, 'attr', getattr(n.func, 'id', None)) == 'chdir':
                calls.append(f"{f.relative_to(root)}:{n.lineno}")
    assert calls == []

def test_relative_registry_writes_while_arenas_are_made(tmp_path, monkeypatch):
    """Under load, with a relative registry path: threads making `SnakeArena`s (each imports PufferLib's binding) while
    others add genomes and write sessions through the registry's folder; every write lands where it was meant to."""
    monkeypatch.chdir(tmp_path)
    stop, made = threading.Event(), []
    def arenas():
        while not stop.is_set():
            SnakeArena(num_snakes=2, width=20, height=20, num_food=2).close(); made.append(1); time.sleep(0.001)
    def writes(k):
        with Registry('reg') as reg:
            for i in range(10):
                w = SessionWriter(uploaded_sessions(reg.root), dict(player=f'p{k}', kind='bot'), chunk_rows=2)
                for t in range(3): w.append(obs=np.zeros(121, np.int8), action=t % 4, reward=0.0)
                w.close()
                reg.add(Genome(name=f'R{k}-{i}', type='baseline', arena='snake', arch='random', config=dict(num_actions=4),
                               source='test'), RandomPolicy(4).state_dict())
        return reg.root
    makers = [threading.Thread(target=arenas) for _ in range(2)]
    for t in makers: t.start()
    try:
        with ThreadPoolExecutor(3) as ex: roots = list(ex.map(writes, range(3)))
    finally:
        stop.set()
        for t in makers: t.join()
    assert len(made) > 10 and all(r == tmp_path/'reg' for r in roots), (len(made), roots)
    ss = list_sessions(uploaded_sessions(tmp_path/'reg'))
    assert len(ss) == 30 and ss.closed.all() and (ss.steps == 3).all() and (ss.chunks == 2).all()
    with Registry(tmp_path/'reg') as reg: assert len(reg.ids()) == 30 and all(reg.load(i) for i in reg.ids())
    assert sorted(os.listdir(tmp_path)) == ['reg']
