"""The public capture API: ``record``, ``checkpoint`` and ``@step`` (DESIGN.md "Public interface").
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Any, Callable, TypeVar

from . import nondeterminism
from .hooks import END, START, check_hooks, run_hooks
from .environment import function_entry
from .start_depth import frames_beneath
from ..store.hashing import content_hash
from ..store.locations import is_store_url, location_label
from ..options import CaptureOptions
from .recorder import DISABLE_ENV, Recorder, _active, active_recorder
from ..values import machinery
from ..values.payload import serialize

#: In a replay child, the replay session (``replay.session.ReplaySession``): it decides what each
#: ``record`` block does (``recorder_for``). None in every other process. Capture does not
#: import replay (replay is the layer above); ``replay.session.install`` sets this.
_replay_session: Any = None


def attach_replay(session: Any) -> None:
    """Hand ``record`` blocks to a replay ``session`` (None: record normally again)."""
    global _replay_session
    _replay_session = session


def replaying() -> bool:
    """Whether this process is a replay child (``snapstate replay`` re-executing a run)."""
    return _replay_session is not None


#: ``record`` blocks begun in this process so far: a run's entry stores its block's number so
#: that replay knows which block of the re-executed program is the run.
_blocks = 0

F = TypeVar("F", bound=Callable[..., Any])

class record:  # noqa: N801 - used like a function: `with record(...)`, `@record(...)`
    """Record a run into the timeline file ``path``: a context manager and a decorator.

    ``with snap.record("agent.snap", name="nightly"):`` records the block as one run;
    ``@snap.record("agent.snap")`` records each call of the function as a new run. The file is
    created (owner-only) or a run is appended to it. The run ends ``finished``, or ``failed``
    with the exception recorded (the exception still propagates); a process killed inside the
    block leaves the run ``running`` in the file, reported as ``crashed`` when read.

    Never raises because of recording: if the file cannot be written, a warning goes to stderr
    and the program runs unrecorded. ``SNAPSTATE_DISABLE=1`` turns it into a no-op.

    Arguments: ``name`` (default: the script or function name), ``options``
    (``CaptureOptions``), ``parent`` (``(run_id, step)`` for forks), ``encrypt`` (seal every
    preview and payload with AES-GCM under the user key — needs a usable key and
    ``snapstate[crypto]``; without either, the program runs unrecorded with a warning, never
    recorded in the clear), ``patch_nondeterminism`` (route clocks, ``datetime.now``/``utcnow``/
    ``today``, ``random``'s functions, ``uuid``, ``os.urandom``, ``secrets`` and ``input``
    through the effect journal while the block runs, whoever calls them; see
    ``nondeterminism.py``). Runs are signed with the user key, which
    the first record creates (``keys.ensure_key``; else unsigned, one warning).

    Each run stores its entry (how to start it again, ``environment.entry_facts``) and the
    ``random``/numpy generator states at its start, for ``snapstate replay``. Decorating an
    importable function stores the function and its pickled arguments as the entry.

    ``trace`` (None: only explicit capture points; ``"calls"``: also a step at every call,
    return and exception of included code; ``"lines"``: also at every executed line — see
    ``tracer``), ``include``/``exclude`` (file globs, see ``include.IncludeRule``; default: the
    code under the current directory). Raises ``ValueError`` for a ``trace`` other than None,
    "calls" or "lines".

    ``held=True`` (traced runs; what ``pytest --snapstate`` uses): nothing reaches the file
    while the block runs — the run's steps wait in memory, as compact as the writer process
    would have read them — and after the block ``keep()`` writes the run, whole, or
    ``discard()`` forgets it (a run neither kept nor discarded is lost). Checkpoints, effects
    and ``@step`` steps inside the block are held too: the index ``checkpoint()`` returns is
    counted in this process exactly as the writer will number the step
    (``tracing/step_tally.py``). More than 64 MB of held steps writes the run there and then
    (``discard`` then leaves it in the file). Ignored without ``trace`` or with ``encrypt``.
    """

    def __init__(self, path: str | os.PathLike[str], *, name: str | None = None,
                 trace: str | None = None, include: Any = (), exclude: Any = (),
                 options: CaptureOptions | None = None,
                 parent: tuple[str, int] | None = None,
                 entry: dict[str, Any] | None = None, encrypt: bool = False,
                 patch_nondeterminism: bool = False, integrations: Any = None,
                 held: bool = False) -> None:
        if trace not in (None, "calls", "lines"):
            raise ValueError(f"trace must be None, 'calls' or 'lines', not {trace!r}")
        self.path = path
        self.encrypt = encrypt
        self.name = name
        self.trace = trace
        self.include = (include,) if isinstance(include, str) else tuple(include)
        self.exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude)
        self.options = options or CaptureOptions()
        self.parent = parent
        self.entry = entry
        self.patch_nondeterminism = patch_nondeterminism
        self.held = held
        self.integrations = (integrations if integrations is None or isinstance(integrations, str)
                             else tuple(integrations))
        self.recorder: Recorder | None = None
        self._patched = False
        check_hooks(self)

    def _copy(self) -> record:
        return record(self.path, name=self.name, trace=self.trace, include=self.include,
                      exclude=self.exclude, options=self.options, parent=self.parent,
                      entry=self.entry, encrypt=self.encrypt,
                      patch_nondeterminism=self.patch_nondeterminism,
                      integrations=self.integrations, held=self.held)

    @property
    def run_id(self) -> str | None:
        """The id of the run this block recorded (None before it started or if disabled)."""
        return self.recorder.run_id if self.recorder else None

    def keep(self) -> bool:
        """After a ``held=True`` block: write its run to the file and wait until it is stored.
        True when the run is in the file; False when it could not be written or nothing was
        recorded (disabled, or the recording could not start). Never raises."""
        return self.recorder.keep() if self.recorder else False

    def discard(self) -> None:
        """After a ``held=True`` block: forget its run (nothing of it is written)."""
        if self.recorder:
            self.recorder.discard()

    def _begin(self, root: Any, default_name: str, call: tuple[Any, tuple, dict] | None = None
               ) -> None:
        global _blocks
        if os.environ.get(DISABLE_ENV) == "1":
            return
        block, _blocks = _blocks, _blocks + 1
        session = _replay_session
        if session is not None:  # a replay child: the session decides what this block does
            recorder: Recorder | None = session.recorder_for(
                block, root=root, name=self.name or default_name, options=self.options,
                trace=self.trace, include=self.include, exclude=self.exclude)
        else:
            entry, blobs = self.entry, None
            if entry is None and call is not None:
                entry, blobs = _function_entry(call, self.options)
                if entry is not None:  # the replay calls the function as deep (start_depth)
                    entry["start_depth"] = frames_beneath(root)
            recorder = Recorder(self.path, name=self.name or default_name,
                                options=self.options, root=root, parent=self.parent,
                                entry=entry, encrypt=self.encrypt, block=block,
                                entry_blobs=blobs, trace=self.trace, include=self.include,
                                exclude=self.exclude, held=self.held)
        if recorder is not None and recorder.start():
            self.recorder = recorder
            _active.append(recorder)
            if self.patch_nondeterminism:
                nondeterminism.patch_nondeterminism()
                self._patched = True
            run_hooks(START, self)

    def _end(self, exc: BaseException | None) -> None:
        recorder, self.recorder = self.recorder, None
        if self._patched:
            nondeterminism.unpatch_nondeterminism()
            self._patched = False
        if recorder is None:
            return
        # Not imported here: no ``Paused`` was raised if ``waits`` was never imported, and an
        # import at the block's end is traced as a step (``--include '*'``) a replay lacks.
        waits = sys.modules.get("snapstate_capture.capture.waits")
        paused = waits.Paused if waits is not None else ()
        if exc is not None and not isinstance(exc, paused) and not (
                isinstance(exc, SystemExit) and exc.code in (0, None)):
            recorder.capture_exception(exc)
        if recorder in _active:
            _active.remove(recorder)
        recorder.finish(exc)
        self.recorder = recorder  # keep run_id readable after the block
        run_hooks(END, self)

    def __enter__(self) -> record:
        caller = sys._getframe(1)
        self._begin(caller, _default_name(caller))
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._end(exc)

    def __call__(self, func: F) -> F:
        """Decorate ``func`` so each call is recorded as a new run."""
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                block = self._copy()
                block._begin(sys._getframe(0), block.name or func.__qualname__,
                             (run_async, args, kwargs))
                try:
                    result = await func(*args, **kwargs)
                except BaseException as exc:
                    block._end(exc)
                    raise
                block._end(None)
                return result
            return run_async  # type: ignore[return-value]

        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            block = self._copy()
            block._begin(sys._getframe(0), block.name or func.__qualname__, (run, args, kwargs))
            try:
                result = func(*args, **kwargs)
            except BaseException as exc:
                block._end(exc)
                raise
            block._end(None)
            return result
        return run  # type: ignore[return-value]


def _describe_recording(obj: Any) -> str:
    """``file=agent.snap`` (or ``store=<url>``) for a ``record`` block or ``Recorder`` in a
    frame's locals: what it writes to, never the rest of the recorder."""
    path = machinery.field(obj, "path")
    if not isinstance(path, (str, os.PathLike)):
        return ""
    if is_store_url(path):  # as messages name it, without its password (nor its query)
        return f"store={machinery.text(str(location_label(path)).split('?', 1)[0], 80)}"
    return f"file={machinery.text(os.path.basename(os.fspath(path)), 80)}"


