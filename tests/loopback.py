"""Loopback services for the tests: a static file server and headless Chromium (Debian's `chromium`, installed by
tools/setup_debian.sh) driven by Playwright (no browser download): open a page, evaluate JavaScript in it, wait for
a condition, take a screenshot. Ports and the app server come from `genome_lab.web.server` (`free_port`, `serve_in_thread`)."""
import contextlib, functools, http.server, os, shutil, threading
from pathlib import Path
import pytest

CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync']

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
    "One tab of Debian's headless Chromium under Playwright, with a fresh profile in `profile`; use as a context manager."
    def __init__(self, profile:Path, width:int=1280, height:int=900):
        self.profile, self.size = Path(profile), dict(width=width, height=height)

    def __enter__(self):
        from playwright.sync_api import sync_playwright
        self._pw = sync_playwright().start()
        self.context = self._pw.chromium.launch_persistent_context(self.profile, executable_path=chromium(), headless=True,
                                                                   args=CHROMIUM_FLAGS[1:], viewport=self.size)
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()
        self.errors = []   # the console's errors and the page's uncaught exceptions, as they come
        self.page.on('console', lambda m: self.errors.append(f"console: {m.text} ({m.location.get('url')} on {self.page.url})") if m.type == 'error' else None)
        self.page.on('pageerror', lambda e: self.errors.append(f'exception: {e}'))
        return self

    def __exit__(self, *exc):
        with contextlib.suppress(Exception): self.context.close()
        self._pw.stop()

    def js(self, expression:str): # the value, awaited when a promise
        "Evaluate the JavaScript `expression` in the page; a JavaScript exception raises Playwright's `Error`."
        return self.page.evaluate(expression)

    def wait(self, expression:str, timeout:float=30): # the first truthy value
        "Evaluate `expression` until it is truthy; raises Playwright's `TimeoutError` after `timeout` seconds."
        return self.page.wait_for_function(expression, timeout=timeout * 1000, polling=100).json_value()

    def goto(self, url:str, timeout:float=30):
        "Open `url` and wait until the document and its images have loaded."
        self.page.goto(url, wait_until='load', timeout=timeout * 1000)

    def screenshot(self, path:Path|None=None, element:str|None=None)->bytes: # PNG of the view, or of the element `element` evaluates to
        "Capture the page as PNG (written to `path` when given); `element`: a JavaScript expression for one element."
        target = self.page.evaluate_handle(element).as_element() if element else self.page
        return target.screenshot(path=path)

def screenshots(tmp_path)->Path: # `GENOME_LAB_SCREENSHOTS` if set (made), else the test's own folder
    d = Path(os.environ.get('GENOME_LAB_SCREENSHOTS') or tmp_path); d.mkdir(parents=True, exist_ok=True)
    return d
