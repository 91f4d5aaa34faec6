"""Load benchmark of the genome server, on loopback only.

1. Requests/s and p50/p99 latency of the manifest (`/get_genome_manifest`, served from its cache; `/uncached_manifest`: built
   on every request, as before the cache: the baseline) and of a 1 MB genome download
   (`/get_genome/{id}`, PufferLib's snake policy: 1,027,092 floats bytes) at 1, 16 and 64 concurrent keep-alive
   connections, next to the same bytes served as static files by the same server process (`/static/...`,
   Starlette's StaticFiles, which streams the file from disk in 64 KiB chunks): the issue's ceiling. Ratio =
   endpoint / static. The genome endpoint answers from its checked in-memory cache of files, so it can beat it.
2. Concurrent stats updates: C clients (threads, one HTTP connection each) each record G game results, one request
   per game; then the registry must hold every one of the C x G games (each carries a distinct score).

The manifest is measured on each server of `--servers` (uvicorn's h11 on asyncio, the baseline; httptools on uvloop,
from `uvicorn[standard]`; N read-only worker processes, as `genome-lab serve --workers N --read-only` runs them), and a
write by another process must show in the next manifest (not stale). The server runs in its own process (uvicorn, as
`genome-lab serve` runs it); the load generator is a small asyncio
HTTP/1.1 client in this process. Every phase is bounded by a request count and a duration.

    OMP_NUM_THREADS=1 .venv/bin/python bench/server_load.py [--seconds 3] [--clients 32 --games 100]
"""
import asyncio, json, os, shutil, socket, subprocess, sys, tempfile, threading, time
from pathlib import Path
from dataclasses import dataclass
from typing import Annotated
from kit import parse
import numpy as np
import httpx
from genome_lab.web.server import free_port

HOST = '127.0.0.1'
TOKEN = 'bench-token-' + os.urandom(6).hex()

SERVER = """
import json, os, sys, uvicorn
from genome_lab.web.server import create_app, ManifestOut
from genome_lab.web.access import retry_busy
root, static, port, token, http, workers = sys.argv[1:7]
if int(workers) > 1:   # read-only processes as `genome-lab serve --workers N --read-only` runs them
    os.environ['GENOME_LAB_SERVE'] = json.dumps(dict(registry=root, max_upload_bytes=8 << 20, job='genome_lab.tournaments.selection:tournament_job'))
    uvicorn.run('genome_lab.web.server:app_from_environment', factory=True, workers=int(workers), host='127.0.0.1', port=int(port),
                log_level='warning', http=http, loop='uvloop' if http == 'httptools' else 'asyncio')
else:
    app = create_app(root, token=token, static_dir=static)
    # the baseline: the manifest built and validated on every request, as the server did before its cache
    app.get('/uncached_manifest')(lambda: retry_busy(app.state.pool.get().manifest))
    uvicorn.run(app, host='127.0.0.1', port=int(port), log_level='warning', http=http, loop='uvloop' if http == 'httptools' else 'asyncio')
"""

def start_server(root:Path, static:Path, http:str='h11', workers:int=1)->tuple:
    port = free_port(HOST)
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}
    proc = subprocess.Popen([sys.executable, '-c', SERVER, str(root), str(static), str(port), TOKEN, http, str(workers)], env=env, cwd=root)
    for _ in range(600):
        try:
            if httpx.get(f'http://{HOST}:{port}/health', timeout=1).status_code == 200: return proc, port
        except httpx.HTTPError: pass
        if proc.poll() is not None: raise SystemExit(f"server exited with {proc.returncode}")
        time.sleep(0.1)
    proc.kill(); raise SystemExit("server did not start in 60 s")

