"""``@snap.effect`` records each call in the run's effect journal (an ``effect`` step plus a
journal row written together), keyed by call site and per-task ordinal with an argument digest;
raised exceptions are recorded and re-raised; async effects, nesting and no-op use."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

import snapstate_capture as snap
from snapstate_capture.capture.effects import arguments_digest


def journal(path):
    """The last run's journal rows and steps (the timeline stays open for loading values)."""
    timeline = snap.open_timeline(path)
    run = timeline.runs[-1]
    rows = timeline.engine.query(
        "SELECT seq, step, site, task, ordinal, name, args_hash, outcome, value"
        " FROM effects WHERE run_id=? ORDER BY seq", (run.id,))
    steps = list(run.steps)
    return [dict(zip(("seq", "step", "site", "task", "ordinal", "name", "args_hash",
                      "outcome", "value"), row)) for row in rows], steps


def test_sync_effect_is_journaled_with_site_ordinal_and_digest(snap_path):
    calls = []

    @snap.effect(name="llm")
    def llm(prompt, temperature=0.0):
        calls.append(prompt)
        return {"reply": prompt.upper()}

    with snap.record(snap_path):
        for word in ("a", "b"):
            reply = llm(word, temperature=0.5)
        assert reply == {"reply": "B"}
    assert calls == ["a", "b"]
    rows, steps = journal(snap_path)
    assert [r["seq"] for r in rows] == [0, 1]
    assert [r["ordinal"] for r in rows] == [0, 1]
    assert rows[0]["site"] == rows[1]["site"]
    function, where = rows[0]["site"].rsplit(" ", 1)
    assert function.endswith("test_sync_effect_is_journaled_with_site_ordinal_and_digest")
    assert where.startswith(__file__ + ":")
    assert rows[0]["task"] == "main" and rows[0]["outcome"] == "return"  # the run's lineage
    assert rows[0]["args_hash"] == arguments_digest({"prompt": "a", "temperature": 0.5})
    assert rows[0]["args_hash"] != rows[1]["args_hash"]
    for row in rows:
        step = steps[row["step"]]
        assert (step.kind, step.label) == ("effect", "llm")
        assert step.extra["result"].load(trust=True) == {"reply": ("A", "B")[row["seq"]]}
        assert "prompt" in step.extra["args"].repr and not step.extra["args"].has_payload
        value = json.loads(row["value"])
        assert value["b"] == step.extra["result"].payload_key
        assert value["a"] == step.extra["args"].preview_key


def test_raised_exception_is_recorded_and_reraised(snap_path):
    @snap.effect
    def fail(n):
        raise KeyError(f"missing {n}")

    with snap.record(snap_path):
        with pytest.raises(KeyError, match="missing 3"):
            fail(3)
    rows, steps = journal(snap_path)
    assert rows[0]["outcome"] == "raise" and rows[0]["name"].endswith("fail")
    step = steps[rows[0]["step"]]
    assert isinstance(step.extra["exception"].load(trust=True), KeyError)


def test_self_is_not_part_of_the_arguments(snap_path):
    class Client:
        def __init__(self):
            self.socket = object()  # unpicklable: must not matter

        @snap.effect(name="client.get")
        def get(self, url):
            return len(url)

    with snap.record(snap_path):
        Client().get("http://x")
    rows, _ = journal(snap_path)
    assert rows[0]["args_hash"] == arguments_digest({"url": "http://x"})


def test_async_effects_count_per_task(snap_path):
    @snap.effect(name="tool")
    async def tool(query):
        await asyncio.sleep(0)
        return query * 2

    async def worker(name):
        return [await tool(f"{name}{i}") for i in range(2)]

    async def main():
        return await asyncio.gather(asyncio.create_task(worker("a"), name="wa"),
                                    asyncio.create_task(worker("b"), name="wb"))

    with snap.record(snap_path):
        assert asyncio.run(main()) == [["a0a0", "a1a1"], ["b0b0", "b1b1"]]
    rows, _ = journal(snap_path)
    by_task = {}
    for row in rows:
        by_task.setdefault(row["task"], []).append(row["ordinal"])
    # keyed by lineage: asyncio.run's task is the run's first, then the two it created
    assert by_task == {"main/t0/t0": [0, 1], "main/t0/t1": [0, 1]}


def test_nested_effects_are_part_of_the_outer_one(snap_path):
    @snap.effect(name="inner")
    def inner():
        return 1

    @snap.effect(name="outer")
    def outer():
        return inner() + 1

    with snap.record(snap_path):
        assert outer() == 2
    rows, _ = journal(snap_path)
    assert [r["name"] for r in rows] == ["outer"]


def test_outside_record_an_effect_just_runs(snap_path):
    @snap.effect
    def add(a, b):
        return a + b

    assert add(2, 3) == 5
    assert snap.effects.uuid4().version == 4
    assert not snap_path.exists()


def test_helpers_record_clock_randomness_uuid_and_input(snap_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("typed\n"))
    with snap.record(snap_path):
        now = snap.effects.time()
        draw = snap.effects.randint(1, 6)
        ident = snap.effects.uuid4()
        answer = snap.effects.input("? ")
    rows, steps = journal(snap_path)
    assert [r["name"] for r in rows] == ["time.time", "random.randint", "uuid.uuid4", "input"]
    results = [steps[r["step"]].extra["result"].load(trust=True) for r in rows]
    assert results == [now, draw, ident, answer] and answer == "typed"


def test_effects_in_threads_are_keyed_by_lineage_not_name(snap_path):
    import threading

    @snap.effect(name="fetch")
    def fetch(n):
        return n * n

    def worker():
        for n in range(3):
            fetch(n)

    with snap.record(snap_path):
        threads = [threading.Thread(target=worker, name=f"w{k}") for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    rows, _ = journal(snap_path)
    by_task = {}
    for row in rows:
        by_task.setdefault(row["task"], []).append(row["ordinal"])
    assert by_task == {"main/h0": [0, 1, 2], "main/h1": [0, 1, 2]}  # names never count
    assert sorted(r["seq"] for r in rows) == list(range(6))


def test_an_effect_submitted_to_a_thread_pool_is_sited_where_it_was_submitted(snap_path):
    from concurrent.futures import ThreadPoolExecutor

    @snap.effect(name="fetch")
    def fetch(n):
        return n * n

    def run_tools():
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(fetch, range(2)))  # a pool thread: no frame of ours

    with snap.record(snap_path):
        assert run_tools() == [0, 1]
    _, steps = journal(snap_path)
    effects = [s for s in steps if s.kind == "effect"]
    assert len(effects) == 2 and all(s.thread.startswith("ThreadPoolExecutor") for s in effects)
    assert [[f.function.rsplit(".", 1)[-1] for f in s.frames][-2:] for s in effects] == [
        ["test_an_effect_submitted_to_a_thread_pool_is_sited_where_it_was_submitted",
         "run_tools"]] * 2


def test_anyio_worker_thread_calls_are_pool_calls_of_the_submitting_task(snap_path):
    """AnyIO keeps its worker threads and reuses an idle one for the next call: a call's
    lineage is the submitting task's pool call (``p<n>``, in submission order), never the
    worker thread's — which was named after whichever task started it."""
    anyio = pytest.importorskip("anyio")
    import threading

    @snap.effect(name="fetch")
    def fetch(n):
        return n * n

    workers = set()

    def tool(n):
        workers.add(threading.get_ident())
        return fetch(n)

    async def agent(first):
        return [await anyio.to_thread.run_sync(tool, n) for n in (first, first + 1)]

    async def main():
        one = await agent(1)  # starts the worker thread
        two = await asyncio.create_task(agent(5))  # another task: the same idle worker
        return one + two

    with snap.record(snap_path):
        assert asyncio.run(main()) == [1, 4, 25, 36]
    rows, _ = journal(snap_path)
    assert len(workers) == 1  # one thread ran every call
    assert [row["task"] for row in rows] == [
        "main/t0/p0", "main/t0/p1", "main/t0/t0/p0", "main/t0/t0/p1"]
