"""asyncio event loops as machinery: one short line, no payload, compared by class.

An event loop is the running interpreter's: its selector, self-pipe sockets and thread ident are
other numbers in every process (a replay's loop gets other file descriptors when the replay
child holds two more open), and its ready queue holds the framework's callbacks. Captured as a
value it diverged on replay wherever a frame held it (``loop = asyncio.get_running_loop()``)
or held a queue, lock or event bound to it. Registered as machinery (``machinery.py``), it is
shown as ``<_UnixSelectorEventLoop running=True closed=False debug=False>`` — what its own repr
says, read statically — and left out of replay's comparison as any machinery is.

Registered by name (``asyncio.events.AbstractEventLoop``): asyncio's and uvloop's own loop
classes; a subclass of the program's, which may hold state of its own, is captured as any
object is. Nothing here imports asyncio.
"""

from __future__ import annotations

from typing import Any

from . import machinery

#: The base class of every event loop, as ``registry.class_name`` spells it.
EVENT_LOOP_CLASSES = ("asyncio.events.AbstractEventLoop",)


def describe(loop: Any) -> str:
    """What the loop's repr says (running, closed, debug), from its instance attributes."""
    running = machinery.field(loop, "_thread_id") is not None
    closed = machinery.field(loop, "_closed", False) is True
    debug = machinery.field(loop, "_debug", False) is True
    return f"running={running} closed={closed} debug={debug}"


#: Packages whose own loop classes are machinery; a loop class of the program's, which may hold
#: state of its own (a budget read from a file), is captured as any object is.
LOOP_PACKAGES = frozenset({"asyncio", "uvloop"})


machinery.register(EVENT_LOOP_CLASSES, describe, where=machinery.classes_of(LOOP_PACKAGES))
