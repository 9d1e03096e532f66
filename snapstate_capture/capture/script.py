"""Running a script as ``python script.py`` runs it: what ``snapstate record`` starts, and what
a replay child starts again, so both see the same ``__main__``.

``runpy.run_path`` is close but not the same: it leaves ``__builtins__`` to ``exec``, which puts
the builtins module's *dict* in the module's globals (``python`` puts the module), and sets
``__loader__`` to None. Capture sees those globals — a closure of the script reaches them, and
a traced step counts what a value reaches to decide whether it is stored whole — so a script
recorded one way and replayed the other diverged at its first module-level ``@snap.step``
function (its wrapper's closure reached 300 builtins in the replay only).
"""

from __future__ import annotations

import builtins
import importlib.machinery
import io
import os
import sys
import types

__all__ = ["run_script"]


def run_script(target: str) -> None:
    """Run the script at ``target`` as ``python target`` does: in a fresh ``__main__`` module
    (``sys.modules["__main__"]`` while it runs, the previous one put back after) whose
    ``__file__`` is the absolute path, ``__builtins__`` the builtins module, ``__loader__`` a
    source loader and ``__spec__`` None. ``sys.argv`` and ``sys.path[0]`` are the caller's to
    set. Raises ``OSError`` when the file cannot be read, ``SyntaxError`` for a script that does
    not compile, and whatever the script raises."""
    path = os.path.abspath(target)
    with io.open_code(path) as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__spec__ = None
    previous = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if previous is not None:
            sys.modules["__main__"] = previous