async def _conn(port:int, path:str, deadline:float, budget:list, lat:list, nbytes:list):
    r, w = await asyncio.open_connection(HOST, port)
    req = f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
    try:
        while time.perf_counter() < deadline and budget[0] > 0:
            budget[0] -= 1
            t0 = time.perf_counter()
            w.write(req); await w.drain()
            head = await r.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            cl = next(int(l.split(b':', 1)[1]) for l in head.lower().split(b'\r\n') if l.startswith(b'content-length:'))
            await r.readexactly(cl)
            if status != 200: raise RuntimeError(f"{path}: status {status}")
            lat.append(time.perf_counter() - t0); nbytes[0] += cl
    finally:
        w.close()

def load(port:int, path:str, conns:int, seconds:float, max_requests:int)->dict:
    "Requests/s, p50 and p99 latency (ms) of GET `path` over `conns` keep-alive connections."
    lat, budget, nbytes = [], [max_requests], [0]
    async def main():
        deadline = time.perf_counter() + seconds
        await asyncio.gather(*[_conn(port, path, deadline, budget, lat, nbytes) for _ in range(conns)])
    t0 = time.perf_counter(); asyncio.run(main()); dt = time.perf_counter() - t0
    ms = np.array(lat) * 1e3
    return dict(n=len(lat), rps=len(lat)/dt, p50=float(np.percentile(ms, 50)), p99=float(np.percentile(ms, 99)),
                mbps=nbytes[0]/dt/2**20)

def stats_storm(port:int, gid:str, clients:int, games:int)->dict:
    "`clients` threads each POST `games` single-game results; returns timings and the scores sent."
    errors, t0 = [], time.perf_counter()
    def client(c):
        with httpx.Client(base_url=f'http://{HOST}:{port}', timeout=60, headers={'Authorization': f'Bearer {TOKEN}'}) as h:
            for k in range(games):
                r = h.post('/update_genome_stats', json=dict(genome_id=gid, player=f'p{c}',
                                                             results=[dict(score=float(c*100_000 + k), survival=1.0)]))
                if r.status_code != 200: errors.append((c, k, r.status_code, r.text[:200]))
    ts = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in ts: t.start()
    for t in ts: t.join()
    dt = time.perf_counter() - t0
    sent = sorted(float(c*100_000 + k) for c in range(clients) for k in range(games))
    return dict(seconds=dt, rps=clients*games/dt, errors=errors, sent=sent)

@dataclass
class ServerLoadBench:
    "The server load bench's settings."
    seconds: Annotated[float, 'duration of each load measurement'] = 3.0
    max_requests: Annotated[int, 'request cap of each load measurement'] = 20_000
    conns: Annotated[str, 'concurrent connections, comma-separated'] = '1,16,64'
    clients: Annotated[int, 'concurrent clients recording results'] = 32
    games: Annotated[int, 'game results per client (one request each)'] = 100
    servers: Annotated[str, 'uvicorn http implementation:worker processes, comma-separated; the first (the baseline) '
                            'also serves the uncached manifest, genomes and writes'] = 'h11:1,httptools:1,httptools:2'

