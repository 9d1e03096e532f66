"""Export the README's screenshots as SVG, drawn by the inspector itself.

    python -m examples.make_screenshots            # writes docs/screenshots/*.svg

Each screenshot opens a committed sample in ``SnapStateApp`` headless (Textual's ``run_test``)
at a fixed terminal size, presses the same keys the README's walkthrough tells a reader to
press, waits for the background workers, and saves ``App.export_screenshot()``. Re-run it after
the samples or the inspector change. ``--only NAME`` exports one.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_snapshots"
OUT_DIR = ROOT / "docs" / "screenshots"
SIZE = (160, 45)


@dataclass(frozen=True)
class Shot:
    """One screenshot: file stem, sample file(s) as on the command line (a second file opens
    the comparison), keys to press (Textual key names), window title."""

    name: str
    files: tuple[str, ...]
    keys: tuple[str, ...] = ()
    title: str = "SnapState"


#: The bug hunt of the README walkthrough: last step, frame run_agent, sources, the corrupted
#: entry's doc_id, its history.
HISTORY_KEYS = ("greater_than_sign", "tab", "up", "tab", "tab", "down", "down", "down", "down",
                "enter", "down", "down", "down", "enter", "down", "h")

SHOTS = (
    Shot("inspector", ("research_agent.snap",), ("g", "2", "6", "enter"),
         title="snapstate sample_snapshots/research_agent.snap"),
    Shot("bug_exception", ("buggy_agent.snap",), ("greater_than_sign",),
         title="snapstate sample_snapshots/buggy_agent.snap"),
    Shot("bug_history", ("buggy_agent.snap",), HISTORY_KEYS,
         title="snapstate sample_snapshots/buggy_agent.snap: history of a variable"),
    Shot("compare", ("research_agent.snap", "research_agent_b.snap"),
         title="snapstate inspect research_agent.snap research_agent_b.snap"),
    Shot("help", ("research_agent.snap",), ("question_mark",), title="snapstate: help"),
)


async def _settle(app, pilot) -> None:
    """Wait until the workers are done and the screen is redrawn."""
    for _ in range(3):
        await pilot.pause(0.2)
        await app.workers.wait_for_complete()
    await pilot.pause(0.3)


async def take(shot: Shot, out_dir: Path = OUT_DIR) -> Path:
    """Export ``shot`` to ``out_dir/NAME.svg`` and return the path."""
    import snapstate_capture as snap
    from snapstate_inspect.app import SnapStateApp

    readers = [snap.open_timeline(SAMPLES / name) for name in shot.files]
    try:
        app = SnapStateApp(readers[0], other=readers[1] if len(readers) > 1 else None)
        async with app.run_test(size=SIZE) as pilot:
            await _settle(app, pilot)
            for key in shot.keys:
                await pilot.press(key)
                await _settle(app, pilot)
            svg = app.export_screenshot(title=shot.title)
    finally:
        for reader in readers:
            reader.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{shot.name}.svg"
    path.write_text(svg, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.make_screenshots",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="export only NAME")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="directory for the SVG files")
    args = parser.parse_args(argv)
    known = {shot.name: shot for shot in SHOTS}
    unknown = [name for name in args.only or [] if name not in known]
    if unknown:
        parser.error(f"unknown screenshot {', '.join(unknown)} (known: {', '.join(known)})")
    for name in args.only or list(known):
        path = asyncio.run(take(known[name], args.out))
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
