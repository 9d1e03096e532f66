"""``snapstate sign FILE [--run ID]``: sign a run as yours after checking that it verifies.

For a run recorded before your key existed (or where there was none): once signed, its
payloads load without ``--trust``. The run is checked end to end first (every blob it uses,
its step chain and effect journal); a run that does not verify — altered, damaged, signed by
another key, still recording — is refused (exit 2) and left as it was. Creates your key when
there is none, as the first ``record`` does (not for a run someone else signed: refused first).
"""

from __future__ import annotations

import argparse
import os

from snapstate_capture.trust.keys import ensure_key, key_path
from snapstate_capture.trust.sign_runs import sign_run
from snapstate_capture.errors import SnapStateError

from ..safe_text import escape_controls
from .common import add_file_argument, add_run_argument, open_file


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "sign", help="sign a run with your key after checking it (then it loads without "
                     "--trust)",
        description="Check a run end to end (blob hashes, step chain, effect journal) and sign "
                    "it with your key, so that replay, fork and full-value diffs load its "
                    "payloads without --trust. Refuses a run that does not verify. Sign only "
                    "runs you trust: their payloads run code when loaded.")
    add_file_argument(parser)
    add_run_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with open_file(args.file) as timeline:
        chosen = timeline.run(args.run)
        if chosen.key_id is not None and not os.path.lexists(key_path()):
            # someone else's run: refused as sign_run would, without making a key for nothing
            raise SnapStateError(
                f"{timeline.path}: run {chosen.id[:8]} was not signed: it is signed by key "
                f"{chosen.key_id}, not by you (you have no key yet): if you trust its owner, "
                "ask them for `snapstate keys export` and run `snapstate trust add NAME KEY`")
        choice = ensure_key()
        if choice.key is None:
            raise SnapStateError(f"{key_path()}: no key to sign with: {choice.problem}")
        result = sign_run(timeline, chosen, choice.key)
    if choice.created:
        print(escape_controls(f"created your key {choice.key.key_id} at {choice.key.path}",
                              keep_newlines=False))
    what = "was already signed" if result.already else "signed"
    print(escape_controls(f"run {result.run_id[:8]} {what} by your key {result.key_id}",
                          keep_newlines=False))
    return 0
