"""Subcommands of ``snapstate``: one module each, each with ``register(subparsers)``.

A module's ``register`` adds its parser and sets ``handler`` (``func(args) -> int`` exit code).
"""

from . import diff, export, gc, keygen, ls, record, replay, resume, show, verify

#: Every subcommand module, in the order ``snapstate --help`` lists them.
MODULES = (record, ls, show, diff, replay, resume, verify, keygen, export, gc)
