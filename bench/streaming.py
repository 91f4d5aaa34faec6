"""The streaming chapter's figures, each next to a baseline measured in the same run.

1. Render rate at 1280x720, 30 fps, on one core (this process pinned to one CPU; CPU time of the drawing thread):
   `render_snake` drawing straight into YUV 4:2:0 planes, against the same picture drawn in RGB (numpy cells, Pillow
   text) and converted to YUV 4:2:0 by swscale, as a renderer without the YUV canvas would. Frames come from a game of
   the founding genomes stepped once per frame (every frame differs). As multiples of real time (33.3 ms a frame).
   Also the other arenas' pictures: 4 tetris boards, 8 creatures (no baseline: the same canvas).
2. Encode rate of the same frames: `LiveEncoder` (libx264 ultrafast, zerolatency, no B-frames, GOP 30, CBR) against
   libx264's defaults (preset medium, B-frames, look-ahead) at the same bitrate, one thread each; the bitrate
   measured from the packets, and the encoder's delay (frames in before the first packet out). Render + encode
   together as a multiple of real time (goal: at least 2).
3. Encode cost against the number of WebRTC viewers: the server process's CPU seconds per second with N aiortc
   viewers (separate process), for the broadcast (one encoder, packets shared) and for aiortc's usual way (a
   `MediaRelay` of raw frames: each viewer's sender encodes its own copy).
4. Glass-to-glass latency in headless Chromium (bench/live_view.py): the clock stamped into each frame, read back
   from the page's canvas when the frame is displayed, against the server's clock; WebRTC (goal: under 1 s) and the
   MJPEG fallback, with the clock round trip as the floor.

Sections 3 and 4 run in a private network namespace (see bench/live_view.py). The machine is shared: `uptime`'s load
is printed at the start and the end, and the CPU-time figures are less sensitive to it than wall time.

    OMP_NUM_THREADS=1 .venv/bin/python bench/streaming.py [--seconds 5] [--viewers 1,2,4] [--latency-seconds 10]
                                                           [--json nbs/measured/streaming.json]
"""
import json, os, socket, subprocess, sys, tempfile, threading, time
from fractions import Fraction
from pathlib import Path
from dataclasses import dataclass
from typing import Annotated
from genome_lab.core import atomic_write_json
from kit import parse
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import live_view

def load()->str: return open('/proc/loadavg').read().split()[:3]

def moments(registry:Path, n:int)->list: # [(SnakeFrame, Scene)], one per step
    from genome_lab.registry.store import Registry
    from genome_lab.broadcast.live import LiveGame, StreamConfig, active_snakes
    with Registry(registry) as reg: g = LiveGame(reg, active_snakes(reg, 8), 0, 1, StreamConfig())
    for _ in range(60): g.step()   # past the first steps, where snakes are one cell long
    out = []
    for _ in range(n): g.step(); out.append(g.moment)
    g.close()
    return out

def rgb_baseline(frame, scene):
    "The same picture drawn in RGB (numpy cells, Pillow text), then converted to YUV 4:2:0 by swscale."
    import av
    from PIL import Image, ImageDraw
    from genome_lab.arenas.render import _font, HEADER, PANEL, BACK, INK, DIM
    from genome_lab.broadcast.streaming import _cell_colours, _map_layout, leaderboard_rows, SIDEBAR, FEED
    W, H = 1280, 720
    img = np.empty((H, W, 3), np.uint8); img[:] = BACK
    img[:HEADER] = PANEL; img[:, W-SIDEBAR:] = PANEL; img[H-FEED:, :W-SIDEBAR] = PANEL
    x, y, s, r0, c0, rows, cols = _map_layout(_Dims(W, H), frame, scene, 'map')
    yuv = _cell_colours(frame, scene)[r0:r0+rows, c0:c0+cols]
    rgb = _yuv_to_rgb(yuv)
    img[y:y+rows*s, x:x+cols*s].reshape(rows, s, cols, s, 3)[:] = rgb[:, None, :, None]
    im = Image.fromarray(img); d = ImageDraw.Draw(im)
    d.text((12, 8), scene.title, fill=INK, font=_font(18)); d.text((W - 300, 10), scene.info, fill=DIM, font=_font(15))
    for k, r in enumerate(leaderboard_rows(frame, scene)):
        d.text((W - SIDEBAR + 28, HEADER + 28 + 20*k), f"{r['name']}  {r['score']:.1f}  {r['best']}  {r['kills']}", fill=INK, font=_font(14))
    for k, (t, v, killer) in enumerate(scene.feed[-4:]):
        d.text((12, H - FEED + 26 + 20*k), f"{t}  {scene.names[scene.genome[v]]} killed by {killer}", fill=INK, font=_font(15))
    for a in range(len(scene.names)): d.text((x + 10*a, y), scene.names[a], fill=INK, font=_font(12))
    return av.VideoFrame.from_ndarray(np.asarray(im), format='rgb24').reformat(format='yuv420p')

class _Dims:
    def __init__(self, w, h): self.width, self.height = w, h

def _yuv_to_rgb(yuv):
    y, u, v = (yuv[..., k].astype(float) for k in range(3))
    y, u, v = (y - 16) / 219, (u - 128) / 224, (v - 128) / 224
    r = y + 1.5748*v; b = y + 1.8556*u; g = (y - 0.2126*r - 0.0722*b) / 0.7152
    return (np.stack([r, g, b], -1) * 255).clip(0, 255).astype(np.uint8)

def cpu_per_call(fn, items)->tuple: # (thread CPU seconds per call, wall seconds per call, results)
    out, c0, w0 = [], time.thread_time(), time.perf_counter()
    for it in items: out.append(fn(it))
    return (time.thread_time() - c0) / len(items), (time.perf_counter() - w0) / len(items), out

def render_and_encode(registry:Path, seconds:float, fps:int=30)->dict:
    import av
    from genome_lab.arenas.render import Canvas
    from genome_lab.broadcast.streaming import render_snake, LiveEncoder, EncoderConfig
    n = int(seconds * fps)
    ms = moments(registry, n)
    cv = Canvas()
    def ours(m):
        render_snake(cv, *m, stamp_ms=int(time.time() * 1000))
        return cv.frame.reformat(format='yuv420p')   # a copy, for the encoders below (not timed in the figure: see copy_ms)
    c_copy, _, _ = cpu_per_call(lambda m: cv.frame.reformat(format='yuv420p'), ms[:30])
    c_ours, w_ours, frames = cpu_per_call(ours, ms)
    c_ours -= c_copy
    c_base, w_base, _ = cpu_per_call(lambda m: rgb_baseline(*m), ms)
    budget = 1 / fps
    res = dict(render=dict(frames=n, cpu_ms=1e3*c_ours, wall_ms=1e3*(w_ours - c_copy), x_real_time=budget / c_ours,
                           baseline=dict(what='RGB drawing (numpy cells, Pillow text) + swscale to YUV 4:2:0',
                                         cpu_ms=1e3*c_base, wall_ms=1e3*w_base, x_real_time=budget / c_base)))
    def encode_with(enc_fn):
        sizes, first = [], None
        def one(k):
            pk = enc_fn(frames[k])
            nonlocal first
            if pk and first is None: first = k
            sizes.append(sum(p.size for p in pk))
        c, w, _ = cpu_per_call(one, range(n))
        return c, w, sum(sizes) * 8 / (n / fps) / 1e3, first
    live = LiveEncoder(EncoderConfig(fps=fps))
    c_e, w_e, kbps, first = encode_with(live.encode)
    ctx = av.CodecContext.create('libx264', 'w')
    ctx.width, ctx.height, ctx.pix_fmt, ctx.time_base, ctx.framerate, ctx.bit_rate = 1280, 720, 'yuv420p', Fraction(1, fps), Fraction(fps), 2_000_000
    ctx.options = {'threads': '1'}
    k = [0]
    def default(f):
        f.pts = k[0]; k[0] += 1; return ctx.encode(f)
    c_d, w_d, kbps_d, first_d = encode_with(default)
    res['encode'] = dict(cpu_ms=1e3*c_e, wall_ms=1e3*w_e, x_real_time=budget / c_e, bitrate_kbps=kbps, delay_frames=first,
                         settings='libx264 ultrafast, zerolatency, baseline profile, no B-frames, GOP 30, CBR 2 Mbit/s, 1 thread',
                         baseline=dict(what='libx264 defaults (preset medium, B-frames, look-ahead), 2 Mbit/s, 1 thread',
                                       cpu_ms=1e3*c_d, wall_ms=1e3*w_d, x_real_time=budget / c_d, bitrate_kbps=kbps_d, delay_frames=first_d))
    res['render_and_encode'] = dict(cpu_ms=1e3*(c_ours + c_e), x_real_time=budget / (c_ours + c_e), goal=2.0,
                                    baseline=dict(cpu_ms=1e3*(c_base + c_d), x_real_time=budget / (c_base + c_d)))
    res['other_arenas'] = other_arenas(n, budget)
    return res

def other_arenas(n:int, budget:float)->dict:
    "CPU per 1280x720 frame of 4 tetris boards (from `TetrisArena` stepped by random keys) and of 8 creatures (recorded frames)."
    from genome_lab.arenas.arena import TetrisArena
    from genome_lab.arenas.physics import random_population, simulate, pellet_course
    from genome_lab.arenas.render import Canvas, render_tetris, tetris_boards, genome_colours
    from genome_lab.broadcast.streaming import render_creatures
    cv, rng, names = Canvas(), np.random.default_rng(0), ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H']
    arena = TetrisArena(num_envs=4)
    boards = []
    for _ in range(n): arena.step(rng.integers(0, 7, 4)); boards.append(tetris_boards(arena))
    c_t, _, _ = cpu_per_call(lambda b: render_tetris(cv, b, names[:4], genome_colours(names[:4]), [0] * 4), boards)
    pop = random_population(8, 0); g = {k: v.numpy() for k, v in pop.items()}
    course = pellet_course(0)
    sim = simulate(pop, course, seconds=n / 15, record=True)
    c_c, _, _ = cpu_per_call(lambda k: render_creatures(cv, sim.frames[k], g['node_mask'], g['muscle_a'], g['muscle_b'], g['muscle_mask'],
                                                         course[int(sim.frame_pellets[k, 0])].numpy(), names, genome_colours(names)), range(len(sim.frames)))
    return dict(tetris=dict(boards=4, cpu_ms=1e3*c_t, x_real_time=budget / c_t), creatures=dict(creatures=8, cpu_ms=1e3*c_c, x_real_time=budget / c_c))

# -- section 3: viewers (run inside the network namespace)

def per_viewer_app(registry:Path, fps:int=30):
    "aiortc's usual way: a track of raw frames, relayed to every viewer, each viewer's sender encoding its own copy."
    import asyncio
    from fastapi import FastAPI
    from aiortc import RTCPeerConnection, RTCSessionDescription, RTCConfiguration, RTCRtpSender, VideoStreamTrack
    from aiortc.contrib.media import MediaRelay
    from genome_lab.registry.store import Registry
    from genome_lab.broadcast.live import LiveGame, StreamConfig, active_snakes
    from genome_lab.arenas.render import Canvas
    from genome_lab.broadcast.streaming import render_snake
    with Registry(registry) as reg: game = LiveGame(reg, active_snakes(reg, 8), 0, 1, StreamConfig())
    class Frames(VideoStreamTrack):
        k = 0
        async def recv(self):
            pts, tb = await self.next_timestamp()
            self.k += 1
            if self.k % 3 == 0: game.step()
            f = render_snake(Canvas(), *game.moment, stamp_ms=int(time.time() * 1000)).frame
            f.pts, f.time_base = pts, tb
            return f
    source, relay, app = Frames(), MediaRelay(), FastAPI()
    @app.post('/stream/offer')
    async def offer(body:dict):
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        tr = pc.addTransceiver(relay.subscribe(source), direction='sendonly')
        tr.setCodecPreferences([c for c in RTCRtpSender.getCapabilities('video').codecs if c.mimeType == 'video/H264'])
        await pc.setRemoteDescription(RTCSessionDescription(body['sdp'], body['type']))
        await pc.setLocalDescription(await pc.createAnswer())
        return {'sdp': pc.localDescription.sdp, 'type': 'answer'}
    return app

def serve_main(a):
    "Subprocess: a server ('shared': the genome server with its broadcast; 'per-viewer': the baseline) until killed."
    import uvicorn
    from genome_lab.web.server import create_app
    from genome_lab.broadcast.live import StreamConfig
    if a.serve == 'shared':
        app = create_app(a.registry); app.state.stream_config = StreamConfig(idle_seconds=60)
    else: app = per_viewer_app(Path(a.registry))
    uvicorn.run(app, host='127.0.0.1', port=a.port, log_level='warning')

