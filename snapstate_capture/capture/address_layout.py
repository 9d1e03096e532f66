"""Where the interpreter's own objects live: the same address in the recording and its replay.

On 3.11, ``hash(None)``, ``hash(int)`` and the hash of any builtin function or type are derived
from the object's address, and with address space layout randomisation (ASLR) that address
changes with every process. A set of types, or of tuples holding ``None``, then iterates in
another order on replay, and a value computed from it differs: real packages do this
(more-itertools hashes ``range(0, 0)`` — a tuple with ``None`` — in a class body). rr turns
ASLR off for the same reason.

``snapstate record`` starts the program again (``hashseed.reexec_with_seed``: for a hash seed it
chose, and for this even when the user set the seed); before that exec it sets
``ADDR_NO_RANDOMIZE`` on the process's personality (Linux ``personality(2)``), so the program
runs with the interpreter's objects at fixed addresses. A run says whether its
addresses were randomised (``entry["aslr"]``: True, False, or None when unknown), and a replay
child of a run recorded without randomisation starts without it too (``children_like``, around
the child's start only), so the same objects are at the same addresses. Processes the recorded
program starts inherit the unrandomised layout, as they would under ``setarch -R``. Objects the program allocates (its classes,
functions, instances) still get other addresses: the replay child's own imports come first.

Nothing here raises: where ``personality`` is unavailable (another OS, a container that
forbids it) addresses stay randomised and the run says so.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

#: ``personality(2)``'s flag that turns address randomisation off for images exec'd after it.
ADDR_NO_RANDOMIZE = 0x0040000
#: ``personality(0xffffffff)`` reads the persona without changing it.
_QUERY = 0xFFFFFFFF


_libc_personality: Any = None


def _personality(persona: int) -> int | None:
    """``personality(persona)``: the previous persona, or None where it cannot be called."""
    global _libc_personality
    if not sys.platform.startswith("linux"):
        return None
    try:
        if _libc_personality is None:
            import ctypes

            call = ctypes.CDLL(None, use_errno=True).personality
            call.restype = ctypes.c_int
            call.argtypes = [ctypes.c_ulong]
            _libc_personality = call
        result = _libc_personality(persona)
    except Exception:  # noqa: BLE001 - no ctypes, no libc symbol: randomised as before
        return None
    return None if result == -1 else result


#: ``randomized()``'s answer, read once: this process's layout was made when it started, and
#: a later ``fix_for_children`` changes the persona (what children get), not the layout.
_started_randomized: Any = ...


def randomized() -> bool | None:
    """Whether this process's addresses were randomised when it started: False when its
    persona has ``ADDR_NO_RANDOMIZE`` or the kernel randomises nothing
    (``/proc/sys/kernel/randomize_va_space`` is 0), True otherwise, None when unknown. Read
    once per process, before ``fix_for_children`` changes the persona."""
    global _started_randomized
    if _started_randomized is ...:
        _started_randomized = _read_randomized()
    return _started_randomized


def _read_randomized() -> bool | None:
    try:
        with open("/proc/sys/kernel/randomize_va_space", encoding="ascii") as handle:
            if handle.read().strip() == "0":
                return False
    except OSError:
        pass
    persona = _personality(_QUERY)
    if persona is None:
        return None
    return not persona & ADDR_NO_RANDOMIZE


def fix_for_children() -> bool:
    """Set ``ADDR_NO_RANDOMIZE`` on this process's persona: the images it execs from now on
    (itself again, its children) get unrandomised addresses; this one keeps its own (and
    ``randomized()`` still says how it started). True when the flag is set."""
    randomized()  # how this process started, before the persona changes
    persona = _personality(_QUERY)
    if persona is None:
        return False
    if persona & ADDR_NO_RANDOMIZE:
        return True
    return _personality(persona | ADDR_NO_RANDOMIZE) is not None


def address_facts() -> dict[str, object]:
    """``{"aslr": True | False | None}`` for a run's entry (see ``randomized``)."""
    return {"aslr": randomized()}


@contextlib.contextmanager
def children_like(entry: dict[str, object]) -> Iterator[None]:
    """While it is open, processes this thread starts get the address layout of the run whose
    entry is ``entry``: unrandomised when its entry says so (``aslr`` False), as they would
    otherwise. Open it around starting a replay child only (``subprocess.Popen`` returns once
    the child has exec'd): the persona is restored after, so the process starting replays —
    the inspector, a program calling ``replay()`` — and what it starts later keep theirs."""
    previous = _personality(_QUERY) if entry.get("aslr") is False else None
    changed = (previous is not None and not previous & ADDR_NO_RANDOMIZE
               and fix_for_children())
    try:
        yield
    finally:
        if changed:
            _personality(previous)
