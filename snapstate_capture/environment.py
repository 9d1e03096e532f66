"""Facts about the running process stored with each run: its entry and its environment."""

from __future__ import annotations

import os
import platform
import socket
import sys
from typing import Any

#: Distributions whose versions are recorded when their top-level module is imported.
KEY_PACKAGES = ("snapstate", "dill", "numpy", "pandas", "pydantic", "openai", "anthropic",
                "langchain", "langgraph", "httpx", "requests", "torch")


def entry_facts() -> dict[str, Any]:
    """How to start this program again: ``{"kind": "script"|"module"|"unknown", ...}``.

    A script gives its absolute ``path``; ``python -m pkg`` gives ``module``; both give ``argv``
    (arguments after the program name) and ``cwd``.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    argv = list(sys.argv[1:])
    cwd = os.getcwd()
    if spec is not None and getattr(spec, "name", None) not in (None, "__main__"):
        return {"kind": "module", "module": spec.name, "argv": argv, "cwd": cwd}
    path = getattr(main, "__file__", None)
    if path:
        return {"kind": "script", "path": os.path.abspath(path), "argv": argv, "cwd": cwd}
    return {"kind": "unknown", "argv": argv, "cwd": cwd}


def environment_facts() -> dict[str, Any]:
    """Python version, platform, host, cwd, argv, pid and versions of key packages in use."""
    packages: dict[str, str] = {}
    try:
        from importlib import metadata

        for dist in KEY_PACKAGES:
            module = "snapstate_capture" if dist == "snapstate" else dist
            if module in sys.modules:
                try:
                    packages[dist] = metadata.version(dist)
                except metadata.PackageNotFoundError:
                    continue
    except Exception:  # noqa: BLE001 - environment facts are best effort
        pass
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "executable": sys.executable,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "argv": list(sys.argv),
        "packages": packages,
    }
