"""Subcommands of ``snapstate``: one module each, each with ``register(subparsers)``.

A module's ``register`` adds its parser and sets ``handler`` (``func(args) -> int`` exit code).
"""

from . import keygen, ls, record, replay, resume, show, verify

#: Every subcommand module, in the order ``snapstate --help`` lists them.
MODULES = (record, ls, show, replay, resume, verify, keygen)
