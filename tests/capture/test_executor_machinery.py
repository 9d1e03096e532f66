"""A ``concurrent.futures`` pool is machinery (``values/executors.py``): one line, no
payload, left out of replay's comparison. How many workers it started is timing, and a traced
frame holding the pool diverged on replay when the replay's workers came back sooner."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from snapstate_capture.options import ValueOptions
from snapstate_capture.values import capture_value
from snapstate_capture.values.identity import identity


def test_a_pool_is_one_line_without_payload_whatever_its_workers():
    busy, idle = ThreadPoolExecutor(max_workers=3), ThreadPoolExecutor(max_workers=3)
    try:
        list(busy.map(lambda k: k, range(6)))  # starts workers; ``idle`` has none
        captured = capture_value(busy, name="pool", options=ValueOptions())
        assert captured.payload is None and captured.preview["machinery"] is True
        assert captured.preview["repr"] == "<ThreadPoolExecutor max_workers=3 shutdown=False>"
        assert identity(busy) == identity(idle) is not None
    finally:
        busy.shutdown()
        idle.shutdown()
    processes = ProcessPoolExecutor(max_workers=2)
    processes.shutdown()
    assert capture_value(processes, name="pool", options=ValueOptions()).preview["repr"] == (
        "<ProcessPoolExecutor max_workers=2 shutdown=True>")


def test_a_pool_class_of_the_program_is_captured_as_any_object():
    class BudgetPool(ThreadPoolExecutor):
        def __init__(self):
            super().__init__(max_workers=1)
            self.budget = 9

    pool = BudgetPool()
    try:
        captured = capture_value(pool, name="pool", options=ValueOptions())
    finally:
        pool.shutdown()
    assert captured.preview.get("machinery") is not True
    assert "budget" in str(captured.preview)
