"""Steps made while asyncio itself is being imported (its module bodies traced, e.g.
``--include '*/asyncio/*'``) belong to the importing thread's lineage: asyncio is in
``sys.modules`` then without ``current_task`` yet, and those steps were recorded under the
lineage ``?``."""

from __future__ import annotations

import sys
import textwrap
import types

import snapstate_capture as snap
from snapstate_capture.capture import lineage
from tests.conftest import run_cli


def test_a_half_imported_asyncio_is_no_task(monkeypatch):
    monkeypatch.delitem(sys.modules, "asyncio")
    threads = lineage.current()  # this thread's lineage, no asyncio at all
    assert threads != "?"
    monkeypatch.setitem(sys.modules, "asyncio", types.ModuleType("asyncio"))  # mid-import
    assert lineage.current() == threads
    assert lineage.current_and_task_name() == (None, threads)


def test_asyncios_own_import_traced_has_the_main_lineage(tmp_path):
    program = tmp_path / "tasks.py"
    program.write_text(textwrap.dedent("""
        import asyncio

        async def double(n):
            await asyncio.sleep(0)
            return n * 2

        print(asyncio.run(double(3)))
    """))
    path = tmp_path / "tasks.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/asyncio/*", "--include",
                   "*/tasks.py", "-o", str(path), str(program), cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "6", done.stderr
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
    imports = [s for s in steps if s.function == "<module>" and "asyncio" in s.filename]
    assert imports and {s.lineage for s in imports} == {"main"}
    assert "?" not in {s.lineage for s in steps}
    assert any(s.function == "double" and s.lineage.startswith("main/t") for s in steps)
