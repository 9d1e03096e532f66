"""Write a large synthetic timeline file fast: ``python bench/make_big_timeline.py OUT [STEPS]``.

For the inspector benchmark (issue 4, point 6): a 1,000,000-step run is far too slow to record
through ``snapstate_capture.record`` (each step captures a real stack), so this script builds the
same file format in bulk: the file, schema and run come from ``TimelineWriter``; blobs (source,
frame records, value previews and payloads) are made with the capture side's own value code; the
step rows are inserted with ``executemany`` in large transactions and chained with the real hash
chain, so ``verify`` would accept the file.

The run looks like a small agent loop: ``main`` → ``plan`` → ``call_tool`` frames, a checkpoint
per stage, an exception every 10,000 steps, and in main's frame for the first loop (steps 0-7) a 10 MB string, a 1,000,000-element
list and a hand-made preview with 200,000 children (a hostile file must not freeze the UI).
Prints the time taken. Not committed output: the file is made on demand by bench_inspector.py.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from snapstate_capture.store.hashing import GENESIS, canonical_json, chain_hash, content_hash
from snapstate_capture.options import ValueOptions  # noqa: E402
from snapstate_capture.store import blobs  # noqa: E402
from snapstate_capture.store import sealing  # noqa: E402
from snapstate_capture.store.step_record import chain_fields  # noqa: E402
from snapstate_capture.store.writer import TimelineWriter  # noqa: E402
from snapstate_capture.values import capture_value  # noqa: E402

SOURCE = '''"""A made-up agent loop (the source saved in the benchmark timeline)."""
import snapstate_capture as snap


def call_tool(tool, args):
    result = {"tool": tool, "ok": True, "value": len(args)}
    snap.checkpoint("tool done", result=result)
    return result


def plan(goal, attempt):
    steps = [goal + " step " + str(n) for n in range(3)]
    snap.checkpoint("planned")
    return call_tool("search", {"q": steps[0]})


def main():
    memory = []
    config = {"model": "small", "retries": 3}
    for i in range(100000):
        snap.checkpoint("loop", i=i)
        reply = plan("answer question " + str(i % 97), i % 3)
        memory.append(reply)
    return memory
'''
FILENAME = "/bench/agent_loop.py"
VARIANTS = 997  # distinct frame records per function (a prime, so the combinations vary)


class BlobSink:
    """Collects blobs (hex key -> raw bytes) to insert once."""

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}

    def add(self, data: bytes) -> str:
        key = content_hash(data).hex()
        self.items[key] = data
        return key

    def value(self, obj: object, name: str, options: ValueOptions) -> dict:
        captured = capture_value(obj, name=name, options=options)
        ref = {"p": self.add(canonical_json(captured.preview))}
        if captured.payload is not None:
            ref["b"] = self.add(captured.payload)
            ref["s"] = captured.serializer
        return ref

    def frame(self, function: str, lineno: int, local_refs: list, source_key: str) -> str:
        record = {"function": function, "filename": FILENAME, "lineno": lineno,
                  "code": content_hash(function.encode()).hex(), "source": source_key,
                  "locals": local_refs}
        return self.add(canonical_json(record))


def build_frames(sink: BlobSink) -> dict[str, list[str]]:
    """Frame-record keys per function, ``VARIANTS`` of each (plus the big-value main frame)."""
    opts = ValueOptions()
    source = sink.add(SOURCE.encode())
    config = sink.value({"model": "small", "retries": 3}, "config", opts)
    frames: dict[str, list[str]] = {"main": [], "plan": [], "call_tool": [], "big": []}
    for v in range(VARIANTS):
        memory = sink.value([{"tool": "search", "ok": True, "value": 1}] * (v % 7), "memory", opts)
        frames["main"].append(sink.frame("main", 21, [
            ["memory", memory], ["config", config], ["i", sink.value(v, "i", opts)]], source))
        goal = f"answer question {v % 97}"
        frames["plan"].append(sink.frame("plan", 14, [
            ["goal", sink.value(goal, "goal", opts)], ["attempt", sink.value(v % 3, "attempt", opts)],
            ["steps", sink.value([f"{goal} step {n}" for n in range(3)], "steps", opts)]], source))
        frames["call_tool"].append(sink.frame("call_tool", 7, [
            ["tool", sink.value("search", "tool", opts)],
            ["args", sink.value({"q": f"{goal} step 0"}, "args", opts)],
            ["result", sink.value({"tool": "search", "ok": True, "value": v}, "result", opts)]],
            source))
    hostile = {"type": "builtins.list", "repr": "[" + "7, " * 300_000 + "…]", "len": 200_000,
               "children": [[f"[{n}]", {"type": "builtins.int", "repr": str(n)}]
                            for n in range(200_000)]}
    frames["big"].append(sink.frame("main", 21, [
        ["blob", sink.value("x" * 10_000_000, "blob", opts)],
        ["numbers", sink.value(list(range(1_000_000)), "numbers", opts)],
        ["hostile", {"p": sink.add(canonical_json(hostile))}],
        ["config", config], ["i", sink.value(0, "i", opts)]], source))
    return frames


#: One loop iteration: (kind, label, function, lineno, depth), repeated.
PATTERN = (("checkpoint", "loop", "main", 21, 1),
           ("call", "plan", "plan", 12, 2),
           ("checkpoint", "planned", "plan", 14, 2),
           ("call", "call_tool", "call_tool", 6, 3),
           ("checkpoint", "tool done", "call_tool", 7, 3),
           ("return", "call_tool", "call_tool", 8, 3),
           ("return", "plan", "plan", 15, 2),
           ("line", None, "main", 23, 1))


def make(path: Path, count: int) -> float:
    """Write a run of ``count`` steps into the new file ``path``; return seconds taken."""
    started = time.perf_counter()
    if path.exists():
        path.unlink()
    writer = TimelineWriter(path)
    run_id = writer.begin_run(name="big-agent", entry={"kind": "script", "path": FILENAME},
                              env={"python": sys.version.split()[0]})
    sink = BlobSink()
    frames = build_frames(sink)
    conn = writer.engine.connection  # bench-only bulk load: the file's connection, one transaction
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("BEGIN")
    conn.executemany("INSERT OR IGNORE INTO blobs (hash, codec, data, size) VALUES (?,?,?,?)",
                     ((*blobs.encode(data), len(data)) for data in sink.items.values()))
    t0 = 1_700_000_000.0
    previous = GENESIS
    rows = []
    period = len(PATTERN)
    for index in range(count):
        kind, label, function, lineno, depth = PATTERN[index % period]
        loop = index // period
        v = loop % VARIANTS
        stack = [frames["big"][0] if loop == 0 else frames["main"][v]]
        if depth >= 2:
            stack.append(frames["plan"][v])
        if depth >= 3:
            stack.append(frames["call_tool"][v])
        if index % 10_000 == 9_999:
            kind, label = "exception", "TimeoutError"
        wall, mono = t0 + index * 0.01, index * 0.01
        frames_json = json.dumps(stack)
        n_changed = 1 if index % period == 0 else (3 if kind == "call" else 0)
        previous = chain_hash(previous, chain_fields(
            kind, label, wall, mono, "MainThread", None, stack, None, None, function=function,
            filename=FILENAME, lineno=lineno, depth=depth, n_changed=n_changed))
        rows.append((run_id, index, kind, label, wall, mono, "MainThread", None, function,
                     FILENAME, lineno, depth, frames_json, None, None, n_changed, previous))
        if len(rows) == 50_000:
            _insert(conn, rows)
            rows.clear()
    _insert(conn, rows)
    ended = t0 + count * 0.01
    state = writer._states[run_id].with_steps(count, previous).with_end(
        status="finished", ended=ended, error=None)  # sealed as the writer would seal it
    conn.execute("UPDATE runs SET step_count=?, chain_head=?, status='finished', ended=?,"
                 " seal=? WHERE id=?", (count, previous, ended, sealing.seal_of(state), run_id))
    conn.execute("COMMIT")
    writer.close()
    return time.perf_counter() - started


def _insert(conn, rows: list) -> None:
    conn.executemany(
        "INSERT INTO steps (run_id, idx, kind, label, wall, mono, thread, task, function,"
        " filename, lineno, depth, frames, extra, errors, n_changed, hash)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.splitlines()[0])
        return 2
    count = int(argv[1]) if len(argv) > 1 else 1_000_000
    seconds = make(Path(argv[0]), count)
    size = os.path.getsize(argv[0]) / 1e6
    print(f"wrote {count:,} steps to {argv[0]} in {seconds:.1f} s ({size:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
