"""A program computing values from the addresses of the interpreter's own objects (``hash(None)``,
the order of a set of builtin types: address-derived on 3.11) replays without divergence when
``snapstate record`` ran it: it runs with unrandomised addresses (``address_layout.py``), says
so in the run's entry, and the replay child starts the same way."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import snapstate_capture as snap
from snapstate_capture.capture import address_layout
from tests.conftest import PROGRAMS, ROOT, run_cli

PROGRAM = PROGRAMS / "address_hashes.py"


def _none_hash(fixed: bool) -> str:
    """``hash(None)`` in a grandchild started by a child that did or did not fix addresses."""
    code = ("import subprocess, sys\n"
            "from snapstate_capture.capture import address_layout\n"
            f"assert address_layout.fix_for_children() if {fixed} else True\n"
            "print(subprocess.run([sys.executable, '-c', 'print(hash(None))'],\n"
            "                     capture_output=True, text=True).stdout.strip())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_fixed_addresses_give_every_child_the_same_none():
    assert address_layout.randomized() is True  # this machine randomises, as most do
    assert _none_hash(True) == _none_hash(True)
    assert len({_none_hash(False) for _ in range(3)}) > 1  # randomised: they differ


def test_a_program_hashing_the_interpreters_objects_replays(tmp_path):
    path = tmp_path / "hashes.snap"
    done = run_cli("record", "-o", str(path), str(PROGRAM), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert run.entry["aslr"] is False
        hashed = next(step for step in run.steps if step.label == "hashed")
        assert hashed.extra["none_hash"].repr == _none_hash(True)
    replayed = run_cli("replay", str(path), cwd=tmp_path)
    assert replayed.returncode == 0 and "no divergence" in replayed.stdout, (
        replayed.stdout + replayed.stderr)


def test_a_process_that_fixed_its_childrens_addresses_still_says_its_own_were_random():
    """The inspector starts replay children of unrandomised runs with ``fix_for_children``;
    a run it then records in its own process was still made at randomised addresses."""
    code = ("from snapstate_capture.capture import address_layout as a\n"
            "assert a.fix_for_children()\n"
            "print(a.randomized(), a.address_facts())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "{'aslr':", "True}"]


def test_more_itertools_traced_whole_replays(tmp_path):
    """A package we did not write: more-itertools' ``numeric_range`` body stores
    ``hash(range(0, 0))`` (``_EMPTY_HASH``), which diverged at every replay of a whole-traced
    run of it."""
    path = tmp_path / "more.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/more_itertools/*", "-o",
                   str(path), str(PROGRAMS / "more_iterables.py"), cwd=tmp_path, timeout=180)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        assert any(step.function == "numeric_range" and "_EMPTY_HASH" in step.frames[-1].locals
                   for step in steps)
    replayed = run_cli("replay", str(path), cwd=tmp_path, timeout=180)
    assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr


def test_a_process_that_replays_keeps_its_own_childrens_layout(tmp_path):
    """Starting a replay child of an unrandomised run changed the persona of the process
    that started it for good: everything it started afterwards ran unrandomised."""
    path = tmp_path / "hashes.snap"
    done = run_cli("record", "-o", str(path), str(PROGRAM), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    code = textwrap.dedent("""
        import subprocess, sys
        import snapstate_capture as snap
        from snapstate_capture.replay.launch import replay

        def none_id():
            return subprocess.run([sys.executable, "-c", "print(id(None))"],
                                  capture_output=True, text=True).stdout.strip()

        with snap.open_timeline(sys.argv[1]) as timeline:
            result = replay(timeline.runs[-1], capture_output=True, progress=False)
        print(result["status"], len({none_id() for _ in range(3)}))
    """)
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    status, distinct = done.stdout.split()[-2:]
    assert status == "ok" and int(distinct) > 1  # replayed, and its later children randomised


def test_a_user_set_hash_seed_still_gets_fixed_addresses(tmp_path):
    """With ``PYTHONHASHSEED`` set by the user, ``snapstate record`` had no seed to choose and
    did not start the program again: its addresses stayed randomised, and a set holding
    ``None``-tuples and types replayed in another order (the reviewer's finding). The program
    sees the environment it was given, and nothing of snapstate's."""
    program = tmp_path / "seeded.py"
    program.write_text(textwrap.dedent("""
        import os
        import snapstate_capture as snap

        order = [repr(item) for item in {int, str, float, bytes, (None, 1), None}]
        snap.checkpoint("hashed", order=order)
        print(os.environ.get("PYTHONHASHSEED"),
              sorted(name for name in os.environ if name.startswith("SNAPSTATE")))
    """))
    path = tmp_path / "seeded.snap"
    done = run_cli("record", "-o", str(path), str(program), cwd=tmp_path,
                   env={"PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "0 []"
    with snap.open_timeline(path) as timeline:
        entry = timeline.runs[-1].entry
        assert entry["aslr"] is False and entry["hash_seed"] == 0 and entry["hash_seed_env"]
    replayed = run_cli("replay", str(path), cwd=tmp_path, env={"PYTHONHASHSEED": "0"})
    assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr
