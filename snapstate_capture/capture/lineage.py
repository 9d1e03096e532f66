"""Lineage: which thread, asyncio task or thread-pool call made a step or an effect.

A lineage names a unit of concurrent work by who spawned it and in which order — never by its
name (``Task-7``, ``ThreadPoolExecutor-0_3`` follow global counters and timing). It is a path:
``main`` is the thread that started the run; each spawn adds one segment to the spawner's
lineage — ``t2`` its third asyncio task, ``h0`` its first thread, ``p4`` its fifth call
submitted to a thread pool (``concurrent.futures.ThreadPoolExecutor``, so also
``loop.run_in_executor`` and ``asyncio.to_thread``; AnyIO's ``to_thread.run_sync`` alike) —
e.g. ``main/t0/t1``. A program spawns in program order, so replay gives every unit the lineage
it had when recorded, however the scheduler interleaves them. A pool call is its own lineage
(not its worker thread's): which worker runs which call is timing.

Spawns are counted per run: ``begin_run()`` (each recorder start) forgets the previous run's
lineages. Threads and tasks that existed before the run get one by first sight instead —
``main/u0`` for the first such task seen in the main thread, ``x0`` for the first such thread —
which is deterministic only when their first steps are (typically the task that started the
``record`` block: the only one).

Hooks, installed by the first run and kept (each passes straight through while no recorder is
active): ``threading.Thread.start``; ``asyncio``'s ``BaseEventLoop.create_task`` (every task is
created there: ``asyncio.create_task``, ``gather``, ``TaskGroup``, ``asyncio.run``);
``asyncio.as_completed`` (its coroutines made tasks in the program's order, not a set's);
``concurrent.futures.thread._WorkItem``; AnyIO's ``run_sync_in_worker_thread``. Modules not
imported yet are hooked when they are (``imports.when_imported``). An event loop that does not
derive from ``BaseEventLoop`` (uvloop) creates tasks unseen: they get first-sight lineages.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Callable

from . import imports
from ..program_signals import signal_of

ROOT = "main"

_lock = threading.Lock()
#: Per-run state (see ``begin_run``): lineage of each known thread and task, spawn counters.
_threads: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_tasks: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_counts: dict[tuple[str, str], int] = {}
_generation = 0


class _PerThread(threading.local):
    """What each thread keeps at hand: the pool call it runs (``work``: a worker's lineage
    while it runs that call; ``origin``: the frames that submitted it), its own lineage in
    the current run (``thread``), an eager task's lineage before its first step (``eager``).
    Class-level defaults, so a thread that has none reads None without the AttributeError a
    ``getattr(local, name, None)`` raises and catches (~0.35 µs, at every traced call)."""

    work: Any = None
    origin: Any = None
    thread: Any = None
    eager: Any = None


_local = _PerThread()
_active: Callable[[], bool] = lambda: False  # noqa: E731 - set by install()


def begin_run(active: Callable[[], bool]) -> None:
    """Start counting spawns afresh for a new run (the thread calling it is ``main``) and make
    sure the hooks are installed. ``active()`` says whether a recorder is running: spawns
    outside one are not counted. Never raises."""
    global _active, _generation
    with _lock:
        _threads.clear()
        _tasks.clear()
        _counts.clear()
        _generation += 1
        _active = active
    _remember(_threads, threading.current_thread(), ROOT)
    install()


def _next(parent: str, kind: str) -> str:
    with _lock:
        n = _counts.get((parent, kind), 0)
        _counts[(parent, kind)] = n + 1
    return f"{parent}/{kind}{n}"


def _thread_lineage() -> str:
    """The lineage of the calling thread, or of the pool call it is running.

    A thread's lineage, once given in a run, never changes (``_remember`` keeps the first), so
    the thread keeps it at hand (``_local.thread``: the run's generation and the name) instead
    of looking itself up at every call step (``current_thread`` and a weak-key lookup: ~1 µs,
    an eighth of a small traced call)."""
    work = _local.work
    if work is not None and work[0] == _generation:
        return work[1]
    mine = _local.thread
    if mine is not None and mine[0] == _generation:
        return mine[1]
    generation = _generation  # read first: a run begun meanwhile leaves this one stale
    thread = threading.current_thread()
    try:
        known = _threads.get(thread)
    except TypeError:  # not weakly referable: named at each sight, never kept
        return _next("", "x").lstrip("/")
    if known is None:
        known = _remember(_threads, thread, _next("", "x").lstrip("/"))
    _local.thread = (generation, known)
    return known


def _remember(table: weakref.WeakKeyDictionary[Any, str], unit: Any, name: str) -> str:
    """``table[unit] = name`` unless it has one already; the name it has."""
    with _lock:
        try:
            return table.setdefault(unit, name)
        except TypeError:  # not weak-referenceable: named again at each sight
            return name


def _current_task() -> Any:
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    running = getattr(asyncio, "_get_running_loop", None)
    current_task = getattr(asyncio, "current_task", None)
    if running is None or current_task is None:
        return None  # asyncio is being imported (its body traced): no task can run yet
    try:
        if running() is None:
            return None
        return current_task()
    except RuntimeError:
        return None


def current() -> str:
    """The lineage of the calling code: its asyncio task's, else its pool call's or thread's.

    A task seen for the first time that was not created through a hook gets a first-sight
    lineage under its thread's (see the module docstring). Never raises.
    """
    try:
        return _lineage_of(_current_task())
    except Exception as exc:  # noqa: BLE001 - a name for the journal, never an error
        if exc.__class__ is not RecursionError and signal_of(exc) is not None:
            raise  # the program's signal handler raised it here
        return "?"


def current_and_task_name() -> tuple[str | None, str]:
    """``(the running asyncio task's name or None, current())`` — what a traced call step
    records — looking the task up once for both. Never raises."""
    try:
        task = _current_task()
        name = task.get_name() if task is not None else None
    except Exception as exc:  # noqa: BLE001 - a name for the journal, never an error
        if exc.__class__ is not RecursionError and signal_of(exc) is not None:
            raise  # the program's signal handler raised it here
        return None, "?"
    try:
        return name, _lineage_of(task)
    except Exception as exc:  # noqa: BLE001 - a name for the journal, never an error
        if exc.__class__ is not RecursionError and signal_of(exc) is not None:
            raise  # the program's signal handler raised it here
        return name, "?"


def _lineage_of(task: Any) -> str:
    """The lineage of ``task`` (None: of the calling thread or the pool call it runs)."""
    if task is None:
        return _thread_lineage()
    known = _tasks.get(task)
    if known is None:
        pending = _local.eager
        if pending is not None and pending[0] == _generation:  # an eager task's first step
            known, _local.eager = pending[1], None
        else:
            known = _next(_thread_lineage(), "u")
        known = _remember(_tasks, task, known)
    return known


#: Frames of a submitter kept for ``origin`` (a pool call's siting needs the nearest few).
_ORIGIN_DEPTH = 64


def _callers(depth: int) -> tuple:
    """The calling frames from ``depth`` up, innermost first (at most ``_ORIGIN_DEPTH``),
    each with the line it is at now: ``(frame, line)`` pairs."""
    frames, frame = [], sys._getframe(depth)
    while frame is not None and len(frames) < _ORIGIN_DEPTH:
        frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    return tuple(frames)


def origin() -> tuple:
    """The frames that submitted the thread-pool call running in this thread, innermost
    first (``ThreadPoolExecutor.submit`` and its callers), each with the line it was at when
    it submitted the call — ``(frame, line)`` pairs —, or () outside a pool call submitted
    while recording. A tool run in a framework's pool has no frame of the program's own on its
    thread: its steps are sited at the code that submitted it, at that line (the frame itself
    has gone on by the time the call runs or returns, as far as timing takes it)."""
    return _local.origin or ()


def _spawner() -> str | None:
    """The lineage spawning something now, or None when no run is being recorded."""
    try:
        return current() if _active() else None
    except Exception:  # noqa: BLE001
        return None


# -- hooks ---------------------------------------------------------------------------------------
_installed: set[str] = set()
_ASYNCIO, _POOL = "asyncio.base_events", "concurrent.futures.thread"
_TASKS, _ANYIO = "asyncio.tasks", "anyio._backends._asyncio"


def install() -> None:
    """Install the hooks that are not yet (``threading`` now; ``asyncio`` and the thread pool
    now if imported, else when they are). Never raises."""
    if "threading" not in _installed:
        _installed.add("threading")
        _hook_threads()
    for module, hook in ((_ASYNCIO, _hook_asyncio), (_TASKS, _hook_as_completed),
                         (_POOL, _hook_pool), (_ANYIO, _hook_anyio)):
        if module not in _installed:
            imports.when_imported(module, hook)


def _hook_threads() -> None:
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        parent = _spawner()
        if parent is not None and not str(getattr(self, "name", "")).startswith("snapstate-"):
            _remember(_threads, self, _next(parent, "h"))  # (snapstate's own are not counted)
        return original(self)

    start.__wrapped__ = original  # type: ignore[attr-defined]
    start.__doc__ = original.__doc__
    threading.Thread.start = start  # type: ignore[method-assign]


def _hook_asyncio(module: Any) -> None:
    if _ASYNCIO in _installed:
        return
    _installed.add(_ASYNCIO)
    loop_class = module.BaseEventLoop
    original = loop_class.create_task

    def create_task(self: Any, coro: Any, *args: Any, **kwargs: Any) -> Any:
        parent = _spawner()
        if parent is None:
            return original(self, coro, *args, **kwargs)
        child = _next(parent, "t")
        # An eager task (3.12's eager_task_factory) runs its first step before this returns.
        _local.eager = (_generation, child)
        try:
            task = original(self, coro, *args, **kwargs)
        finally:
            _local.eager = None
        _remember(_tasks, task, child)
        return task

    create_task.__wrapped__ = original  # type: ignore[attr-defined]
    create_task.__doc__ = original.__doc__
    loop_class.create_task = create_task


def _hook_as_completed(module: Any) -> None:
    """``asyncio.as_completed(coroutines)`` wraps its coroutines in tasks in the order of a set
    of them, which their addresses decide: another order in every process, and the tasks'
    lineages (``t0``, ``t1`` …: creation order) named differently on replay. While a run is
    recorded (or replayed) they are wrapped in tasks first, in the order the program gave them;
    as_completed then gets the tasks. Elsewhere it is asyncio's own, untouched."""
    if _TASKS in _installed:
        return
    _installed.add(_TASKS)
    original = module.as_completed

    def as_completed(fs: Any, *args: Any, **kwargs: Any) -> Any:
        if (_spawner() is not None and not isinstance(fs, (set, frozenset))
                and not module.futures.isfuture(fs) and not module.coroutines.iscoroutine(fs)
                and module.events._get_running_loop() is not None):
            fs = list(fs)
            try:
                coroutines = [f for f in dict.fromkeys(fs) if module.coroutines.iscoroutine(f)]
            except TypeError:  # an unhashable awaitable: as asyncio's own does
                coroutines = []
            tasks = {f: module.ensure_future(f) for f in coroutines}
            fs = [tasks.get(f, f) for f in fs] if tasks else fs
        return original(fs, *args, **kwargs)

    as_completed.__wrapped__ = original  # type: ignore[attr-defined]
    as_completed.__doc__ = original.__doc__
    module.as_completed = as_completed
    package = sys.modules.get("asyncio")
    if package is not None and getattr(package, "as_completed", None) is original:
        package.as_completed = as_completed  # imported already: ``asyncio.as_completed`` too


def _hook_pool(module: Any) -> None:
    if _POOL in _installed:
        return
    _installed.add(_POOL)
    item_class = module._WorkItem
    original_init, original_run = item_class.__init__, item_class.run

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        parent = _spawner()
        if parent is not None:
            try:
                # the submitting frames (``submit`` and its callers, read now: a suspended
                # generator on the way has no caller later): a pool call's steps are sited
                # where the code that submitted it stands (``origin``)
                self._snapstate_lineage = (_generation, _next(parent, "p"), _callers(2))
            except Exception:  # noqa: BLE001 - a work item we cannot mark runs unmarked
                pass

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        work = getattr(self, "_snapstate_lineage", None)
        if work is None:
            return original_run(self, *args, **kwargs)
        return _run_as(work, original_run, self, *args, **kwargs)

    __init__.__wrapped__ = original_init  # type: ignore[attr-defined]
    run.__wrapped__ = original_run  # type: ignore[attr-defined]
    item_class.__init__ = __init__
    item_class.run = run


def _run_as(work: tuple, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``function`` in this thread as the pool call ``work`` (generation, lineage,
    submitting frames): its steps are that call's, not the worker thread's."""
    previous, _local.work = _local.work, work[:2]
    _local.origin = work[2]
    try:
        return function(*args, **kwargs)
    finally:
        _local.work = previous
        _local.origin = None


class _PoolCall:
    """A function handed to AnyIO's worker threads, marked with the pool call it is
    (``_hook_anyio``); called as the function it wraps."""

    __slots__ = ("function", "work")

    def __init__(self, function: Callable[..., Any], work: tuple) -> None:
        self.function, self.work = function, work

    def __call__(self, *args: Any) -> Any:
        return _run_as(self.work, self.function, *args)


def _hook_anyio(module: Any) -> None:
    """AnyIO's ``to_thread.run_sync`` (pydantic-ai runs sync tools and models through it)
    hands each call to a worker thread it keeps and reuses, whichever is idle. Each call is a
    pool call of the task submitting it (``p<n>``), as a ``ThreadPoolExecutor`` call is;
    before, a call's steps were the worker thread's, named after the task that happened to
    start it — another in a replay."""
    if _ANYIO in _installed:
        return
    backend = getattr(module, "AsyncIOBackend", None)
    method = getattr(backend, "__dict__", {}).get("run_sync_in_worker_thread")
    if not isinstance(method, classmethod):
        return  # another AnyIO than the one read: its calls stay their threads'
    _installed.add(_ANYIO)
    original = method.__func__

    async def run_sync_in_worker_thread(cls: Any, func: Any, args: Any, *rest: Any,
                                        **kwargs: Any) -> Any:
        parent = _spawner()
        if parent is not None:
            try:
                func = _PoolCall(func, (_generation, _next(parent, "p"), _callers(2)))
            except Exception:  # noqa: BLE001 - a call we cannot mark runs unmarked
                pass
        return await original(cls, func, args, *rest, **kwargs)

    run_sync_in_worker_thread.__wrapped__ = original  # type: ignore[attr-defined]
    backend.run_sync_in_worker_thread = classmethod(run_sync_in_worker_thread)


def ancestors(lineage: str) -> list[str]:
    """The lineages that spawned ``lineage``, nearest first (``main/t0/p2``: ``["main/t0",
    "main"]``)."""
    found = []
    while "/" in lineage:
        lineage = lineage.rpartition("/")[0]
        found.append(lineage)
    return found


def spawned(lineage: str, ancestor: str) -> bool:
    """Whether ``ancestor`` (a lineage ``lineage`` is beneath) has spawned, in this run so
    far, its child on the way to ``lineage`` (``main/t0`` and ``main/t0/p2/h0``: whether
    ``main/t0`` made its third pool call). True for a child named by first sight."""
    segment = lineage[len(ancestor) + 1:].split("/", 1)[0]
    kind, number = segment[:1], segment[1:]
    if kind not in ("t", "h", "p") or not number.isdigit():
        return True
    with _lock:
        return _counts.get((ancestor, kind), 0) > int(number)
