"""Watch the genome server's live stream or highlight playlist in headless Chromium, inside a private network namespace.

WebRTC needs a network interface that is not loopback (Chromium gathers no loopback candidates, aioice skips
127.0.0.1), so this script re-runs itself in a new network namespace (`unshare -n`, or `-rn` without root) with a veth
pair 198.18.0.1 <-> 198.18.0.2 (RFC 2544's benchmarking range) and a default route into it: the server, Chromium and
their ICE traffic stay in that namespace, and nothing can reach another host. The server (`create_app` over
`--registry`, with a token) runs under uvicorn on 127.0.0.1 in this process; Chromium is Debian's, driven by
Playwright (no browser download). Prints one JSON object: what the page measured (frames, glass-to-glass latencies,
video time), the server's health, the recovery after an injected fault, and the screenshots written to `--out`.

    .venv/bin/python bench/live_view.py --registry DIR --out DIR [--page live|playlist] [--mode webrtc|mjpeg]
                                        [--seconds 6] [--inject-codec-at 3]
"""
import json, os, shutil, subprocess, sys, time
from pathlib import Path
from dataclasses import dataclass
from typing import Annotated
from kit import parse

NETNS_SETUP = ('ip link set lo up && ip link add v0 type veth peer name v1 && ip addr add 198.18.0.1/24 dev v0 && '
               'ip addr add 198.18.0.2/24 dev v1 && ip link set v0 up && ip link set v1 up && ip route add default via 198.18.0.2 dev v0')
CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
                  '--disable-component-update', '--disable-sync', '--autoplay-policy=no-user-gesture-required',
                  '--disable-features=WebRtcHideLocalIpsWithMdns']   # real host candidates (no multicast DNS names)
TOKEN = 'live-view-token'

def in_private_network(cmd:list, **kw)->subprocess.CompletedProcess:
    "Run `cmd` in a new network namespace (see the module's docstring), with `GENOME_LAB_NETNS=1` set; `kw` go to `subprocess.run`."
    if missing := [t for t in ('unshare', 'ip') if shutil.which(t) is None]:
        raise SystemExit(f"{missing} not found: a private network namespace needs util-linux's unshare and iproute2's ip")
    unshare = ['unshare', '-n'] if os.geteuid() == 0 else ['unshare', '-rn']
    return subprocess.run([*unshare, 'sh', '-c', NETNS_SETUP + ' && exec "$@"', 'sh', *map(str, cmd)],
                          env={**os.environ, 'GENOME_LAB_NETNS': '1'}, **kw)

