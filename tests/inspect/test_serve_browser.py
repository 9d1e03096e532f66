"""``snapstate serve`` in a real browser: Debian's headless Chromium (driven by Playwright, never
a downloaded browser) opens the one-time link, keys pressed in the page move the inspector, and
the text the page's terminal shows is read back from xterm.js's own buffer.

One browser start for the whole file. ``SNAPSTATE_SERVE_SCREENSHOT=PATH`` also saves a
screenshot of the page (docs/screenshots/serve.png is made that way).
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.conftest import ROOT

SAMPLE = ROOT / "sample_snapshots" / "research_agent.snap"
#: Chromium as root in a container: no sandbox, no GPU, nothing fetched from the network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: Before the page's scripts run: keep every xterm.js ``Terminal`` (the public API object,
#: recognised by the ``_core`` it assigns in its constructor) where the test can read it.
KEEP_TERMINALS = """
window.__terminals = [];
Object.defineProperty(Object.prototype, '_core', {configurable: true,
  set(value) {
    Object.defineProperty(this, '_core', {value, writable: true, configurable: true});
    if ('buffer' in this) window.__terminals.push(this);
  },
  get() { return undefined; }});
"""
#: The terminal's visible rows as text.
SCREEN_TEXT = """() => {
  const term = (window.__terminals || []).find(t => t.buffer && t.buffer.active);
  if (!term) return '';
  const rows = [];
  for (let y = 0; y < term.rows; y++) {
    const line = term.buffer.active.getLine(term.buffer.active.viewportY + y);
    rows.push(line ? line.translateToString(true) : '');
  }
  return rows.join('\\n');
}"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Debian's chromium is needed (.ci/run installs it: apt-get install chromium)"
    return found


@pytest.fixture
def server(isolated_user_config):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "serve", str(SAMPLE)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout],
                     daemon=True).start()
    try:
        first = lines.get(timeout=60)
        assert " at http://127.0.0.1:" in first, first
        yield proc, first.rsplit(" at ", 1)[1].strip()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_inspector_in_chromium_answers_keys_and_only_its_link_opens_it(server, tmp_path):
    proc, url = server
    base = url.split("/?", 1)[0]
    assert _status(base + "/") == 403  # without the token: nothing, not even the page
    assert _status(base + "/static/js/textual.js") == 403
    assert _status(base + "/?token=wrong") == 403
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=_chromium(), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 800})
        try:
            page = browser.new_page()
            page.add_init_script(KEEP_TERMINALS)
            page.goto(url)
            assert page.url == base + "/"  # the token is traded for a cookie, then dropped
            page.wait_for_function(f"() => ({SCREEN_TEXT})().includes('step 0 of 146')",
                                   timeout=90_000)
            first = page.evaluate(SCREEN_TEXT)
            assert "research_agent.snap" in first and "build_index" in first
            page.focus(".xterm-helper-textarea")
            page.keyboard.press(">")  # to the last step
            page.wait_for_function(f"() => ({SCREEN_TEXT})().includes('step 145 of 146')",
                                   timeout=90_000)
            page.keyboard.press("g")  # the dialog takes the digits once it is up (under
            page.wait_for_function(f"() => ({SCREEN_TEXT})().includes('Go to step')",
                                   timeout=90_000)  # load, keys sent before it were lost)
            for key in ["2", "6", "Enter"]:
                page.keyboard.press(key)
            page.wait_for_function(f"() => ({SCREEN_TEXT})().includes('step 26 of 146')",
                                   timeout=90_000)
            screen = page.evaluate(SCREEN_TEXT)
            assert "retrying" in screen and "cite" in screen
            if os.environ.get("SNAPSTATE_SERVE_SCREENSHOT"):
                page.screenshot(path=os.environ["SNAPSTATE_SERVE_SCREENSHOT"])
            cookie = next(c for c in browser.cookies() if c["name"].startswith("snapstate_"))
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
            session = f"{cookie['name']}={cookie['value']}"
        finally:
            browser.close()
    assert _status(url) == 403  # the link worked once; a second opener is refused
    assert _status(base + "/", {"Cookie": session}) == 200  # the browser's session still works
    assert _status(base + "/ws", {"Cookie": session, "Origin": "http://evil.example"}) == 403
    assert proc.poll() is None


def test_serve_refuses_a_file_that_is_no_timeline_in_one_line(tmp_path):
    from tests.conftest import run_cli

    bogus = tmp_path / "notes.snap"
    bogus.write_text("not a timeline")
    result = run_cli("serve", str(bogus))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert str(bogus) in result.stderr and "Traceback" not in result.stderr
