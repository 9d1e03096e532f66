"""An agent object holding a real HTTP client replays (issue 19's clients as machinery): the
client passed to an effect is compared by class, not by its connection pool, which the
recording's real calls opened and the replay's served ones did not."""

from __future__ import annotations

import http.server
import threading

import pytest

from tests.conftest import PROGRAMS, run_python
from tests.e2e.replay_helpers import replay_json


class _Answers(http.server.BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server name
        _Answers.asked.append(self.path)
        body = f"answer{len(_Answers.asked)}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server(monkeypatch):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AGENT_URL", f"http://127.0.0.1:{httpd.server_port}")
    _Answers.asked.clear()
    yield _Answers.asked
    httpd.shutdown()
    httpd.server_close()


def test_an_agent_holding_an_http_client_replays_without_calling_the_server(tmp_path, server):
    path = tmp_path / "agent.snap"
    recorded = run_python(str(PROGRAMS / "http_client_agent.py"), str(path), cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.split() == ["answer1", "answer2", "answer3"]
    assert server == ["/weather", "/news", "/weather"]
    result, data = replay_json(path)
    assert result.returncode == 0, result.stderr + result.stdout
    assert data["status"] == "ok", data
    assert server == ["/weather", "/news", "/weather"]  # every answer served, none asked again
