"""Subcommands of ``snapstate``: one module each, each with ``register(subparsers)``.

A module's ``register`` adds its parser and sets ``handler`` (``func(args) -> int`` exit code).
"""

from . import inspect, ls, show

#: Every subcommand module, in the order ``snapstate --help`` lists them.
MODULES = (inspect, ls, show)
