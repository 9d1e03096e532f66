"""Thread and process pools as machinery: one short line, no payload, compared by class.

A ``concurrent.futures`` executor's state is its scheduler's. ``ThreadPoolExecutor`` starts a
worker only when no idle one takes the call (``_adjust_thread_count``), so whether a round of
five calls ran on two workers or three — the size of ``_threads``, the count of its
``_idle_semaphore`` — depends on how fast each worker came back. Captured as a value, the pool
in a frame's locals (``with ThreadPoolExecutor() as pool:``) diverged on replay at the return
of that frame whenever the replay's workers were scheduled otherwise: under load, 1 in ~20 such
replays. Registered as machinery (``machinery.py``), a pool is shown as ``<ThreadPoolExecutor
max_workers=3 shutdown=False>``, read statically, and left out of replay's comparison and of
``snapstate diff`` as any machinery is. The futures it hands out are live state already
(``reducers._future``).

Registered by name (``concurrent.futures._base.Executor``): the standard library's own pools;
a pool class of the program's own, which may hold state of its own, is captured as any object
is. Nothing here imports ``concurrent.futures``.
"""

from __future__ import annotations

from typing import Any

from . import machinery

#: The base class of every ``concurrent.futures`` pool, as ``registry.class_name`` spells it.
EXECUTOR_CLASSES = ("concurrent.futures._base.Executor",)


def describe(pool: Any) -> str:
    """The pool's size and whether it was shut down, from its instance attributes."""
    workers = machinery.text(machinery.field(pool, "_max_workers"))
    shutdown = machinery.field(pool, "_shutdown_thread", machinery.field(pool, "_shutdown"))
    return f"max_workers={workers} shutdown={shutdown is True}"


machinery.register(EXECUTOR_CLASSES, describe, where=machinery.classes_of(frozenset({"concurrent"})))
