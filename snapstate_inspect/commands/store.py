"""``snapstate store init URL`` · ``snapstate store grant URL [--reader ROLE] [--writer ROLE]``.

``init`` creates a shared store's schema (``snapstate`` in the database); writers create it on
first use too, but ``init`` lets its owner make it once, e.g. before handing out a reviewer role
that may only read. ``grant`` (run as the owner) gives existing database roles the reader's or
the writer's rights (``snapstate_capture.store.postgres.roles``; README "A shared store on
PostgreSQL").
"""

from __future__ import annotations

import argparse

from snapstate_capture.store.locations import is_store_url, location_label, open_write_engine

from snapstate_capture import SnapStateError

from ..safe_text import escape_controls


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("store", help="manage a shared store (postgresql://…)",
                            description="Manage a shared store: `init` creates its schema "
                                        "(its owner is the role connecting; no superuser "
                                        "needed); `grant` gives roles the reader's rights "
                                        "(browse, diff, verify) or the writer's (record).")
    parser.add_argument("action", choices=["init", "grant"],
                        help="init: create the store's schema; grant: give roles rights")
    parser.add_argument("url", metavar="URL", help="the store, postgresql://… (as its owner)")
    parser.add_argument("--reader", metavar="ROLE", action="append", default=[],
                        help="grant: a role that may only read (reviewers)")
    parser.add_argument("--writer", metavar="ROLE", action="append", default=[],
                        help="grant: a role that records (agents); never deletes")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not is_store_url(args.url):
        raise SnapStateError(f"{args.url}: not a store URL (postgresql://…); a timeline file needs "
                         "no init")
    where = location_label(args.url)  # the URL without its password
    if args.action == "init":
        open_write_engine(args.url).close()
        print(escape_controls(f"{where}: store ready", keep_newlines=False))
        return 0
    if not args.reader and not args.writer:
        raise SnapStateError(f"{where}: store grant needs --reader ROLE or --writer ROLE")
    from snapstate_capture.store.postgres.roles import grant

    for kind, roles in (("reader", args.reader), ("writer", args.writer)):
        for role in roles:
            grant(args.url, kind, role)
            print(escape_controls(f"{where}: {role} is a {kind}", keep_newlines=False))
    return 0
