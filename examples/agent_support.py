"""What the three framework agents share: a local weather service, a notes folder, a counter.

``start_weather_service()`` starts an HTTP server on 127.0.0.1 (a free port) in a daemon
thread; ``GET /weather?city=NAME`` answers a small JSON forecast, the same for every run, and
``get_weather(city)`` asks it. The port is kept here, out of the agent's variables: it differs
from run to run, and a replay (which starts the service again) must not see a difference. ``read_notes(name)`` reads a file of ``examples/notes/``. ``count(kind)`` appends
``kind`` to the file named by ``$SNAPSTATE_EXAMPLE_COUNTS`` (when set): the tests count the
model and tool calls that really ran, and replay must run none. ``$SNAPSTATE_EXAMPLE_SLOW``
(seconds) makes the weather service that slow to answer (the crash tests kill an agent while
its HTTP tool waits).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

NOTES = Path(__file__).resolve().parent / "notes"
FORECASTS = {"harbour city": {"city": "harbour city", "high_c": 24, "rain_mm": 3},
             "riverside": {"city": "riverside", "high_c": 27, "rain_mm": 0}}


class _Weather(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        time.sleep(float(os.environ.get("SNAPSTATE_EXAMPLE_SLOW") or 0))
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        city = (query.get("city") or [""])[0].lower()
        body = json.dumps(FORECASTS.get(city, {"city": city, "error": "unknown city"}))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # quiet: the agent's output is what the run prints


_service: dict[str, str] = {}


def start_weather_service() -> None:
    """Start the local weather service (once per process)."""
    if _service:
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Weather)
    threading.Thread(target=server.serve_forever, name="weather-service", daemon=True).start()
    _service["url"] = f"http://127.0.0.1:{server.server_address[1]}"


def count(kind: str) -> None:
    """Note one real model or tool call in ``$SNAPSTATE_EXAMPLE_COUNTS`` (if set)."""
    path = os.environ.get("SNAPSTATE_EXAMPLE_COUNTS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(kind + "\n")


def read_notes(name: str) -> str:
    """The text of ``examples/notes/NAME`` (a file tool)."""
    count("tool read_notes")
    return (NOTES / Path(name).name).read_text(encoding="utf-8")


def get_weather(city: str) -> str:
    """The forecast for ``city`` from the local weather service (an HTTP tool)."""
    count("tool get_weather")
    url = f"{_service['url']}/weather?city={urllib.parse.quote(city)}"
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - 127.0.0.1 only
        return response.read().decode()
