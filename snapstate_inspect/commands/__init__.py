"""Subcommands of ``snapstate``: one module each, each with ``register(subparsers)``.

A module's ``register`` adds its parser and sets ``handler`` (``func(args) -> int`` exit code).
One module per line below, so that adding a command never conflicts with another addition.
"""

from . import (
    diff,
    export,
    gc,
    inspect,
    keygen,
    ls,
    record,
    replay,
    resume,
    show,
    verify,
)

#: Every subcommand module, in the order ``snapstate --help`` lists them.
MODULES = (
    record,
    inspect,
    ls,
    show,
    diff,
    replay,
    resume,
    verify,
    keygen,
    export,
    gc,
)
