"""``snapstate keys export``: print your public key, for teammates to trust your runs.

The key is the Ed25519 public half of your user key (``snapstate_capture.trust.public_keys``;
the ``crypto`` extra). A teammate runs ``snapstate trust add NAME KEY`` with it; your runs then
verify for them as "signed by NAME" and their payloads load without ``--trust``.
"""

from __future__ import annotations

import argparse

from snapstate_capture import SnapStateError
from snapstate_capture.trust.keys import find_key, key_path
from snapstate_capture.trust.public_keys import available, export_text


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "keys", help="your public key, for teammates (keys export)",
        description="export: print your public key (Ed25519, derived from your key at "
                    f"{key_path()}) for a teammate's `snapstate trust add NAME KEY`. Runs you "
                    "record with the crypto extra installed are signed with it.")
    parser.add_argument("action", choices=["export"], help="export: print your public key")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not available():
        raise SnapStateError("public keys need the cryptography package: "
                             "pip install 'snapstate[crypto]'")
    key = find_key()
    if key is None:
        raise SnapStateError(f"{key_path()}: no key yet; `snapstate keygen` creates one (the "
                             "first record does too)")
    print(export_text(key))
    return 0
