"""Facts about the running process stored with each run: its entry and its environment."""

from __future__ import annotations

import functools
import os
import platform
import socket
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..options import CaptureOptions

#: Distributions whose versions are recorded when their top-level module is imported.
KEY_PACKAGES = ("snapstate", "dill", "numpy", "pandas", "pydantic", "openai", "anthropic",
                "langchain", "langgraph", "httpx", "requests", "torch")
#: Key packages that are SnapState's own (it and its dependency): recorded whether the program
#: has imported them or not. Whether dill is loaded when a run starts is SnapState's doing (a
#: replay child has loaded it to read payloads), so a fork listed ``dill: (none) → 0.4.1``
#: as a difference from the run it forks.
OWN_PACKAGES = frozenset({"snapstate", "dill"})


def entry_facts(options: CaptureOptions | None = None) -> dict[str, Any]:
    """How to start this program again: ``{"kind": "script"|"module"|"unknown", ...}``.

    A script gives its absolute ``path`` (and ``argv0``, the name it was started by, when that
    is another: ``script_name``); ``python -m pkg`` gives ``module``; both give ``argv``
    (arguments after the program name), ``cwd`` and ``env`` (the variables named in
    ``options.entry_env`` that are set, secret names left out). The recorder adds ``block``
    (which ``record`` block of the process this run is) and ``rng`` (saved generator states);
    ``function_entry`` describes an importable workflow function instead. A wrapper that runs
    the program inside its own ``record`` block (``snapstate record``) adds ``record``: that
    block's keyword arguments, so replay wraps the program the same way.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    argv = list(sys.argv[1:])
    cwd = os.getcwd()
    env = chosen_env(options)
    if spec is not None and getattr(spec, "name", None) not in (None, "__main__"):
        return {"kind": "module", "module": spec.name, "argv": argv, "cwd": cwd, "env": env}
    path = getattr(main, "__file__", None)
    if path:
        return {"kind": "script", "path": os.path.abspath(path), "argv": argv, "cwd": cwd,
                "env": env, **script_name(sys.argv[0] if sys.argv else path, path)}
    return {"kind": "unknown", "argv": argv, "cwd": cwd, "env": env}


def script_name(typed: str, path: str) -> dict[str, str]:
    """``{"argv0": typed}`` when the script was started by another name than its absolute
    path (``python agent.py``: ``sys.argv[0]`` is ``agent.py``), so replay gives the program
    the ``sys.argv`` it had — a traced ``main(argv)`` diverged there (helper-39: 3 of 3);
    ``{}`` when they are the same."""
    return {"argv0": typed} if typed and typed != os.path.abspath(path) else {}


def chosen_env(options: CaptureOptions | None) -> dict[str, str]:
    """The values of ``options.entry_env`` variables that are set, without secret names."""
    from ..options import CaptureOptions

    options = options or CaptureOptions()
    return {name: os.environ[name] for name in options.entry_env
            if name in os.environ and not options.values.is_secret(name)}


def function_entry(func: Any, arguments: dict[str, str], options: CaptureOptions | None = None
                   ) -> dict[str, Any] | None:
    """Entry for a run started by calling an importable ``@record``-decorated function:
    ``{"kind": "function", "module", "qualname", "args": arguments, "cwd", "env", "argv"}``.

    ``arguments`` is the value ref (``{"b": blob key, "s": serializer}``) of the pickled
    ``(args, kwargs)``. Returns None when the
    function is not importable by name (defined in ``__main__``, a closure, a lambda): such a
    run is started again through its script instead.
    """
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", "")
    if not module or module == "__main__" or "<locals>" in qualname or "<lambda>" in qualname:
        return None
    target = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is None:
        return None
    return {"kind": "function", "module": module, "qualname": qualname, "args": arguments,
            "argv": list(sys.argv[1:]), "cwd": os.getcwd(), "env": chosen_env(options)}


#: dist -> (the module object the version was read for, its version or None).
_versions: dict[str, tuple[Any, str | None]] = {}


def environment_facts() -> dict[str, Any]:
    """Python version, platform, host, cwd, argv, pid and versions of key packages in use
    (``KEY_PACKAGES`` the program has imported, and ``OWN_PACKAGES`` always)."""
    packages: dict[str, str] = {}
    try:
        from importlib import metadata

        for dist in KEY_PACKAGES:
            module = "snapstate_capture" if dist == "snapstate" else dist
            loaded = sys.modules.get(module)
            if loaded is None and dist not in OWN_PACKAGES:
                continue
            known = _versions.get(dist)
            if known is None or known[0] is not loaded:
                try:
                    version: str | None = metadata.version(dist)
                except metadata.PackageNotFoundError:
                    version = None
                # metadata.version scans sys.path (~5 ms); the module in use cannot change
                # version without being imported again, so it is asked once per module object.
                known = _versions[dist] = (loaded, version)
            if known[1] is not None:
                packages[dist] = known[1]
    except Exception:  # noqa: BLE001 - environment facts are best effort
        pass
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": _platform_text(),
        "executable": sys.executable,
        "host": socket.gethostname(),
        "user": _login_name(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "argv": list(sys.argv),
        "packages": packages,
    }


@functools.cache  # libc_ver reads the interpreter's executable: once per process
def _platform_text() -> str:
    """``platform.platform()``'s text (``Linux-6.1.0-x86_64-with-glibc2.36``) without its cost:
    it asks ``uname().processor``, which runs ``uname -p`` in a child process (~10 ms, and
    a fork in the user's program); system, release and machine come from ``os.uname``."""
    name = platform.uname()
    text = f"{name.system}-{name.release}-{name.machine}"
    libc, version = platform.libc_ver()
    return f"{text}-with-{libc}{version}" if libc else text


#: The variables ``getpass.getuser`` reads, in its order, before the password database.
_LOGIN_VARIABLES = ("LOGNAME", "USER", "LNAME", "USERNAME")
#: ``_login_name`` by the values of ``_LOGIN_VARIABLES``: the password database is asked once
#: per process, not at every run's start (~25 µs: a test's start under ``pytest --snapstate``).
_login_names: dict[tuple[str | None, ...], str | None] = {}


def _login_name() -> str | None:
    """The user recording (``getpass.getuser``: $LOGNAME, $USER …, then the password
    database), or None when there is no name to be had."""
    seen = tuple(os.environ.get(name) for name in _LOGIN_VARIABLES)
    if seen in _login_names:
        return _login_names[seen]
    try:
        import getpass

        name: str | None = getpass.getuser()
    except (OSError, KeyError, ImportError):
        name = None
    if len(_login_names) > 16:
        _login_names.clear()
    _login_names[seen] = name
    return name