async def _viewers(url:str, n:int, seconds:float, res:dict)->list: # frames received per viewer (also live in `res['live']`)
    import asyncio, httpx
    from aiortc import RTCPeerConnection, RTCSessionDescription, RTCConfiguration
    counts, pcs = [0] * n, []
    res['live'] = counts
    async def watch(k):
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[])); pcs.append(pc)
        pc.addTransceiver('video', direction='recvonly')
        done = asyncio.get_running_loop().create_future()
        @pc.on('track')
        def on_track(track):
            async def pull():
                while True: await track.recv(); counts[k] += 1
            asyncio.ensure_future(pull())
        await pc.setLocalDescription(await pc.createOffer())
        async with httpx.AsyncClient(timeout=30) as http:
            r = await http.post(url + '/stream/offer', json={'sdp': pc.localDescription.sdp, 'type': 'offer'})
        r.raise_for_status()
        await pc.setRemoteDescription(RTCSessionDescription(**r.json()))
    await asyncio.gather(*(watch(k) for k in range(n)))
    await asyncio.sleep(seconds)
    for pc in pcs: await pc.close()
    return counts

def proc_cpu(pid:int)->float: # seconds of CPU (user + system) of process `pid`
    f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')

def viewers_main(a)->dict:
    "Inside the namespace: for each mode and viewer count, a fresh server, then N viewers for `seconds`; its CPU s/s."
    import asyncio
    from genome_lab.web.server import free_port
    out = {}
    for mode in ('shared', 'per-viewer'):
        rows = []
        for n in [int(x) for x in a.viewers.split(',')]:
            port = free_port()
            srv = subprocess.Popen([sys.executable, __file__, '--serve', mode, '--port', str(port), '--registry', a.registry])
            try:
                url, t0 = f'http://127.0.0.1:{port}', time.time()
                while True:
                    try: socket.create_connection(('127.0.0.1', port), 1).close(); break
                    except OSError:
                        if time.time() - t0 > 60: raise RuntimeError("the server did not start")
                        time.sleep(0.2)
                res = {}
                def run(): res['counts'] = asyncio.run(_viewers(url, n, a.seconds + 3, res))
                th = threading.Thread(target=run); th.start()
                time.sleep(3)   # connections up, encoders warm
                c0, w0, f0 = proc_cpu(srv.pid), time.time(), list(res.get('live', [0] * n))
                time.sleep(a.seconds)
                cpu, dt, f1 = proc_cpu(srv.pid) - c0, time.time() - w0, list(res.get('live', [0] * n))
                th.join(60)
                fps = [(b - a_) / dt for a_, b in zip(f0, f1)]
                rows.append(dict(viewers=n, server_cpu_s_per_s=cpu / dt, fps_per_viewer=fps,
                                 server_cpu_ms_per_frame=1e3 * cpu / max(1, (sum(f1) - sum(f0)) / n)))
            finally: srv.kill(); srv.wait()
        out[mode] = rows
    return out

# -- section 4: latency

