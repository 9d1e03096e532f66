"""A replay child starts the program with the traced modules the recording had already imported
(``entry["preloaded"]``) and without imports of its own the recording lacked: a traced module's
body runs, traced, on both sides or on neither. ``snapstate record`` imports argparse before
the program and a replay child imported asyncio, so a program traced into either diverged at
step 0 ("expected ArgumentParser.__init__, the program is in <module>")."""

from __future__ import annotations

import textwrap

import pytest

import snapstate_capture as snap
from tests.conftest import run_cli

PROGRAMS = {
    "argparse": ("*/argparse.py", """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--n", type=int, default=3)
        print(parser.parse_args([]).n)
    """),
    "asyncio": ("*/asyncio/runners.py", """
        import asyncio

        async def main():
            await asyncio.sleep(0)
            return 7

        print(asyncio.run(main()))
    """),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_traced_into_a_stdlib_module_replays(tmp_path, name):
    include, source = PROGRAMS[name]
    program = tmp_path / f"uses_{name}.py"
    program.write_text(textwrap.dedent(source))
    path = tmp_path / "run.snap"
    recorded = run_cli("record", "--trace", "calls", "--include", include, "-o", str(path),
                       str(program), cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert len(run.steps) > 3, "the module's own code is traced"
        preloaded = run.entry["preloaded"]
    if name == "argparse":
        assert preloaded == ["argparse"]  # snapstate record imported it before the program
    replayed = run_cli("replay", str(path), cwd=tmp_path)
    assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr
