"""Subcommands of ``snapstate``: one module each, each with ``register(subparsers)``.

A module's ``register`` adds its parser and sets ``handler`` (``func(args) -> int`` exit code).
A module is named after its command and imported only when needed (``load``): ``snapstate FILE``
loads the ``inspect`` command alone, not the recorder, replay or maintenance code the others
import. One name per line below, so that adding a command never conflicts with another addition.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

#: Every subcommand (its module's name), in the order ``snapstate --help`` lists them.
NAMES = (
    "record",
    "inspect",
    "ls",
    "show",
    "diff",
    "replay",
    "resume",
    "waiting",
    "worker",
    "verify",
    "keygen",
    "sign",
    "keys",
    "trust",
    "export",
    "push",
    "pull",
    "store",
    "gc",
    "serve",
)


def load(name: str) -> ModuleType:
    """The module of command ``name`` (one of ``NAMES``), imported on first use."""
    return import_module(f"{__name__}.{name}")
