"""The inspector in a browser: the same Textual app, served through textual-serve.

``TokenServer`` is textual-serve's ``Server`` (each browser tab gets its own ``snapstate
inspect`` process, drawn by xterm.js in the page) with one addition: nobody but the person who
started it may open it. The URL printed at start carries a random token made for this server;
its first use trades it for a session cookie (HttpOnly, SameSite=Strict, named after the port)
and redirects to ``/``, so the token never stays in the address bar or the history and cannot be
used a second time. Every request — the page, its scripts, the websocket that drives the app,
downloads — needs that cookie; the websocket also needs an ``Origin`` of this server's own URL,
so a web page from elsewhere cannot drive the app through the user's browser. Other local users
can reach a port on 127.0.0.1, which is what the token is for; binding elsewhere than loopback
is the user's explicit choice (``--host``).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
import socket
import threading
import time
from typing import Any

from aiohttp import web
from textual_serve.server import Server

#: Query parameter that carries the one-time token.
TOKEN_PARAM = "token"


def free_port(host: str) -> int:
    """A TCP port on ``host`` that nothing listens on right now (the OS picks it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenServer(Server):
    """textual-serve's ``Server`` for ``command``, open only to whoever has the printed URL.

    ``url`` is that URL (``http://HOST:PORT/?token=...``); ``announce(line)`` is called with
    the line to show the user once the server listens. ``serve()`` runs until SIGINT/SIGTERM.
    """

    def __init__(self, command: str, *, host: str, port: int, title: str,
                 announce: Any = print) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.token = secrets.token_urlsafe(32)
        self._session = secrets.token_urlsafe(32)
        self._token_used = False
        self._cookie = f"snapstate_session_{port}"
        self._announce = announce
        self.url = f"{self.public_url}/?{TOKEN_PARAM}={self.token}"

    def initialize_logging(self) -> None:
        """Requests are not logged (the default logs each one on the terminal); errors are."""
        logging.basicConfig(level="WARNING", format="snapstate serve: %(message)s")

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    async def on_startup(self, app: web.Application) -> None:
        # aiohttp runs this before the socket listens: announce once it accepts connections.
        threading.Thread(target=self._announce_when_listening, name="snapstate-announce",
                         daemon=True).start()

    def _announce_when_listening(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    break
            except OSError:
                time.sleep(0.05)
        self._announce(self.url)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.query.get(TOKEN_PARAM)
        if given is not None:
            if self._token_used or not hmac.compare_digest(given, self.token):
                raise web.HTTPForbidden(text="snapstate serve: this link was already used or "
                                             "is wrong; start `snapstate serve` again for a "
                                             "new one\n")
            self._token_used = True
            response = web.HTTPFound("/")
            response.set_cookie(self._cookie, self._session, httponly=True, samesite="Strict",
                                path="/")
            raise response
        cookie = request.cookies.get(self._cookie, "")
        if not cookie or not hmac.compare_digest(cookie, self._session):
            raise web.HTTPForbidden(text="snapstate serve: open the URL that `snapstate serve` "
                                         "printed (it carries a one-time token)\n")
        if request.path == "/ws" and request.headers.get("Origin") != self.public_url:
            raise web.HTTPForbidden(text="snapstate serve: websocket from another origin\n")
        return await handler(request)
