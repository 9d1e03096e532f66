"""An asyncio event loop is machinery (``values/event_loops.py``): shown as one line, stored
without payload and left out of replay's comparison. Its selector, self-pipe sockets and thread
ident are other numbers in every process, and any traced frame holding the loop — or a queue
bound to it — diverged on replay."""

from __future__ import annotations

import asyncio
import textwrap

from snapstate_capture.options import ValueOptions
from snapstate_capture.values import capture_value
from tests.conftest import run_cli


def test_a_loop_is_one_line_without_payload():
    loop = asyncio.new_event_loop()
    try:
        captured = capture_value(loop, name="loop", options=ValueOptions())
    finally:
        loop.close()
    assert captured.payload is None
    assert captured.preview["machinery"] is True
    assert captured.preview["repr"] == (f"<{type(loop).__name__} running=False closed=False "
                                        "debug=False>")


def test_a_traced_program_holding_the_loop_and_a_bound_queue_replays(tmp_path):
    program = tmp_path / "bound_queue.py"
    program.write_text(textwrap.dedent("""
        import asyncio

        async def main():
            loop = asyncio.get_running_loop()
            queue = asyncio.Queue()

            async def consume():
                return await queue.get()     # binds the queue to the running loop

            async def produce():
                await asyncio.sleep(0)
                queue.put_nowait(1)
                return "sent"

            return await asyncio.gather(consume(), produce())

        print(asyncio.run(main()))
    """))
    path = tmp_path / "q.snap"
    recorded = run_cli("record", "--trace", "calls", "-o", str(path), str(program), cwd=tmp_path)
    assert recorded.returncode == 0 and "[1, 'sent']" in recorded.stdout, recorded.stderr
    replayed = run_cli("replay", str(path), cwd=tmp_path)
    assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr


def test_a_loop_class_of_the_program_is_captured_as_any_object():
    class CountingLoop(asyncio.SelectorEventLoop):
        def __init__(self):
            super().__init__()
            self.budget = 9

    loop = CountingLoop()
    try:
        captured = capture_value(loop, name="loop", options=ValueOptions())
    finally:
        loop.close()
    assert captured.preview.get("machinery") is not True
    assert "budget" in str(captured.preview)
