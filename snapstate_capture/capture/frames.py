"""Turning live frames into stored frame records: stack walk, user-frame filter, source.

A frame record is JSON, content-addressed like every blob::

    {"function": "Agent.plan", "filename": "/abs/agent.py", "lineno": 42,
     "code": <hash of the code object>, "source": <hash of the file's text>,
     "locals": [[name, value_ref], ...]}

and a value ref is ``{"p": preview_hash, "b": payload_hash, "s": "pickle"|"dill"}`` (``b``/``s``
absent without payload). Identical frames at two steps hash the same and are stored once.

A step made in a thread-pool call that has no frame of the program's own on its thread (an
effect function submitted to the pool itself) is sited where the call was submitted
(``effects.sited_at``). Those frames are another thread's, gone on since: the stack is the
submitting chain as it was at the submit (``lineage.origin``), each frame at the line it was
at then, and without locals — what another thread holds at the moment a worker finishes is
timing, and a replay whose effects return at once saw other values at every such step.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import sysconfig
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..store.hashing import canonical_json, content_hash
from ..options import CaptureOptions
from ..program_signals import signal_of
from .valuecache import MAX_SLOTS, ValueCache, add_blob
from ..values import capture_value
from ..values.addresses import release_locals_snapshot
from . import lineage

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The inspector's package: its frames (``snapstate record`` running a program) are hidden too.
_INSPECT_DIR = os.path.join(os.path.dirname(_PACKAGE_DIR), "snapstate_inspect")
#: Both packages' folders as imported and as resolved, for a test of a resolved file name
#: (``os.path.realpath``): imported through a linked folder, snapstate's own frames
#: (``snapstate record``'s ``_run_program``) showed on effect steps' stacks, and a traced
#: replay diverged there (helper-41's runs, through a link to the checkout).
OWN_DIRS = tuple(dict.fromkeys(
    folder + os.sep for base in (_PACKAGE_DIR, _INSPECT_DIR)
    for folder in (base, os.path.realpath(base))))


def _library_dirs() -> tuple[str, ...]:
    """The folders of the running interpreter's environment, never the user's code wherever
    they are (a virtualenv inside the project folder included): the standard library,
    site-packages (every scheme ``site`` knows), the scripts folder (``bin/``, where the
    ``snapstate`` console script lives) of ``sys.prefix``, ``sys.exec_prefix`` and their base
    installation; a virtualenv's own folder (it has a ``pyvenv.cfg``) as a whole."""
    import site

    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib", "scripts")
            if k in paths}
    for prefix in {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}:
        inside = (os.path.realpath(os.getcwd()) + os.sep).startswith(
            os.path.realpath(prefix) + os.sep)
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")) and not inside:
            dirs.add(prefix)  # (a project folder that is itself the venv keeps its code)
        dirs.update(os.path.join(prefix, sub) for sub in ("bin", "Scripts", "lib", "lib64",
                                                          "Lib"))
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except (AttributeError, TypeError):  # a virtualenv's old site.py lacks them
        pass
    return tuple(sorted({os.path.realpath(d) for d in dirs if d}))


_LIBRARY_DIRS = _library_dirs()


@dataclass
class StackCapture:
    """What one stack walk produced: frame-record hashes (outermost first), the blobs they need
    (with which are manifests and which previous blob each may be stored as a delta against),
    the innermost frame's position and locals digests, and any capture errors."""

    frames: list[str] = field(default_factory=list)
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: set[str] = field(default_factory=set)
    bases: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    function: str | None = None
    filename: str | None = None
    lineno: int | None = None
    innermost_digests: dict[str, Any] = field(default_factory=dict)
    #: while the step is built: ``id(value) -> (value, detector)``, the change detector of
    #: each object pickled for it, so an object met in several frames is pickled once (the
    #: program does not run in between); emptied when the step is complete (``end_record``).
    detectors: dict[int, tuple[Any, bytes]] = field(default_factory=dict)
    #: ``[(detector, ref)]``: clean whole-value captures the tracer may take once the step is
    #: with the writer (``lent_captures.py``; traced runs only)
    offers: list[tuple[bytes, dict[str, Any]]] = field(default_factory=list)


class FrameCapturer:
    """Captures stacks under one ``CaptureOptions``; caches per file and per code object.

    ``is_library(filename)`` decides which frames are left out (snapstate's own always; stdlib and
    site-packages unless ``options.library_frames``).
    """

    def __init__(self, options: CaptureOptions) -> None:
        self.options = options
        self._file_kind: dict[str, bool] = {}
        self._sources: dict[str, tuple[str | None, bytes | None]] = {}
        self._code_hashes: dict[types.CodeType, str] = {}
        self._values = ValueCache(options)
        #: Per (code, stack position): the last frame record's blob key, dict and bytes.
        self._last_records: dict[tuple[types.CodeType, int],
                                 tuple[str, dict[str, Any], bytes]] = {}
        #: ``encryption.Sealer`` when recording with ``encrypt=True``: previews and payloads
        #: are sealed and their refs carry ``"x": key_id``.
        self.sealer: Any = None

    def lend_with(self, lent: Any) -> None:
        """Share whole-value captures with the run's tracer through ``lent``
        (``lent_captures.LentCaptures``); None stops it."""
        self._values.lent = lent

    def forget(self) -> None:
        """Forget cached captures (after a failed write: their blobs never reached the file)."""
        self._values.clear()
        self._last_records.clear()

    def end_record(self, out: StackCapture) -> None:
        """The step whose stack and values went into ``out`` is captured whole (its extras
        too): what it holds of the program's objects is let go of (``ValueCache.end_record``)."""
        self._values.end_record(out)

    def is_hidden(self, filename: str) -> bool:
        """True for frames that are never shown: snapstate's own, and library code by default."""
        hidden = self._file_kind.get(filename)
        if hidden is None:
            real = os.path.realpath(filename) if not filename.startswith("<") else filename
            if real.startswith(OWN_DIRS):
                hidden = True
            elif filename.startswith("<frozen"):
                hidden = not self.options.library_frames
            elif filename.startswith("<"):
                hidden = False  # <string>, <stdin>: code the user typed or passed with -c
            else:
                hidden = (not self.options.library_frames
                          and any(real.startswith(d + os.sep) for d in _LIBRARY_DIRS))
            self._file_kind[filename] = hidden
        return hidden

    def walk(self, frame: types.FrameType | None, root: types.FrameType | None
             ) -> list[types.FrameType]:
        """Return the visible frames from ``root`` (inclusive) down to ``frame``, outermost first.

        When ``root`` is not an ancestor of ``frame`` (another thread or task), the walk goes to
        the bottom of ``frame``'s stack.
        """
        chain: list[types.FrameType] = []
        submitted = _submitted_lines(frame)  # another thread's frames, as at the submit
        callers = None if submitted is None else dict(zip(submitted, list(submitted)[1:]))
        current = frame
        while current is not None:
            if not self.is_hidden(current.f_code.co_filename):
                chain.append(current)
            if current is root:
                break
            if callers is not None:
                current = callers.get(current)
            elif current.f_back is not None:
                current = current.f_back
            else:
                current = getattr(_linked, "callers", {}).get(current)
        chain.reverse()
        return chain

    def capture(self, frames: list[types.FrameType], *, innermost_lineno: int | None = None
                ) -> StackCapture:
        """Capture ``frames`` (outermost first) into frame records; never raises.

        Values are cached per slot *of the capturing thread* (``_frame_record``): a thread
        writes each step before it captures its next, so a value its own last capture made is
        stored; another thread's capture of the same function may be in a step not written yet
        (a kill then would leave this step naming blobs the file never got)."""
        out = StackCapture()
        lane = threading.get_ident()
        submitted = _submitted_lines(frames[-1]) if frames else None
        for position, frame in enumerate(frames):
            innermost = position == len(frames) - 1
            try:
                if submitted is not None and frame in submitted:  # no locals (docstring)
                    record, digests = self._record(frame, submitted[frame], [], out), {}
                    record["submitted"] = True
                else:
                    record, digests = self._frame_record(frame, out, position, lane)
            except Exception as exc:  # noqa: BLE001 - recorded as a capture error, not raised
                if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                    raise  # the program's signal handler raised it here: the program's
                out.errors.append(f"frame {frame.f_code.co_name}: {type(exc).__name__}: {exc}")
                continue
            slot = (frame.f_code, position)
            last = self._last_records.get(slot)
            if last is not None and last[1] == record:
                key, data = last[0], last[2]  # same refs, same line: same bytes, not re-encoded
                out.blobs[key] = data
            else:
                data = canonical_json(record)
                key = add_blob(out, data, last[0] if last else None)
            if len(self._last_records) > MAX_SLOTS:
                self._last_records.clear()
            self._last_records[slot] = (key, record, data)
            out.frames.append(key)
            if innermost:
                out.function = record["function"]
                out.filename = record["filename"]
                out.lineno = innermost_lineno or record["lineno"]
                out.innermost_digests = digests
        return out

    def _frame_record(self, frame: types.FrameType, out: StackCapture, position: int,
                      lane: int) -> tuple[dict[str, Any], dict[str, Any]]:
        code = frame.f_code
        local_refs = []
        digests: dict[str, Any] = {}
        snapshot = frame.f_locals
        module_level = snapshot is frame.f_globals
        for name, value in list(snapshot.items()):
            if module_level and name.startswith("__") and name.endswith("__"):
                continue  # module dunders (__builtins__, __loader__, …) are noise, not state
            ref = self._ref((code, position, name, lane), value, name, out)
            local_refs.append([name, ref])
            digests[name] = ref.get("b") or ref.get("p") or ("v", type(value), value)
        value = None
        release_locals_snapshot(frame, snapshot)
        return self._record(frame, frame.f_lineno, local_refs, out), digests

    def _record(self, frame: types.FrameType, lineno: int, local_refs: list[Any],
                out: StackCapture) -> dict[str, Any]:
        """The frame record of ``frame`` at line ``lineno`` with ``local_refs``."""
        code = frame.f_code
        return {
            "function": getattr(code, "co_qualname", code.co_name),
            "filename": code.co_filename,
            "lineno": lineno,
            "code": self._code_hash(code),
            "source": self._source(code.co_filename, frame.f_globals, out),
            "locals": local_refs,
        }

    def value_ref(self, value: Any, name: str | None, out: StackCapture) -> dict[str, Any]:
        """Capture one step value (extras, return values) and return its ref; its blobs go
        into ``out``. Captured again only when it changed since the last step value of that
        name (``valuecache.py``)."""
        return self._ref(("extra", 0, name, threading.get_ident()), value, name, out,
                         inline=False)

    def _ref(self, slot: Any, value: Any, name: str | None, out: StackCapture, *,
             inline: bool = True) -> dict[str, Any]:
        if self.sealer is None:
            return self._values.ref(slot, value, name, out, inline=inline)
        return self._sealed_ref(value, name, out)

    def _sealed_ref(self, value: Any, name: str | None, out: StackCapture) -> dict[str, Any]:
        """Capture one value into sealed (encrypted) blobs: no cache, no deltas, no chunks —
        ciphertext neither compresses nor shares pieces."""
        captured = capture_value(value, name=name, options=self.options.values,
                                 payloads=self.options.payloads)
        sealer, preview = self.sealer, canonical_json(captured.preview)
        ref: dict[str, Any] = {"p": self.add_blob(out, sealer.seal(preview))}
        if captured.payload is not None:
            ref["b"] = self.add_blob(out, sealer.seal(captured.payload))
            ref["s"] = captured.serializer
        ref["x"] = sealer.key_id
        if captured.error:  # no payload, placeholder parts, or not loadable: counted on the step
            out.errors.append(f"{name}: {captured.error}")
        return ref

    def preview_ref(self, preview: Any, out: StackCapture) -> dict[str, Any]:
        """The ref of a value stored as a preview only (an effect's arguments), sealed like
        every other value in an encrypted run."""
        data = canonical_json(preview)
        if self.sealer is None:
            return {"p": self.add_blob(out, data)}
        return {"p": self.add_blob(out, self.sealer.seal(data)), "x": self.sealer.key_id}

    @staticmethod
    def add_blob(out: StackCapture, data: bytes) -> str:
        """Hash ``data``, queue it in ``out.blobs`` and return its hex key."""
        return add_blob(out, data)

    def _code_hash(self, code: types.CodeType) -> str:
        key = self._code_hashes.get(code)
        if key is None:
            key = content_hash(code.co_code + code.co_name.encode()
                               + str(code.co_firstlineno).encode()).hex()
            self._code_hashes[code] = key
        return key

    def _source(self, filename: str, module_globals: dict[str, Any], out: StackCapture
                ) -> str | None:
        cached = self._sources.get(filename)
        if cached is None:
            data = source_bytes(filename, module_globals)
            cached = (content_hash(data).hex(), data) if data is not None else (None, None)
            self._sources[filename] = cached
        key, data = cached
        if key is not None and data is not None:
            out.blobs[key] = data
        return key


def source_bytes(filename: str, module_globals: dict[str, Any] | None = None) -> bytes | None:
    """The text of ``filename`` as a saved stack keeps it: ``linecache``'s lines (its loader's
    ``get_source`` for a module that is no file), UTF-8 encoded; ``b""`` for an existing empty
    file (an empty ``__init__.py``, which ``linecache`` gives no lines for, as for a file it
    cannot read); None when there is no text. Never raises. Replay's drift check reads the
    current file through it too (``replay/drift.py``)."""
    try:
        lines = linecache.getlines(filename, module_globals)
    except Exception:  # noqa: BLE001 - a loader's get_source may raise anything
        lines = []
    if lines:
        return "".join(lines).encode("utf-8", "surrogateescape")
    try:
        return b"" if os.path.isfile(filename) and os.path.getsize(filename) == 0 else None
    except (OSError, ValueError, TypeError):
        return None



#: ``linked_caller``'s links, per thread: {frame: the frame it is called from}.
_linked = threading.local()


@contextlib.contextmanager
def linked_caller(frame: types.FrameType, caller: types.FrameType | None) -> Iterator[None]:
    """While inside, a walk up from ``frame`` goes on at ``caller`` when ``frame.f_back`` is
    None. An async generator runs with its consumer's frame unlinked when an exception is
    thrown into the consumer (CPython links a frame that throws into an awaited coroutine,
    not one that throws through an async generator's ``__anext__``): a stream effect's step
    then showed its consumer as the bottom of the stack, or not, as the stream's own code
    happened to suspend between the error and its end — the recorded stream and the served
    one differed there. ``caller``: the frame the generator runs under (its own ``f_back``),
    which is the consumer's caller then."""
    links = getattr(_linked, "callers", None)
    if caller is None or frame.f_back is not None or frame is caller:
        yield
        return
    if links is None:
        links = _linked.callers = {}
    links[frame] = caller
    try:
        yield
    finally:
        links.pop(frame, None)


def _submitted_lines(frame: types.FrameType | None) -> dict[types.FrameType, int] | None:
    """When ``frame`` is one of the frames that submitted this thread's pool call
    (``lineage.origin``): it and its callers as they were at the submit, innermost first,
    each with its line then. Else None (outside a pool call, ``origin`` is empty: no scan)."""
    origin = lineage.origin()
    if not origin or frame is None:
        return None
    for position, (submitter, _) in enumerate(origin):
        if submitter is frame:
            return dict(origin[position:])
    return None
