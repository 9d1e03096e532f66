"""``snapstate serve FILE [--run ID] [--host 127.0.0.1] [--port N]``: the inspector in a browser.

Serves the same Textual app through textual-serve (``snapstate[serve]``): every browser tab
that opens the printed URL gets its own inspector on FILE. Bound to 127.0.0.1 by default; the
URL carries a one-time token, so other users of the machine cannot open it (``web.py``).
Runs until Ctrl+C.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from snapstate_capture import SnapStateError

from ..safe_text import escape_controls
from .common import add_file_argument, add_run_argument, open_file


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "serve", help="open the inspector in a browser (localhost, one-time link)",
        description="Serve the inspector on FILE as a web page (textual-serve). The printed "
                    "URL carries a one-time token: only the browser that opens it first can "
                    "use the server. Ctrl+C stops it.")
    add_file_argument(parser)
    add_run_argument(parser)
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=0, metavar="N",
                        help="port to listen on (default: a free one)")
    parser.set_defaults(handler=run)


def inspect_command(path: str, run_id: str | None) -> str:
    """The shell command each browser tab runs: this Python's ``snapstate inspect PATH``."""
    words = [sys.executable, "-m", "snapstate_inspect", "inspect", path]
    if run_id:
        words += ["--run", run_id]
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    try:
        from ..web import TokenServer, free_port, is_loopback
    except ImportError as exc:
        raise SnapStateError(f"snapstate serve needs textual-serve ({exc.name} is missing): "
                             "pip install 'snapstate[serve]'") from None
    with open_file(args.file) as timeline:  # a bad file fails here, not in every browser tab
        chosen = timeline.run(args.run)
        path = str(timeline.path.resolve())
    if not 0 <= args.port <= 65535:
        raise SnapStateError(f"--port {args.port}: not a port number (0-65535)")
    try:
        port = args.port or free_port(args.host)
    except OSError as exc:
        raise SnapStateError(f"--host {args.host}: cannot listen there ({exc.strerror or exc})"
                             ) from None
    if not is_loopback(args.host):
        sys.stderr.write(f"snapstate: serving on {args.host}, not only this machine: whoever "
                         "has the link can read the file's previews\n")

    def announce(url: str) -> None:
        print(escape_controls(f"snapstate: serving {path} (run {chosen.id[:8]}) at {url}",
                              keep_newlines=False), flush=True)
        print("snapstate: open that link once in your browser; Ctrl+C stops", flush=True)

    server = TokenServer(inspect_command(path, args.run and chosen.id), host=args.host,
                         port=port, title=f"SnapState {timeline.path.name}", announce=announce)
    try:
        server.serve()
    except OSError as exc:
        raise SnapStateError(f"cannot listen on {args.host}:{port} ({exc.strerror or exc})"
                             ) from None
    return 0
