"""``snapstate trust add NAME KEY`` · ``trust list`` · ``trust remove NAME``: whose runs you trust.

KEY is what the teammate's ``snapstate keys export`` prints. Their runs then verify as
"signed by NAME" and their payloads load without ``--trust``; the keys are kept beside your own
key, owner-only (``snapstate_capture.trust.trusted``).
"""

from __future__ import annotations

import argparse

from snapstate_capture import SnapStateError
from snapstate_capture.trust.trusted import (add_trusted, load_trusted, remove_trusted,
                                              trusted_path)

from ..safe_text import escape_controls


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "trust", help="trust a teammate's public key (trust add NAME KEY, list, remove NAME)",
        description="add NAME KEY: trust the runs signed with KEY (from the teammate's "
                    "`snapstate keys export`) as NAME's; list: the keys you trust; remove NAME: "
                    f"stop trusting it. Kept in {trusted_path()}.")
    parser.add_argument("action", choices=["add", "list", "remove"])
    parser.add_argument("name", metavar="NAME", nargs="?", default=None,
                        help="who the key belongs to (add, remove)")
    parser.add_argument("key", metavar="KEY", nargs="?", default=None,
                        help="the key `snapstate keys export` printed (add)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        entries = load_trusted()
        if not entries:
            print(f"{trusted_path()}: you trust no teammate's key yet "
                  "(snapstate trust add NAME KEY)")
        for entry in entries:
            print(escape_controls(f"{entry.name}  {entry.key_id}  {entry.text}",
                                  keep_newlines=False))
        return 0
    if not args.name or (args.action == "add" and not args.key):
        raise SnapStateError(f"trust {args.action}: needs NAME"
                             + (" and KEY (from the teammate's `snapstate keys export`)"
                                if args.action == "add" else ""))
    if args.action == "add":
        entry = add_trusted(args.name, args.key)
        print(escape_controls(f"trusting {entry.name} (key {entry.key_id}): their signed runs "
                              "load without --trust", keep_newlines=False))
        return 0
    entry = remove_trusted(args.name)
    print(escape_controls(f"no longer trusting {entry.name} (key {entry.key_id})",
                          keep_newlines=False))
    return 0
