"""``snapstate replay FILE --to N --debugpy``: a real replay child waits for a DAP client; a small
client of our own attaches over the socket (as VS Code does), finds the live frame stopped at
step N and reads its locals, which must be the recorded ones; continuing finishes the replay."""

from __future__ import annotations

import json
import os
import shutil
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import snapstate_capture as snap
from tests.conftest import ROOT, run_python
from snapstate_inspect.web import free_port

PROGRAM = textwrap.dedent('''
    import sys
    import snapstate_capture as snap

    @snap.effect(name="llm")
    def ask(prompt):
        return {"prompt": prompt, "reply": prompt[::-1]}

    def agent(goal):
        notes = []
        total = 0
        for turn in range(4):
            answer = ask(f"{goal} #{turn}")
            notes.append(answer["reply"])
            total += len(answer["reply"])
            snap.checkpoint("turn", turn=turn)
        return total

    with snap.record(sys.argv[1], name="dap"):
        print("total", agent("plan a trip"))
''')


class DapClient:
    """The Debug Adapter Protocol over a socket: ``Content-Length`` framed JSON messages."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=60)
        self.seq = 0
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.responses: dict[int, dict[str, Any]] = {}
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.sock.makefile("rb")
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            message = json.loads(stream.read(length))
            if message["type"] == "event":
                self.events.put(message)
            elif message["type"] == "response":
                with self._arrived:
                    self.responses[message["request_seq"]] = message
                    self._arrived.notify_all()

    def send(self, command: str, **arguments: Any) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self.seq

    def response(self, seq: int, timeout: float = 60) -> dict[str, Any]:
        with self._arrived:
            assert self._arrived.wait_for(lambda: seq in self.responses, timeout), seq
            reply = self.responses[seq]
        assert reply["success"], reply
        return reply.get("body") or {}

    def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        return self.response(self.send(command, **arguments))

    def event(self, name: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            if message["event"] == name:
                return message.get("body") or {}


class Output:
    """A process's stdout lines, read as they come (``wait_for``) and at the end (``text``)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self._reader = threading.Thread(
            target=lambda: [self.lines.put(line) for line in proc.stdout], daemon=True)
        self._reader.start()

    def wait_for(self, needle: str, timeout: float = 90) -> list[str]:
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in self.seen):
            self.seen.append(self.lines.get(timeout=max(deadline - time.monotonic(), 0.01)))
        return self.seen

    def text(self) -> str:
        self._reader.join(timeout=30)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return "".join(self.seen)


def attach(port: int) -> tuple[DapClient, int, dict[str, Any]]:
    """Attach as an IDE does to the replay child's debugpy on ``port``; (client, the stopped
    thread's id, its top stack frame)."""
    client = DapClient(("127.0.0.1", port))
    client.request("initialize", clientID="snapstate-test", adapterID="debugpy",
                   linesStartAt1=True, columnsStartAt1=True, pathFormat="path")
    attached = client.send("attach", justMyCode=False)
    client.event("initialized")
    client.request("configurationDone")
    client.response(attached)
    thread_id = client.event("stopped")["threadId"]
    top = client.request("stackTrace", threadId=thread_id, levels=5)["stackFrames"][0]
    return client, thread_id, top


def frame_locals(client: DapClient, frame: dict[str, Any]) -> dict[str, str]:
    """The locals the IDE shows for ``frame``: name -> displayed value."""
    scopes = client.request("scopes", frameId=frame["id"])["scopes"]
    local = next(s for s in scopes if s["name"].lower().startswith("locals"))
    return {v["name"]: v["value"] for v in client.request(
        "variables", variablesReference=local["variablesReference"])["variables"]}


