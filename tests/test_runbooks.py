"""The runbooks (docs/runbooks/*.md) run as written: each test runs every command block of one page with small
settings, in the page's order, after bringing about what the page recovers from (a killed run or server, damaged
files), and checks the outcome."""
import json, os, re, signal, shlex, subprocess, sys, time
from pathlib import Path
import httpx, pytest
from genome_lab.registry.store import Registry, seed_founders
from genome_lab.registry.genomes import Genome, genome_to_bytes
from genome_lab.web.server import free_port

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PAGES = ROOT/'docs'/'runbooks'
SERVER_ENV = {**os.environ, 'GENOME_LAB_TOKEN': 'runbook-token', 'OMP_NUM_THREADS': '1'}   # the token comes from the environment
BLOCK = re.compile(r'^```\{code-block\} bash\n:caption: (.+?)\n(.*?)^```$', re.S | re.M)

class Runbook:
    "The command blocks of one page by caption; `run` runs one block after the page's settings, overridden by the test's."
    def __init__(self, name:str, cwd:Path, **settings):
        self.blocks = dict(BLOCK.findall((PAGES/f'{name}.md').read_text()))
        assert list(self.blocks)[0] == 'Settings', f"{name}.md must start with its Settings block"
        names = {n for line in self.blocks['Settings'].splitlines() if line.startswith('export ')
                 for n in re.findall(r'(\w+)=', line.split('#')[0])}
        assert names == set(settings), f"{name}.md's settings {sorted(names)} differ from the test's {sorted(settings)}"
        self.name, self.cwd, self.settings, self.ran = name, cwd, {k: str(v) for k, v in settings.items()}, []
        self.env = {**os.environ, 'PATH': f"{BIN}{os.pathsep}{os.environ['PATH']}", 'OMP_NUM_THREADS': '1'}

    def run(self, caption:str, ok:bool=True, timeout:float=600)->subprocess.CompletedProcess:
        script = '\n'.join([self.blocks['Settings'], *(f'export {k}={shlex.quote(v)}' for k, v in self.settings.items()),
                            self.blocks[caption]])
        r = subprocess.run(['bash', '-euo', 'pipefail', '-c', script], cwd=self.cwd, env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        if ok: assert r.returncode == 0, f"{self.name}.md, {caption!r}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        self.ran.append(caption)
        return r

    def run_all(self)->dict: # {caption: CompletedProcess}, every block after Settings in the page's order
        return {c: self.run(c) for c in list(self.blocks)[1:]}

    def check_all_ran(self):
        assert set(self.ran) == set(self.blocks) - {'Settings'}, f"blocks of {self.name}.md not run: {set(self.blocks) - set(self.ran) - {'Settings'}}"

def stop(pid_file:Path):
    "Kill the process whose id the page wrote, if it still runs."
    if pid_file.exists():
        try: os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError: pass

def status(record:Path)->dict: # {notebook: status} of a run's record, {} while it is missing or being written
    try: return {n: r['status'] for n, r in json.loads(record.read_text())['results'].items()}
    except (FileNotFoundError, json.JSONDecodeError): return {}

def wait_health(port:int, timeout:float=120):
    t0 = time.time()
    while True:
        try: return httpx.get(f'http://127.0.0.1:{port}/health', timeout=5).json()
        except httpx.TransportError: assert time.time() - t0 < timeout, "the server did not answer"; time.sleep(0.3)

def test_runbook_index_lists_every_page():
    index = (PAGES/'index.md').read_text()
    listed = [l.strip() for l in re.search(r'```\{toctree\}\n(.*?)```', index, re.S).group(1).splitlines()]
    assert sorted(l for l in listed if l and not l.startswith(':')) == sorted(p.stem for p in PAGES.glob('*.md') if p.stem != 'index')

def test_launch(tmp_path):
    port = free_port()
    rb = Runbook('launch', tmp_path, RUNS=tmp_path/'runs', RUN_ID='r1', NOTEBOOKS='00_core', PORT=port,
                 GENOME_LAB_TOKEN='runbook-token', AGENTS=3, MAX_STEPS=40)
    try: out = rb.run_all()
    finally: stop(tmp_path/'runs'/'serve.pid')
    assert json.loads((tmp_path/'runs'/'r1'/'run.json').read_text())['status'] == 'ok'
    assert out['Check that the run finished'].stdout.startswith("ok {'00_core': 'ok'}")
    assert '"ok":true' in out['Check that it answers'].stdout.replace(' ', '')
    assert out['Wait for its result'].stdout.strip().splitlines()[-1].startswith('done')
    with Registry(tmp_path/'runs'/'r1'/'registry') as reg:   # the founders were seeded and the tournament recorded
        assert reg.manifest()['last_tournament'] is not None and len(reg.ids('active')) >= 3
    rb.check_all_ran()

def test_recover_run(tmp_path):
    runs = tmp_path/'runs'
    proc = subprocess.Popen([BIN/'genome-lab', 'run', '00_core', '01_arenas', '--runs-dir', runs, '--run-id', 'r1'], cwd=tmp_path,
                            env={**os.environ, 'OMP_NUM_THREADS': '1'}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record, t0 = runs/'r1'/'run.json', time.time()
    while status(record) != {'00_core': 'ok', '01_arenas': 'running'}:
        assert proc.poll() is None and time.time() - t0 < 300, "the run did not get to 01_arenas"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL); proc.wait()   # killed while 01_arenas runs
    finished = (runs/'r1'/'00_core.ipynb').stat().st_mtime_ns
    rb = Runbook('recover-run', tmp_path, RUNS=runs, RUN_ID='r1')
    seen = rb.run('See where it stopped').stdout
    assert seen.startswith("running {'00_core': 'ok', '01_arenas': 'running'}"), seen
    rb.run('Resume it')
    rec = json.loads(record.read_text())
    assert rec['status'] == 'ok' and [rec['results'][n]['status'] for n in ('00_core', '01_arenas')] == ['ok', 'ok']
    assert (runs/'r1'/'00_core.ipynb').stat().st_mtime_ns == finished   # the finished notebook was not run again
    rb.check_all_ran()

@pytest.fixture
def registry(tmp_path):
    root = tmp_path/'runs'/'r1'/'registry'
    with Registry(root) as reg: seed_founders(reg)
    return root

def test_recover_server(tmp_path, registry):
    port = free_port()
    server = subprocess.Popen([BIN/'genome-lab', 'serve', '--registry', registry, '--port', str(port)], env=SERVER_ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try: before = wait_health(port)
    finally: server.kill(); server.wait()   # SIGKILL: nothing runs at exit
    (registry/'genomes'/'.tmp-abc.safetensors').write_bytes(b'half a genome')   # as a kill during a write leaves it
    rb = Runbook('recover-server', tmp_path, RUNS=tmp_path/'runs', RUN_ID='r1', PORT=port, GENOME_LAB_TOKEN='runbook-token')
    try:
        down = rb.run('Is it down?').stdout
        assert f'no server on port {port}' in down or 'HTTP 000' in down, down
        assert '.tmp-abc.safetensors' in rb.run('Remove temporary files a killed write left').stdout
        assert not list((registry/'genomes').glob('.tmp-*'))
        rb.run('Start it again')
        assert wait_health(port) == before
        with Registry(registry) as reg: n = len(reg.ids('active'))
        assert rb.run('Check the manifest').stdout.startswith(f'{n} active genomes: ')
    finally: stop(tmp_path/'runs'/'serve.pid')
    rb.check_all_ran()

def test_recover_registry(tmp_path, registry):
    rb = Runbook('recover-registry', tmp_path, REGISTRY=registry, BACKUP=tmp_path/'backup')
    rb.run('Back up')
    with Registry(registry) as reg:
        snake = reg.by_name('PufferSnake')
        g, p = reg.load(snake)
        late = reg.add(Genome(name='LateChild', type='hybrid', arena='snake', arch=g.arch, config=g.config, source='test',
                              parents=[dict(id=snake, relation='finetune')]), p, status='active').id
    for gid in (snake, late):   # one damaged file the backup holds, one it does not
        f = registry/'genomes'/f'{gid}.safetensors'
        data = bytearray(f.read_bytes()); data[-100] ^= 0xFF; f.write_bytes(bytes(data))
    assert rb.run('Check the database').stdout.strip() == 'ok'
    damaged = rb.run('Check every genome file against its sha256').stdout
    assert damaged.count('damaged:') == 2 and 'PufferSnake' in damaged and 'LateChild' in damaged, damaged
    rb.run('Restore genome files from the backup')
    assert 'retired: LateChild' == rb.run('Retire each genome whose file cannot be restored').stdout.strip()
    with Registry(registry) as reg:
        reg.load(snake)   # restored: its sha256 matches again
        assert reg.genome(late)['status'] == 'retired' and late not in reg.ids('active')
    db = registry/'registry.sqlite'
    data = bytearray(db.read_bytes()); data[len(data) // 2:len(data) // 2 + 4096] = os.urandom(4096); db.write_bytes(bytes(data))
    bad = rb.run('Check the database', ok=False)
    assert bad.returncode != 0 or bad.stdout.strip() != 'ok'
    rb.run('Restore a damaged database from the backup')
    assert rb.run('Check the database').stdout.strip() == 'ok'
    with Registry(registry) as reg:
        assert reg.by_name('PufferSnake') == snake and reg.by_name('LateChild') is None   # as the backup had it
    told = json.loads(rb.run('Restore the backup into a new registry folder').stdout)
    with Registry(f'{registry}-restored') as reg, Registry(registry) as now:
        assert told['integrity'] == 'ok' and sorted(reg.ids()) == sorted(now.ids()) and told['genomes'] == len(now.ids())
    rb.check_all_ran()

def test_evaluate(tmp_path, registry):
    port = free_port()
    with Registry(registry) as reg:
        g, p = reg.load(reg.by_name('PufferSnake'))
    candidate = Genome(name='Candidate', type='hybrid', arena='snake', arch=g.arch, config=g.config, source='test',
                       parents=[dict(id=g.id, relation='finetune')])
    (tmp_path/'candidate.safetensors').write_bytes(genome_to_bytes(candidate, {k: v * 0.9 for k, v in p.items()}))
    server = subprocess.Popen([BIN/'genome-lab', 'serve', '--registry', registry, '--port', str(port)], env=SERVER_ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_health(port)
        rb = Runbook('evaluate', tmp_path, GENOME=tmp_path/'candidate.safetensors', PORT=port, GENOME_LAB_TOKEN='runbook-token',
                     ARENA='snake', AGENTS=3, MAX_STEPS=40)
        out = rb.run_all()
    finally: server.kill(); server.wait()
    assert json.loads((tmp_path/'candidate.json').read_text())['id'] == candidate.id
    report = out['Read the leaderboard and the changes'].stdout
    assert report.startswith('snake: ') and '<- the candidate' in report and 'changes:' in report, report
    with Registry(registry) as reg: assert reg.genome(candidate.id)['status'] in ('active', 'candidate')
    rb.check_all_ran()
