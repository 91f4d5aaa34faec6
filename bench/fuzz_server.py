"""Fuzz the genome server with schemathesis against its own OpenAPI schema, on loopback only.

The server (the real app of `genome_lab.web.server.create_app`, with a token, over a fresh registry holding the founding
genomes) runs in this process under uvicorn; a pure ASGI wrapper counts every response status on the server side.
`schemathesis run` (all its checks but `positive_data_acceptance`, see below; the bearer token is sent so writes are
exercised too) generates the requests. Afterwards the registry must be intact:
SQLite `integrity_check` and `foreign_key_check` clean, every genome row's file present with its recorded sha256 and
parsing as a genome, no stray or temporary file in the genome folder, the founders unchanged, the manifest and
leaderboard serialisable (finite numbers).

Passes (exit 0) when no response was a 5xx, the registry is intact and at least `--min-requests` requests were served.
`positive_data_acceptance` is left out because `submit_genome`'s body is documented as any binary (a safetensors file
cannot be described in JSON Schema), so schema-valid random bytes are rightly refused with 400.
Tournament jobs started by the fuzzer run the real evaluation with `max_steps` capped at 200, to bound the run.

    OMP_NUM_THREADS=1 .venv/bin/python bench/fuzz_server.py [--max-examples 100] [--min-requests 1000]
"""
import collections, hashlib, json, os, shutil, subprocess, sys, tempfile, time
from dataclasses import dataclass
from typing import Annotated
from pathlib import Path
from kit import parse

HOST = '127.0.0.1'

class CountStatuses:
    "ASGI wrapper counting response statuses (and the paths of 5xx responses)."
    def __init__(self, app): self.app, self.codes, self.errors = app, collections.Counter(), []
    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http': return await self.app(scope, receive, send)
        async def counted(msg):
            if msg['type'] == 'http.response.start':
                self.codes[msg['status']] += 1
                if msg['status'] >= 500: self.errors.append((scope['method'], scope['path'], msg['status']))
            await send(msg)
        await self.app(scope, receive, counted)

def snapshot(reg)->dict:
    return {r['id']: r['sha256'] for r in reg.db.execute('SELECT id, sha256 FROM genomes')}

def check_intact(root:Path, founders:dict)->list: # problems found; empty when intact
    from genome_lab.registry.store import Registry
    from genome_lab.web.server import ManifestOut
    from genome_lab.web.site_pages import LeaderboardOut, leaderboard
    bad = []
    with Registry(root) as reg:
        if (ic := reg.db.execute('PRAGMA integrity_check').fetchone()[0]) != 'ok': bad.append(f"integrity_check: {ic}")
        if fk := reg.db.execute('PRAGMA foreign_key_check').fetchall(): bad.append(f"foreign_key_check: {len(fk)} rows")
        rows = snapshot(reg)
        for gid, sha in rows.items():
            p = reg._genome_path(gid)
            if not p.exists(): bad.append(f"{gid}: file missing"); continue
            if hashlib.sha256(p.read_bytes()).hexdigest() != sha: bad.append(f"{gid}: sha256 differs")
            try: reg.load(gid)
            except Exception as e: bad.append(f"{gid}: does not load ({e})")
        files = {p.name for p in reg.genome_dir.iterdir()}
        stray = files - {f'{g}.safetensors' for g in rows}
        if stray: bad.append(f"stray files in the genome folder: {sorted(stray)[:5]}")
        for gid, sha in founders.items():
            if rows.get(gid) != sha: bad.append(f"founder {gid} changed or lost")
        try:
            json.dumps(ManifestOut(**reg.manifest()).model_dump(), allow_nan=False)
            json.dumps(LeaderboardOut(**leaderboard(reg)).model_dump(), allow_nan=False)
        except Exception as e: bad.append(f"manifest/leaderboard not serialisable: {e}")
        n = dict(genomes=len(rows), results=reg.db.execute('SELECT COUNT(*) FROM results').fetchone()[0],
                 candidates=len(reg.ids('candidate')))
    return bad, n

@dataclass
class FuzzBench:
    "The fuzz run's settings."
    max_examples: Annotated[int, 'schemathesis examples per operation and phase'] = 100
    min_requests: Annotated[int, 'fail when fewer requests were served'] = 1000
    seed: Annotated[int, 'schemathesis seed'] = 0
    max_time: Annotated[int, 'schemathesis time budget in seconds'] = 900
    phases: Annotated[str, 'schemathesis phases'] = 'examples,coverage,fuzzing,stateful'

def main(argv=None):
    a = parse(FuzzBench, doc=__doc__, argv=argv)
    from genome_lab.registry.store import Registry, seed_founders
    from genome_lab.web.server import create_app, serve_in_thread
    from genome_lab.web.server_jobs import evaluation_job, job_runner
    work = Path(tempfile.mkdtemp(prefix='genome_lab_fuzz_'))
    root = work/'registry'
    with Registry(root) as reg:
        seed_founders(reg)
        founders = snapshot(reg)
    token = 'fuzz-token-' + os.urandom(6).hex()
    capped = lambda reg, req, progress: evaluation_job(reg, req.model_copy(update=dict(max_steps=min(req.max_steps, 200))), progress)
    inner = create_app(root, token=token, job=capped)
    app = CountStatuses(inner)
    st = Path(sys.executable).parent/'schemathesis'
    with serve_in_thread(app, host=HOST) as url:
        cmd = [st, 'run', f'{url}/openapi.json', '--max-examples', str(a.max_examples), '--seed', str(a.seed),
               '--checks', 'all', '--exclude-checks', 'positive_data_acceptance', '--max-time', str(a.max_time), '--phases', a.phases,
               '-H', f'Authorization: Bearer {token}', '--workers', '1']
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, 'NO_COLOR': '1'}, cwd=work)  # its .schemathesis cache goes there
        dt = time.perf_counter() - t0
        t1 = time.time()
        while job_runner(inner).busy() and time.time() - t1 < 300: time.sleep(0.2)  # a tournament job still running ends first
    out = r.stdout.splitlines()
    summary = out[out.index(next(l for l in out if 'SUMMARY' in l)):] if any('SUMMARY' in l for l in out) else out[-30:]
    print('\n'.join(l for l in summary if l.strip()))
    if r.returncode not in (0, 1): print(r.stderr[-3000:])
    total, n5xx = sum(app.codes.values()), sum(v for k, v in app.codes.items() if k >= 500)
    bad, counts = check_intact(root, founders)
    print(f"\nserver side: {total} requests in {dt:.0f} s; statuses {dict(sorted(app.codes.items()))}; 5xx: {n5xx} {app.errors[:5]}")
    print(f"registry after: {counts}; intact: {not bad}{' ' + str(bad) if bad else ''}")
    print(f"schemathesis exit status {r.returncode} (non-zero when a check other than 5xx failed; see the summary above)")
    ok = n5xx == 0 and not bad and total >= a.min_requests
    if ok: shutil.rmtree(work, ignore_errors=True)
    else: print(f"the fuzzed registry is kept in {root}")
    print("fuzz: OK" if ok else f"fuzz: FAILED (5xx={n5xx}, problems={len(bad)}, requests={total} < {a.min_requests}?)")
    return 0 if ok else 1

if __name__ == '__main__': sys.exit(main())
