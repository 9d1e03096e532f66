"""The process's string-hash seed, recorded with each run so replay can start with the same one.

``str``/``bytes`` hashes — and so the iteration order of sets and of dicts built from sets —
follow the hash secret CPython draws at start-up: from ``PYTHONHASHSEED`` when it is set to an
integer, else at random. A random secret cannot be given to another process (it is 24 random
bytes, not a seed), so a run recorded under one is marked ``hash_seed: None`` and replayed
under another random one. ``snapstate record`` avoids that by starting the program with a
chosen seed (``reexec_with_seed``), hidden from the program's environment.

``recorded_seed()`` does not trust the environment alone: the variable may have been changed
after start-up, so on CPython it checks the interpreter's secret (``_Py_HashSecret``, read
through ctypes and never stored) against the one the seed expands to.
"""

from __future__ import annotations

import os
import sys

#: The variable CPython reads at start-up.
SEED_ENV = "PYTHONHASHSEED"
#: Set by ``snapstate record`` (and the replay parent) when it chose the seed itself: the
#: program must not see ``PYTHONHASHSEED``, so it is removed from ``os.environ`` on start.
HIDDEN_ENV = "SNAPSTATE_HIDDEN_HASHSEED"
_MAX_SEED = 4294967295
_SECRET_BYTES = 24
#: The seed ``take_hidden_seed`` removed from the environment (this process's, still).
_hidden: int | None = None


def parse_seed(text: str | None) -> int | None:
    """The integer seed ``text`` names (``"0"`` … ``"4294967295"``), else None (unset,
    empty, ``random`` or malformed: CPython then draws a random secret or refuses to start)."""
    if text is None or not text.strip().isdigit():
        return None
    seed = int(text)
    return seed if seed <= _MAX_SEED else None


def expand(seed: int) -> bytes:
    """The hash secret CPython derives from ``seed`` (its start-up LCG; 0 disables hashing
    randomisation: all zeros)."""
    if seed == 0:
        return bytes(_SECRET_BYTES)
    out = bytearray()
    x = seed
    for _ in range(_SECRET_BYTES):
        x = (x * 214013 + 2531011) & 0xFFFFFFFF
        out.append((x >> 16) & 0xFF)
    return bytes(out)


def _secret() -> bytes | None:
    """This interpreter's hash secret, or None when it cannot be read (not CPython, no ctypes)."""
    if sys.implementation.name != "cpython":
        return None
    try:
        import ctypes

        secret = ctypes.c_char.in_dll(ctypes.pythonapi, "_Py_HashSecret")
        return ctypes.string_at(ctypes.addressof(secret), _SECRET_BYTES)
    except Exception:  # noqa: BLE001 - no ctypes, no symbol: the environment is believed
        return None


def recorded_seed() -> int | None:
    """The seed this process's string hashes follow, or None when they follow a random secret.

    ``sys.flags.hash_randomization == 0`` means seed 0. Otherwise ``PYTHONHASHSEED`` names the
    candidate, confirmed against the interpreter's secret where it can be read (a variable
    set by the program after start-up is not the seed). Never raises.
    """
    try:
        if not sys.flags.hash_randomization:
            return 0
        seed = parse_seed(os.environ.get(SEED_ENV))
        if seed is None:
            seed = _hidden
        if seed is None:
            return None
        secret = _secret()
        if secret is not None and secret != expand(seed):
            return None
        return seed
    except Exception:  # noqa: BLE001 - a fact about the run, never an error
        return None


def seed_facts() -> dict[str, object]:
    """``{"hash_seed": int | None, "hash_seed_env": bool}`` for a run's entry.

    ``hash_seed_env``: the program saw ``PYTHONHASHSEED`` in its environment (the user set it),
    so replay leaves it there; a seed ``snapstate record`` chose and hid does not count.
    """
    return {"hash_seed": recorded_seed(),
            "hash_seed_env": parse_seed(os.environ.get(SEED_ENV)) is not None}


def take_hidden_seed() -> int | None:
    """In a process started by ``reexec_with_seed`` or the replay parent with a hidden seed:
    remove ``PYTHONHASHSEED`` and the marker from ``os.environ`` (the program sees the
    environment it was given) and return the seed; else None. ``recorded_seed`` still
    reports it afterwards."""
    global _hidden
    if os.environ.pop(HIDDEN_ENV, None) is None:
        return None
    seed = parse_seed(os.environ.pop(SEED_ENV, None))
    if seed is not None:
        _hidden = seed
    return seed


def child_seed_env(entry: dict[str, object], env: dict[str, str]) -> None:
    """Set ``PYTHONHASHSEED`` in ``env`` (a replay child's environment) to the run's recorded
    seed, hidden from the program unless it saw the variable when recorded; a run recorded
    under a random secret gets a random one (the variable removed)."""
    seed = entry.get("hash_seed")
    env.pop(HIDDEN_ENV, None)
    if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= _MAX_SEED:
        env[SEED_ENV] = str(seed)
        if not entry.get("hash_seed_env"):
            env[HIDDEN_ENV] = "1"
    else:
        env.pop(SEED_ENV, None)


def hide_chosen_seed(env: dict[str, str] | os._Environ[str]) -> None:
    """Set a seed chosen at random in ``env`` for the processes started with it, marked to be
    hidden from their program (``take_hidden_seed``): ``reexec_with_seed``'s own restart,
    pytest-xdist's workers under ``pytest --snapstate``."""
    env[SEED_ENV] = str(int.from_bytes(os.urandom(4), "big") % _MAX_SEED + 1)
    env[HIDDEN_ENV] = "1"


#: Set in the environment of the process ``reexec_with_seed`` started (and removed there): it
#: never starts itself again, whatever it finds.
REEXEC_ENV = "SNAPSTATE_REEXECUTED"


def reexec_with_seed() -> None:
    """Start this same command again under a chosen ``PYTHONHASHSEED`` (hidden from the program
    by ``take_hidden_seed``) unless the seed is known already, and with unrandomised addresses
    where Linux allows it (``address_layout``) unless they are already; returns only when
    neither is needed, or in the process started again.

    Used by ``snapstate record``: a random secret could not be reproduced on replay, nor could
    the interpreter's objects' addresses. The new process keeps the pid, file descriptors and
    arguments (``os.execv`` of ``sys.orig_argv``). Does nothing where exec is unavailable.
    """
    if os.environ.pop(REEXEC_ENV, None) is not None:
        return  # started again already: once is enough
    from .address_layout import fix_for_children, randomized

    need_seed = HIDDEN_ENV not in os.environ and recorded_seed() is None
    orig = getattr(sys, "orig_argv", None)
    if not orig or not sys.executable or not hasattr(os, "execv"):
        return
    # the interpreter's objects at fixed addresses in the image execv starts (address_layout)
    fixed = randomized() is True and fix_for_children()
    if not need_seed and not fixed:
        return
    if need_seed:
        hide_chosen_seed(os.environ)
    os.environ[REEXEC_ENV] = "1"
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - nothing written yet matters more than the exec
            pass
    try:
        os.execv(sys.executable, [sys.executable, *orig[1:]])
    except OSError:
        os.environ.pop(REEXEC_ENV, None)
        if need_seed:
            os.environ.pop(SEED_ENV, None)
            os.environ.pop(HIDDEN_ENV, None)
