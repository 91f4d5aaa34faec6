"""Services on loopback for the tests: a free port, a static file server, and headless Chromium (Debian's `chromium`,
installed by tools/setup_debian.sh) driven over the Chrome DevTools Protocol with `websockets`: open a page,
evaluate JavaScript in it, wait for a condition, take a screenshot."""
import base64, contextlib, functools, http.server, itertools, json, shutil, socket, subprocess, threading, time, urllib.request
from pathlib import Path
import pytest
from websockets.sync.client import connect

CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync']

def free_port()->int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

@contextlib.contextmanager
def serve_folder(folder:Path):
    "A static file server for `folder` on loopback; yields its base URL."
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a): pass
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try: yield f'http://127.0.0.1:{srv.server_port}'
    finally: srv.shutdown(); srv.server_close()

def chromium()->str: # path of the chromium binary
    path = shutil.which('chromium')
    if path is None: pytest.fail("chromium is not installed: run tools/setup_debian.sh chromium:chromium (tools/test.sh does)")
    return path

class Page:
    "One tab of a headless Chromium started with a fresh profile in `profile`; use as a context manager."
    def __init__(self, profile:Path, width:int=1280, height:int=900):
        self.profile, self.size, self.ids = Path(profile), (width, height), itertools.count(1)

    def __enter__(self):
        self.proc = subprocess.Popen([chromium(), *CHROMIUM_FLAGS, f'--user-data-dir={self.profile}', '--remote-debugging-port=0',
                                      f'--window-size={self.size[0]},{self.size[1]}', 'about:blank'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file, t0 = self.profile/'DevToolsActivePort', time.time()
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            if self.proc.poll() is not None or time.time() - t0 > 60: raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        targets = json.load(urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=10))
        self.ws = connect(next(t for t in targets if t['type'] == 'page')['webSocketDebuggerUrl'], max_size=2**27).__enter__()
        self.send('Page.enable'); self.send('Runtime.enable')
        return self

    def __exit__(self, *exc):
        with contextlib.suppress(OSError, RuntimeError): self.ws.__exit__(None, None, None)
        self.proc.terminate()
        try: self.proc.wait(10)
        except subprocess.TimeoutExpired: self.proc.kill(); self.proc.wait()

    def send(self, method:str, **params)->dict: # the command's result
        "One DevTools command; events that arrive before its answer are dropped."
        i = next(self.ids)
        self.ws.send(json.dumps(dict(id=i, method=method, params=params)))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get('id') == i:
                if 'error' in msg: raise RuntimeError(f"{method}: {msg['error']}")
                return msg['result']

    def js(self, expression:str): # the value, awaited when a promise
        "Evaluate `expression` in the page; a JavaScript exception raises `RuntimeError`."
        r = self.send('Runtime.evaluate', expression=expression, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in r: raise RuntimeError(f"{expression!r}: {r['exceptionDetails']}")
        return r['result'].get('value')

    def wait(self, expression:str, timeout:float=30): # the first truthy value
        "Evaluate `expression` until it is truthy; raises `TimeoutError` after `timeout` seconds."
        t0 = time.time()
        while not (v := self.js(expression)):
            if time.time() - t0 > timeout: raise TimeoutError(f"still false after {timeout} s: {expression}")
            time.sleep(0.1)
        return v

    def goto(self, url:str, timeout:float=30):
        "Open `url` and wait until the document and its images have loaded."
        self.send('Page.navigate', url=url)
        self.wait(f"location.href.startsWith({json.dumps(url.split('#')[0].split('?')[0])}) && document.readyState === 'complete'", timeout)

    def screenshot(self, path:Path|None=None, element:str|None=None)->bytes: # PNG of the view, or of the element `element` evaluates to
        "Capture the page as PNG (written to `path` when given); `element`: a JavaScript expression for one element."
        clip = {}
        if element:
            box = self.js(f"(e => {{ const r = e.getBoundingClientRect(); "   # the clip is in document coordinates
                          f"return [r.x + scrollX, r.y + scrollY, r.width, r.height]; }})({element})")
            clip = dict(clip=dict(zip(('x', 'y', 'width', 'height'), box), scale=1))
        png = base64.b64decode(self.send('Page.captureScreenshot', format='png', **clip)['data'])
        if path: Path(path).write_bytes(png)
        return png