def latency(registry:Path, seconds:float)->dict:
    out = {}
    for mode in ('webrtc', 'mjpeg'):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, HERE/'live_view.py', '--registry', registry, '--out', d, '--mode', mode,
                                '--seconds', str(seconds)], capture_output=True, text=True, timeout=600)
        if r.returncode: raise RuntimeError(f"live_view {mode} failed: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        v = json.loads(r.stdout.strip().splitlines()[-1])
        out[mode] = dict(**v['latency_ms'], clock_rtt_ms=v['rtt_ms'], fps=v['health']['fps'], frames=v['frames'], mode=v['mode'])
    return out

@dataclass
class StreamingBench:
    "The streaming bench's settings (the last four: how it runs its own servers and viewers in processes of their own)."
    seconds: Annotated[float, 'seconds of video per render/encode and viewer measurement'] = 5.0
    viewers: Annotated[str, 'viewer counts of section 3'] = '1,2,4'
    latency_seconds: Annotated[float, 'seconds each latency page is watched'] = 10.0
    json: Annotated[str, 'write the figures there too (e.g. nbs/measured/streaming.json)'] = ''
    sections: Annotated[str, 'which sections to run (a comma-separated subset of render, viewers, latency)'] = \
        'render,viewers,latency'
    serve: Annotated[str, "internal: serve the stream, 'shared' or 'per-viewer'"] = ''
    port: Annotated[int, 'internal: the port served'] = 0
    registry: Annotated[str, 'internal: the registry served'] = ''
    viewers_only: Annotated[bool, 'internal: the viewers section alone, inside its network namespace?'] = False

def main(argv=None):
    a = parse(StreamingBench, doc=__doc__, argv=argv)
    if a.serve: return serve_main(a)
    if a.viewers_only:   # inside the namespace
        print(json.dumps(viewers_main(a))); return 0
    from genome_lab.registry.store import Registry, seed_founders
    work = Path(tempfile.mkdtemp(prefix='genome_lab_stream_bench_'))
    reg = work/'registry'
    with Registry(reg) as r: seed_founders(r)
    cpu = sorted(os.sched_getaffinity(0))[-1]
    model = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), 'unknown CPU')
    res = dict(load_start=load(), cpu=f'{model}, {os.cpu_count()} CPUs')
    sections = set(a.sections.split(','))
    if bad := sections - {'render', 'viewers', 'latency'}: raise SystemExit(f"unknown sections {sorted(bad)}: choose from render, viewers, latency")
    if 'render' in sections:
        os.sched_setaffinity(0, {cpu})   # sections 1-2 on one core
        res.update(render_and_encode(reg, a.seconds))
        os.sched_setaffinity(0, set(range(os.cpu_count())))
    if 'viewers' in sections:
        r = live_view.in_private_network([sys.executable, __file__, '--viewers-only', '--viewers', a.viewers, '--seconds', a.seconds,
                                          '--registry', reg], capture_output=True, text=True, timeout=1800)
        if r.returncode: raise RuntimeError(f"the viewer measurement failed: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        res['viewers'] = json.loads(r.stdout.strip().splitlines()[-1])
    if 'latency' in sections: res['latency'] = latency(reg, a.latency_seconds)
    res['load_end'] = load()
    report(res)
    if a.json: atomic_write_json(a.json, res)
    return 0

def report(r:dict):
    print(f"load at start {' '.join(r['load_start'])}, at end {' '.join(r['load_end'])}; {r['cpu']}")
    if 'render' in r:
        R, E, RE = r['render'], r['encode'], r['render_and_encode']
        print(f"render 1280x720 ({R['frames']} frames), CPU per frame on one core: {R['cpu_ms']:.2f} ms = {R['x_real_time']:.1f}x real time at 30 fps "
              f"(wall {R['wall_ms']:.2f} ms); baseline {R['baseline']['what']}: {R['baseline']['cpu_ms']:.2f} ms = {R['baseline']['x_real_time']:.1f}x")
        print(f"encode ({E['settings']}): {E['cpu_ms']:.2f} ms = {E['x_real_time']:.1f}x real time, {E['bitrate_kbps']:.0f} kbit/s, "
              f"delay {E['delay_frames']} frames; baseline {E['baseline']['what']}: {E['baseline']['cpu_ms']:.2f} ms = "
              f"{E['baseline']['x_real_time']:.1f}x, {E['baseline']['bitrate_kbps']:.0f} kbit/s, delay {E['baseline']['delay_frames']} frames")
        print(f"render + encode: {RE['cpu_ms']:.2f} ms = {RE['x_real_time']:.1f}x real time (goal {RE['goal']}x); baseline {RE['baseline']['x_real_time']:.1f}x")
        O = r['other_arenas']
        print(f"render 1280x720, other arenas: 4 tetris boards {O['tetris']['cpu_ms']:.2f} ms = {O['tetris']['x_real_time']:.1f}x real time; "
              f"8 creatures {O['creatures']['cpu_ms']:.2f} ms = {O['creatures']['x_real_time']:.1f}x")
    for mode, rows in r.get('viewers', {}).items():
        print(f"server CPU by viewers, {mode}: " + '; '.join(f"{x['viewers']}: {x['server_cpu_s_per_s']:.2f} s/s, {x['server_cpu_ms_per_frame']:.1f} ms "
                                                               f"per frame sent to all (fps per viewer {', '.join(f'{f:.1f}' for f in x['fps_per_viewer'])})" for x in rows))
    for mode, v in r.get('latency', {}).items():
        print(f"glass-to-glass {mode}: median {v['median']:.0f} ms, p95 {v['p95']:.0f} ms (n {v['n']}, stream {v['fps']:.1f} fps); clock round trip {v['clock_rtt_ms']} ms")

if __name__ == '__main__': sys.exit(main())
