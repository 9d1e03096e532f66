"""``snapstate keygen [--force]``: create the user key that signs (and encrypts) your timelines.

The key goes to ``$SNAPSTATE_KEY`` if set, else ``$XDG_CONFIG_HOME/snapstate/key`` or
``~/.config/snapstate/key``, owner-only (see ``snapstate_capture.trust.keys``).
"""

from __future__ import annotations

import argparse

from snapstate_capture.trust.keys import generate_key, key_path

from ..safe_text import escape_controls


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "keygen", help="create your key now (the first record creates it otherwise)",
        description=f"Create a new secret key at {key_path()} (owner-only). The first record "
                    "creates it too when there is none. Runs recorded afterwards are signed "
                    "with it, and their payloads load without --trust; sign older runs with "
                    "`snapstate sign FILE --run ID`. "
                    "Keep it secret; SNAPSTATE_KEY=PATH selects another key file.")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing key (files it signed then show as signed by "
                             "another key)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    key = generate_key(force=args.force)
    print(escape_controls(f"created key {key.key_id} at {key.path}", keep_newlines=False))
    return 0