def main(argv=None):
    a = parse(ServerLoadBench, doc=__doc__, argv=argv)
    from genome_lab.registry.store import Registry, seed_founders
    import genome_lab.web.server  # noqa: F401 (Registry.games, record_games)
    work = Path(tempfile.mkdtemp(prefix='genome_lab_bench_server_'))
    root, static = work/'registry', work/'static'
    with Registry(root) as reg:
        ids = seed_founders(reg)
        gid = ids['PufferSnake']
        size = reg.genome(gid)['size_bytes']
        static.mkdir()
        shutil.copy(reg._genome_path(gid), static/'genome.safetensors')
    def row(name, c, e, st=None):
        tail = f"{st['rps']:13.1f} {st['p50']:8.2f} {st['p99']:8.2f} {e['rps']/st['rps']:6.2f}" if st else f"{'-':>13s} {'-':>8s} {'-':>8s} {'-':>6s}"
        print(f"{name:22s} {c:5d} {e['rps']:15.1f} {e['p50']:8.2f} {e['p99']:8.2f} {tail}", flush=True)
    header = (f"{'target':22s} {'conns':>5s} {'endpoint req/s':>15s} {'p50 ms':>8s} {'p99 ms':>8s} {'static req/s':>13s} "
              f"{'p50 ms':>8s} {'p99 ms':>8s} {'ratio':>6s}")
    conns = [int(x) for x in a.conns.split(',')]
    for http, workers in [tuple(x.split(':')) for x in a.servers.split(',')][1:]:   # the manifest on the faster servers
        proc, port = start_server(root, static, http, int(workers))
        try:
            (static/'manifest.json').write_bytes(httpx.get(f'http://{HOST}:{port}/get_genome_manifest').content)
            print(f"uvicorn --http {http} ({'uvloop' if http == 'httptools' else 'asyncio'}), {workers} worker process(es)"
                  f"{'' if workers == '1' else ', read-only (no static files: their ceiling is in the 1-process rows)'}; load average {os.getloadavg()[0]:.1f}")
            print(header)
            for c in conns:
                row(f'manifest (cached)', c, load(port, '/get_genome_manifest', c, a.seconds, a.max_requests),
                    load(port, '/static/manifest.json', c, a.seconds, a.max_requests) if workers == '1' else None)
        finally: proc.terminate(); proc.wait(10)
    http, workers = a.servers.split(',')[0].split(':')
    proc, port = start_server(root, static, http, int(workers))
    try:
        manifest = httpx.get(f'http://{HOST}:{port}/get_genome_manifest').content
        (static/'manifest.json').write_bytes(manifest)
        print(f"server on {HOST}:{port} (uvicorn --http {http}, {workers} process); genome {gid}: {size:,} bytes; manifest: {len(manifest):,} bytes; "
              f"{a.seconds} s per point (at most {a.max_requests} requests); OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; "
              f"load average {os.getloadavg()[0]:.1f}")
        print(header)
        for name, path, spath in [('manifest (cached)', '/get_genome_manifest', '/static/manifest.json'),
                                  ('manifest (uncached)', '/uncached_manifest', '/static/manifest.json'),
                                  ('genome 1MB', f'/get_genome/{gid}', '/static/genome.safetensors')]:
            for c in conns: row(name, c, load(port, path, c, a.seconds, a.max_requests), load(port, spath, c, a.seconds, a.max_requests))
        etag = httpx.get(f'http://{HOST}:{port}/get_genome_manifest').headers['etag']
        with Registry(root) as reg: reg.set_status(ids['RandomSnake'], 'retired')   # a write by another process
        fresh = httpx.get(f'http://{HOST}:{port}/get_genome_manifest', headers={'If-None-Match': etag})
        print(f"manifest after a write by another process: status {fresh.status_code} (200 = not stale), ETag changed: {fresh.headers['etag'] != etag}")
        with Registry(root) as reg: before = reg.games(gid)
        st = stats_storm(port, gid, a.clients, a.games)
        with Registry(root) as reg:
            got = sorted(r[0] for r in reg.db.execute(
                "SELECT r.score FROM results r JOIN evaluations e ON e.id = r.evaluation WHERE r.genome=? AND e.kind='client'", (gid,)))
            after = reg.games(gid)
        ok = got == st['sent'] and after - before == a.clients * a.games and not st['errors']
        print(f"stats updates: {a.clients} clients x {a.games} results = {a.clients*a.games} requests in {st['seconds']:.1f} s "
              f"({st['rps']:.0f} req/s); counted {after - before} of {a.clients*a.games}; every score present: {got == st['sent']}; "
              f"errors: {len(st['errors'])}{' ' + str(st['errors'][:3]) if st['errors'] else ''}")
        print("stats updates: OK" if ok else "stats updates: LOST UPDATES")
        return 0 if ok else 1
    finally:
        proc.terminate(); proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)

if __name__ == '__main__': sys.exit(main())