def test_an_ide_attaches_at_step_n_and_sees_the_recorded_locals(tmp_path: Path):
    script, path = tmp_path / "agent.py", tmp_path / "agent.snap"
    script.write_text(PROGRAM)
    assert run_python(str(script), str(path), cwd=tmp_path).returncode == 0
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        stop = next(s for s in steps if s.label == "turn" and s.extra["turn"].repr == "2")
        recorded = {name: value.repr for name, value in stop.frames[-1].locals.items()}
        where = (stop.frames[-1].function, stop.frames[-1].lineno, stop.index, len(steps))
    assert {"goal", "notes", "total", "turn", "answer"} <= set(recorded)
    port = free_port("127.0.0.1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "snapstate_inspect", "replay", str(path), "--to", str(where[2]),
         "--debugpy", "--listen", f"127.0.0.1:{port}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        output = Output(proc)
        banner = output.wait_for("waiting for a debugger")
        assert any(f"reached step {where[2]}" in line for line in banner), banner
        client, thread_id, top = attach(port)
        assert (top["name"], top["line"]) == where[:2]
        assert Path(top["source"]["path"]).name == "agent.py"
        shown = frame_locals(client, top)
        assert {name: shown.get(name) for name in recorded} == recorded
        client.request("next", threadId=thread_id)  # stepping works from the stop on
        client.event("stopped")
        moved = client.request("stackTrace", threadId=thread_id, levels=1)["stackFrames"][0]
        assert moved["name"] == "agent" and moved["line"] == where[1] - 4  # the loop's head
        client.request("continue", threadId=thread_id)
        client.send("disconnect")
        proc.wait(timeout=90)
        out, err = output.text(), proc.stderr.read()
    finally:  # the replay child and debugpy's adapter too, whatever happened
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert proc.returncode == 0, err
    assert f"replayed {where[3]} steps, no divergence" in out
    assert "PYDEV DEBUGGER WARNING" not in err  # the replay's own settrace calls are on purpose


def test_listen_is_checked_before_anything_runs(tmp_path: Path):
    script, path = tmp_path / "agent.py", tmp_path / "agent.snap"
    script.write_text(PROGRAM)
    assert run_python(str(script), str(path), cwd=tmp_path).returncode == 0
    from tests.conftest import run_cli

    bad = run_cli("replay", str(path), "--to", "1", "--debugpy", "--listen", "127.0.0.1:http")
    assert bad.returncode == 2 and "--listen 127.0.0.1:http: expected HOST:PORT" in bad.stderr
    alone = run_cli("replay", str(path), "--to", "1", "--listen", "127.0.0.1:5678")
    assert alone.returncode == 2 and "--listen goes with --debugpy" in alone.stderr
    assert "Traceback" not in bad.stderr + alone.stderr


def test_an_ide_attaches_at_a_call_step_of_a_traced_run(tmp_path: Path):
    """A run recorded with ``snapstate record --trace lines`` (a program with no snapstate code
    but an effect): the IDE sees the live frame entering call step N, with its recorded
    arguments; continuing lets the program finish."""
    from tests.conftest import PROGRAMS, run_cli

    program = Path(shutil.copy(PROGRAMS / "traced_agent.py", tmp_path / "agent.py"))
    path, side = tmp_path / "traced.snap", tmp_path / "side.txt"
    done = run_cli("record", "-o", str(path), "--trace", "lines", str(program), str(side),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        stop = next(s for s in timeline.runs[-1].steps if s.kind == "call"
                    and s.function == "step" and s.frames[-1].locals["i"].repr == "2")
        recorded = {name: value.repr for name, value in stop.frames[-1].locals.items()}
    assert set(recorded) == {"i", "total"}
    port = free_port("127.0.0.1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "snapstate_inspect", "replay", str(path), "--to", str(stop.index),
         "--debugpy", "--listen", f"127.0.0.1:{port}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        output = Output(proc)
        banner = output.wait_for("waiting for a debugger")
        assert any(f"reached step {stop.index} (call in step" in line for line in banner)
        client, thread_id, top = attach(port)
        assert top["name"] == "step" and Path(top["source"]["path"]).name == "agent.py"
        shown = frame_locals(client, top)
        assert {name: shown.get(name) for name in recorded} == recorded
        client.request("continue", threadId=thread_id)
        client.send("disconnect")
        proc.wait(timeout=90)
        out, err = output.text(), proc.stderr.read()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert proc.returncode == 0, err
    assert f"replayed {stop.index + 1} steps (0-{stop.index}), no divergence" in out