def watch_live(page, url:str, a, out:Path)->dict:
    "Open the live page, watch `a.seconds`, inject a codec error at `a.inject_codec_at` s; the page's and the server's figures."
    import httpx
    page.goto(f'{url}/stream' + ('?mode=mjpeg' if a.mode == 'mjpeg' else ''))
    t0, res = time.time(), {}
    page.wait_for_function(f"() => window.streamStats && window.streamStats.{'frames' if a.stamp else 'painted'} > 0", timeout=20_000)
    res['first_frame_s'] = time.time() - t0
    vt = lambda: page.evaluate("() => document.getElementById('screen').currentTime")
    res['video_time'] = [vt()]
    page.screenshot(path=str(out/f'live-{a.mode}-1.png'))
    injected = None
    while time.time() - t0 < a.seconds:
        if a.inject_codec_at and injected is None and time.time() - t0 >= a.inject_codec_at:
            r = httpx.post(f'{url}/stream/fault', json={'fault': 'codec'}, headers={'Authorization': f'Bearer {TOKEN}'})
            r.raise_for_status(); injected = time.time() * 1000
        time.sleep(0.2)
    res['video_time'].append(vt())
    page.screenshot(path=str(out/f'live-{a.mode}-2.png'))
    st = page.evaluate('() => window.streamStats')
    lat = st['latencies'][len(st['latencies']) // 4:]   # the first quarter: the connection settling
    res.update(mode=st['mode'], connected=st['connected'], frames=st['frames'], errors=st['errors'], clock_offset_ms=st['offset'],
               rtt_ms=st.get('rtt'), latency_ms=summary(lat), painted=st.get('painted', 0), estimate_ms=summary(st['estimates'][len(st['estimates']) // 4:]),
               latency_text=page.evaluate("() => document.getElementById('latency').textContent"), screenshots=[str(out/f'live-{a.mode}-{k}.png') for k in (1, 2)])
    if injected is not None:   # the first frame drawn after the fault that reached the screen
        later = [(shown, stamp) for shown, stamp in st['shown'] if stamp > injected % 2**32]
        res['recovery_s'] = (later[0][0] - injected) / 1000 if later else None
    res['health'] = httpx.get(f'{url}/stream/health').json()
    return res

def watch_playlist(page, url:str, a, out:Path)->dict:
    "Open the playlist page and watch it play; the clips listed, played and the video's time."
    page.goto(f'{url}/stream/playlist')
    page.wait_for_function('() => window.playlistStats && window.playlistStats.played.length > 0', timeout=20_000)
    t0 = page.evaluate("() => document.getElementById('clip').currentTime")
    time.sleep(a.seconds)
    res = page.evaluate("() => ({...window.playlistStats, time: document.getElementById('clip').currentTime, "
                        "items: [...document.querySelectorAll('#list li')].map(li => li.textContent)})")
    res['start_time'] = t0
    page.screenshot(path=str(out/'playlist.png')); res['screenshots'] = [str(out/'playlist.png')]
    return res

def summary(x:list)->dict|None:
    import numpy as np
    if not x: return None
    x = np.asarray(x, float)
    return dict(n=len(x), median=float(np.median(x)), p95=float(np.percentile(x, 95)), min=float(x.min()), max=float(x.max()))

@dataclass
class LiveViewBench:
    "The live view check's settings."
    registry: Annotated[str, 'registry folder (with active snake genomes) (required)'] = ''
    out: Annotated[str, 'folder for the screenshots (required)'] = ''
    page: Annotated[str, "the page watched: 'live' or 'playlist'"] = 'live'
    mode: Annotated[str, "the live page's stream: 'webrtc' or 'mjpeg'"] = 'webrtc'
    seconds: Annotated[float, 'how long to watch'] = 6.0
    inject_codec_at: Annotated[float, 'inject a codec error this many seconds in (0: none)'] = 0.0
    fps: Annotated[int, 'frames per second of the stream'] = 30
    stamp: Annotated[bool, "the server draws its clock into the frames (the page reads glass-to-glass latency from it); without, the page estimates its part"] = True

    def __post_init__(self):
        if self.page not in ('live', 'playlist'): raise ValueError(f"--page {self.page!r}: choose live or playlist")
        if self.mode not in ('webrtc', 'mjpeg'): raise ValueError(f"--mode {self.mode!r}: choose webrtc or mjpeg")

def main(argv=None):
    a = parse(LiveViewBench, doc=__doc__, argv=argv, required=('registry', 'out'))
    if os.environ.get('GENOME_LAB_NETNS') != '1':
        return in_private_network([sys.executable, os.path.abspath(__file__), *(sys.argv[1:] if argv is None else argv)]).returncode
    from playwright.sync_api import sync_playwright
    from genome_lab.web.server import create_app, serve_in_thread
    from genome_lab.broadcast.live import StreamConfig
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    app = create_app(a.registry, token=TOKEN)
    app.state.stream_config = StreamConfig(fps=a.fps, idle_seconds=3.0, stamp=a.stamp)   # the latency is read from the stamps
    chromium = shutil.which('chromium')
    if chromium is None: raise SystemExit("chromium is not installed: run tools/setup_chromium.sh")
    with serve_in_thread(app) as url, sync_playwright() as p:   # on exit the app's shutdown stops its broadcast and waits for its threads
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={'width': 1280, 'height': 820})
        res = (watch_live if a.page == 'live' else watch_playlist)(page, url, a, out)
        browser.close()
    print(json.dumps(res))
    return 0

if __name__ == '__main__': sys.exit(main())
