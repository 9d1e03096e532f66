"""``snapstate store init URL``: create a shared store's schema (``snapstate`` in the database).

Writers create it on first use too; ``init`` lets an administrator make it once, e.g. before
handing out a reviewer role that may only read (docs: README "A shared store on PostgreSQL").
"""

from __future__ import annotations

import argparse

from snapstate_capture.store.locations import is_store_url, open_write_engine

from snapstate_capture import SnapStateError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("store", help="manage a shared store (postgresql://…)",
                            description="Manage a shared store: `init` creates its schema.")
    parser.add_argument("action", choices=["init"], help="init: create the store's schema")
    parser.add_argument("url", metavar="URL", help="the store, postgresql://…")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not is_store_url(args.url):
        raise SnapStateError(f"{args.url}: not a store URL (postgresql://…); a timeline file needs "
                         "no init")
    open_write_engine(args.url).close()
    print(f"{args.url.split('@')[-1]}: store ready")
    return 0
