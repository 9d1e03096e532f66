"""Record the sample timelines in ``sample_snapshots/``: ``python -m examples.make_samples``.

Each sample is a real run of a program in ``examples/``, recorded in a child process started
from the repository root, with the human's answer piped to its standard input. The programs are
deterministic (no network, no clock or random numbers in their results), so a new recording
differs from the committed one only in times, ids and process facts — which is what
``tests/e2e/test_samples.py`` checks (see ``examples/fingerprint.py``). Re-run this command and
commit the files whenever the examples or the recorded format change.

Options: ``--only NAME`` (repeatable) records some samples; ``--root DIR`` records into
``DIR/sample_snapshots/`` instead (the tests use it); ``--check`` records into a temporary
directory and reports which committed samples are stale, exit 1 if any.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = "sample_snapshots"


@dataclass(frozen=True)
class Sample:
    """One sample: file stem, command (``python`` arguments; ``{out}`` stands for the timeline
    file), stdin, expected exit code and run status, and what it shows."""

    name: str
    args: tuple[str, ...]
    stdin: str = ""
    exit_code: int = 0
    status: str = "finished"
    about: str = ""


SAMPLES = (
    Sample("research_agent", ("-m", "examples.research_agent", "--out", "{out}"), "yes\n",
           about="the research agent; the reviewer approves the outline"),
    Sample("research_agent_b", ("-m", "examples.research_agent", "--out", "{out}"), "skip 5\n",
           about="the same agent; the reviewer drops section 5 (diff it with research_agent)"),
    Sample("buggy_agent", ("-m", "examples.buggy_agent", "--out", "{out}"), "yes\n",
           exit_code=1, status="failed",
           about="the agent with a planted bug: corrupts its state early, fails at the end"),
    Sample("async_agent", ("-m", "examples.async_agent", "--out", "{out}"),
           about="an asyncio agent: three question tasks, concurrent tool calls"),
    Sample("stack_vm", ("-m", "snapstate_inspect", "record", "--trace", "lines", "--include",
                        "stack_vm.py", "--name", "stack-vm", "-o", "{out}",
                        "-m", "examples.stack_vm"),
           about="a stack-machine interpreter, unmodified, recorded line by line"),
)


#: The framework agents (issue 16), recorded with the others. They are not compared by
#: fingerprint (``--check``, ``tests/e2e/test_samples.py``): the order in which a thread pool
#: finishes parallel tool calls, and the ids and timestamps the frameworks make, differ from
#: one recording to the next; ``tests/corpus/test_framework_samples.py`` checks what they show.
FRAMEWORK_SAMPLES = (
    Sample("langgraph_agent", ("-m", "examples.langgraph_agent", "--out", "{out}"),
           about="a LangGraph agent (fake chat model, ToolNode): effects and super-steps"),
    Sample("pydantic_ai_agent", ("-m", "examples.pydantic_ai_agent", "--out", "{out}"),
           about="a pydantic-ai agent (FunctionModel): effects and graph nodes"),
    Sample("openai_agents_agent", ("-m", "examples.openai_agents_agent", "--out", "{out}"),
           about="an OpenAI Agents SDK agent (scripted model): a handoff, turns, tools"),
)


def sample_path(root: Path, sample: Sample) -> Path:
    return root / SAMPLE_DIR / f"{sample.name}.snap"


def record_sample(sample: Sample, root: Path = ROOT) -> Path:
    """Record ``sample`` into ``root/sample_snapshots/NAME.snap`` (replacing it); return the path.

    The child runs with ``root`` as its working directory and this checkout on ``PYTHONPATH``.
    Raises ``RuntimeError`` when the program exits with an unexpected code.
    """
    path = sample_path(root, sample)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("SNAPSTATE_DISABLE", None)
    relative = f"{SAMPLE_DIR}/{sample.name}.snap"
    command = [relative if arg == "{out}" else arg for arg in sample.args]
    done = subprocess.run([sys.executable, *command], cwd=root, env=env,
                          input=sample.stdin, capture_output=True, text=True, timeout=120)
    if done.returncode != sample.exit_code:
        raise RuntimeError(f"{sample.name}: exit code {done.returncode}, expected "
                           f"{sample.exit_code}\n{done.stderr[-2000:]}")
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            if suffix == "-wal" and side.stat().st_size:
                raise RuntimeError(f"{side}: the recorder left an unmerged write-ahead log")
            side.unlink()
    return path


def _selected(names: list[str] | None, *, frameworks: bool = True) -> list[Sample]:
    if not names:
        return list(SAMPLES) + (list(FRAMEWORK_SAMPLES) if frameworks else [])
    known = {sample.name: sample for sample in (*SAMPLES, *FRAMEWORK_SAMPLES)}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"make_samples: unknown sample {', '.join(unknown)} "
                         f"(known: {', '.join(known)})")
    return [known[name] for name in names]


def check(samples: list[Sample]) -> int:
    """Record ``samples`` afresh in a temporary directory and compare them with the committed
    files; print one line per sample and return the number of stale ones."""
    from .fingerprint import first_difference, fingerprint

    stale = 0
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            fresh = fingerprint(record_sample(sample, Path(tmp)))
            committed_path = sample_path(ROOT, sample)
            committed = fingerprint(committed_path) if committed_path.exists() else []
            difference = first_difference(committed, fresh)
            stale += bool(difference)
            print(f"{sample.name}: {'stale, ' + difference if difference else 'current'}")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.make_samples",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="record only NAME")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help=f"record into ROOT/{SAMPLE_DIR}/ (default: this checkout)")
    parser.add_argument("--check", action="store_true",
                        help="report stale committed samples instead of recording")
    args = parser.parse_args(argv)
    samples = _selected(args.only, frameworks=not args.check)
    if args.check:
        return 1 if check(samples) else 0
    for sample in samples:
        path = record_sample(sample, args.root.resolve())
        size = path.stat().st_size
        print(f"{path.relative_to(args.root.resolve())}  {size / 1024:.0f} KiB  {sample.about}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