# ``with snap.record(path) as rec:`` binds the block (and its recorder) in the program's frame:
# SnapState's own state, not the program's — previewed, never pickled at each step.
machinery.register([f"{record.__module__}.record", f"{Recorder.__module__}.Recorder"],
                   _describe_recording)


def _function_entry(call: tuple[Any, tuple, dict], options: CaptureOptions
                    ) -> tuple[dict[str, Any] | None, dict[str, bytes] | None]:
    """Entry (and its arguments blob) for a call of an importable ``@record`` function, or
    ``(None, None)`` to fall back to the script entry. Never raises."""
    wrapper, args, kwargs = call
    try:
        result = serialize((args, kwargs), options.values)
        if result.data is None or result.serializer is None:
            return None, None
        data = result.data
        key = content_hash(data).hex()
        entry = function_entry(wrapper, {"b": key, "s": result.serializer}, options)
        return (entry, {key: data}) if entry else (None, None)
    except Exception:  # noqa: BLE001 - the entry is best effort; recording goes on
        return None, None


def _default_name(frame: Any) -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path:
        return os.path.splitext(os.path.basename(path))[0]
    return frame.f_code.co_name if frame is not None else "run"


def checkpoint(label: str | None = None, **extra: Any) -> int | None:
    """Capture a ``checkpoint`` step: the whole stack from the record root to the caller, each
    frame's locals, and ``extra`` values stored with the step.

    Returns the step index, or None outside a ``record`` block (a cheap no-op there) or when the
    step could not be written. Never raises.
    """
    recorder = active_recorder()
    if recorder is None:
        return None
    return recorder.capture("checkpoint", sys._getframe(1), label=label, extra=extra or None)


def step(func: F | None = None, *, label: str | None = None) -> Any:
    """Decorator: a ``call`` step at entry (the arguments) and a ``return`` step at exit with
    the return value, or an ``exception`` step with the locals at the raise point.

    Works on plain and ``async`` functions, bare (``@step``) or with a label
    (``@step(label="plan")``). Outside a ``record`` block it only calls the function.
    """
    def decorate(fn: F) -> F:
        name = label or fn.__qualname__
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                recorder = active_recorder()
                if recorder is None:
                    return await fn(*args, **kwargs)
                caller = sys._getframe(0)
                recorder.capture("call", caller, label=name,
                                 extra=_arguments(fn, args, kwargs))
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    recorder.capture_exception(exc)
                    raise
                recorder.capture("return", caller, label=name, extra={"return": result})
                return result
            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            recorder = active_recorder()
            if recorder is None:
                return fn(*args, **kwargs)
            caller = sys._getframe(0)
            recorder.capture("call", caller, label=name, extra=_arguments(fn, args, kwargs))
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                recorder.capture_exception(exc)
                raise
            recorder.capture("return", caller, label=name, extra={"return": result})
            return result
        return wrapper  # type: ignore[return-value]

    return decorate(func) if func is not None else decorate


def _arguments(fn: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Any]:
    """Bind ``args``/``kwargs`` to ``fn``'s parameter names (falls back to ``args``/``kwargs``)."""
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
        return dict(bound.arguments)
    except (TypeError, ValueError):
        return {"args": args, "kwargs": kwargs}
