"""Framework calls as effects: a model or tool call keyed by its logical identity.

``call_effect(name, key, fn, args, kwargs, digest)`` runs ``fn(*args, **kwargs)`` as an effect
of the active recorder (or just runs it outside a ``record`` block, inside another effect, or
when capture cannot key it). ``key`` is a ``Key``: the journal lineage (``lane``, e.g.
``"langgraph tool call_abc"`` for a tool call or ``"langgraph agent@1"`` for the model calls
of node ``agent`` at super-step 1) and a ``site`` naming the seam, so parallel tool calls in a
thread pool and library-made thread names never decide which recorded result is served.
``digest`` is the plain data compared on replay (a semantic digest of the messages: role,
content, tool calls — no library-made ids, timestamps or run ids).

``acall_effect`` is the same for coroutine functions, ``stream_effect``/``astream_effect``
for (async) iterators: the chunks are collected while the program consumes them and the list
is the recorded result; replay yields the recorded chunks without running the call.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Iterator

from ..capture import cancelled_effects, effects
from ..capture import lineage, loop_passes
from ..capture.frames import linked_caller
from ..capture.recorder import active_recorder


@dataclass(frozen=True)
class Key:
    """An effect's logical identity: ``site`` (the seam, e.g. ``"langchain.tool read_notes"``)
    and ``lane`` (the lineage the call is ordered in; None: the calling task or thread)."""

    site: str
    lane: str | None = None


def semantic_digest(plain: Any) -> str:
    """The digest compared on replay for ``plain`` (``messages.digest``'s output): its value
    identity, ``"i:"`` + digest (docs/value-identity.md: the same in every process — sets by
    members, functions by name and code), as every effect's arguments are
    (``effects.arguments_digest``). Journals written before keep the hex digest of the
    canonical JSON and are still matched (``effects.arguments_match``)."""
    return effects.arguments_digest(plain)


def lane_or_current(lane: str | None) -> str:
    """``lane``, else the calling code's lineage (``capture/lineage.py``)."""
    return lane or lineage.current()


def begin(name: str, key: Key, fn: Callable[..., Any], args: tuple, kwargs: dict,
          digest: dict[str, Any]) -> tuple[Any, Any] | None:
    """Key effect ``name`` for a call the caller runs itself (a stream whose consumer runs in
    between): ``(recorder, call)`` — ``call.served`` says replay has its result in
    ``call.outcome``/``call.value`` — or None when it runs unrecorded. The caller sets the
    outcome and ends it with ``effects.end_call(recorder, call)``."""
    recorder = active_recorder()
    if recorder is None or effects._inside.get():
        return None
    call = effects.begin_call(recorder, name, fn, args, kwargs, sys._getframe(2),
                              site=key.site, task=lane_or_current(key.lane), arguments=digest,
                              digest=semantic_digest(digest))
    if call is None:
        return None
    return recorder, call


def call_effect(name: str, key: Key, fn: Callable[..., Any], args: tuple, kwargs: dict,
                digest: dict[str, Any]) -> Any:
    """Run ``fn`` as effect ``name`` under ``key`` (see module docstring); returns or raises
    what ``fn`` did (on replay: what it did when recorded)."""
    begun = begin(name, key, fn, args, kwargs, digest)
    if begun is None:
        return fn(*args, **kwargs)
    recorder, call = begun
    effects.run_call(call)
    return effects.end_call(recorder, call)


async def acall_effect(name: str, key: Key, fn: Callable[..., Any], args: tuple, kwargs: dict,
                       digest: dict[str, Any]) -> Any:
    """``call_effect`` for a coroutine function ``fn``."""
    begun = begin(name, key, fn, args, kwargs, digest)
    if begun is None:
        return await fn(*args, **kwargs)
    recorder, call = begun
    if not call.served:
        await effects.await_live(recorder, call)
        token = effects._inside.set(True)
        since = cancelled_effects.started()
        mark = loop_passes.before_call()
        try:
            call.value = await fn(*args, **kwargs)
            call.outcome = "return"
        except effects._PASS_THROUGH:
            raise
        except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised by end_call
            call.outcome, call.value = "raise", exc
            cancelled_effects.note(call, since)
        finally:
            effects._inside.reset(token)
            call.passes = loop_passes.passes_since_previous(mark)
            call.suspended = loop_passes.suspended(mark)
    else:  # in the recorded order; one cancelled when recorded waits to be cancelled again
        await cancelled_effects.served(call, getattr(recorder, "await_turn_async", None))
    return effects.end_call(recorder, call)


def stream_effect(name: str, key: Key, fn: Callable[..., Iterator[Any]], args: tuple,
                  kwargs: dict, digest: dict[str, Any]) -> Iterator[Any]:
    """Run the iterator ``fn(*args, **kwargs)`` as one effect whose result is its chunks; a
    consumer that stops taking them (closes the stream: a ``break`` out of its loop) makes
    the result the chunks it got, so a replay serves those and stops there too."""
    begun = begin(name, key, fn, args, kwargs, digest)
    if begun is None:
        yield from fn(*args, **kwargs)
        return
    recorder, call = begun
    if not call.served:
        chunks: list[Any] = []
        iterator: Any = None
        stopped = False
        token = effects._inside.set(True)
        try:
            iterator = fn(*args, **kwargs)
            for chunk in iterator:
                chunks.append(chunk)
                effects._inside.reset(token)
                try:
                    yield chunk
                except GeneratorExit:  # the consumer stopped: it got these chunks
                    stopped = True
                    break
                finally:
                    token = effects._inside.set(True)
            if stopped:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            call.value, call.outcome = chunks, "return"
        except effects._PASS_THROUGH:
            raise
        except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised by end_call
            call.outcome, call.value, call.chunks = "raise", exc, chunks or None
        finally:
            effects._inside.reset(token)
        effects.end_call(recorder, call)
        return
    # the effect step comes after the chunks, as when recorded (the consumer's steps first),
    # or where the consumer stopped taking them; one that raised gives the chunks it gave
    # first, then raises
    try:
        yield from _served_chunks(call)
    except GeneratorExit:
        pass
    effects.end_call(recorder, call)


async def _one_pass() -> None:
    """Yield one pass of the running asyncio loop (nothing under another event loop)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return
    try:
        if asyncio.current_task() is None:
            return
    except RuntimeError:
        return
    await asyncio.sleep(0)


def _served_chunks(call: Any) -> list[Any]:
    """The chunks a served stream gives: its result, or, when it raised, those its consumer
    got before the error (none in a file recorded before they were kept)."""
    return list((call.value if call.outcome == "return" else call.chunks) or [])


async def astream_effect(name: str, key: Key, fn: Callable[..., AsyncIterator[Any]],
                         args: tuple, kwargs: dict, digest: dict[str, Any]
                         ) -> AsyncIterator[Any]:
    """``stream_effect`` for an async iterator (the SDK's ``stream_response``)."""
    begun = begin(name, key, fn, args, kwargs, digest)
    if begun is None:
        async for chunk in fn(*args, **kwargs):
            yield chunk
        return
    recorder, call = begun
    if call.served:
        # a pass of the event loop before each chunk, as the recorded stream's came (another
        # task streaming meanwhile ran in between); none when none of its chunks suspended
        passes = call.suspended is not False
        try:
            for chunk in _served_chunks(call):
                if passes:
                    await _one_pass()
                yield chunk
        except GeneratorExit:  # where the consumer stopped, as when recorded
            pass
        else:  # the end, or the error, came on a wait of its own too; a cancellation is
            # the program's own, and comes again while the call waits for it
            if passes and not (call.outcome == "raise"
                               and cancelled_effects.is_cancellation(call.value)):
                await _one_pass()
            await cancelled_effects.served(call, None)
        with linked_caller(call.frame, sys._getframe().f_back):
            effects.end_call(recorder, call)  # after the chunks, as when recorded
        return
    await effects.await_live(recorder, call)
    since = cancelled_effects.started()
    chunks: list[Any] = []
    iterator = None
    done = False
    stopped = False
    try:
        # the call's own work (its ids, clocks) is part of this effect; the consumer's,
        # between two chunks, is not
        token = effects._inside.set(True)
        try:
            iterator = fn(*args, **kwargs).__aiter__()
        finally:
            effects._inside.reset(token)
        call.suspended = False  # until a chunk's wait suspends (``loop_passes``)
        while True:
            token = effects._inside.set(True)
            mark = loop_passes.before_call()
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                break
            finally:
                effects._inside.reset(token)
                if loop_passes.suspended(mark):
                    call.suspended = True
            chunks.append(chunk)
            try:
                yield chunk
            except GeneratorExit:  # the consumer stopped: it got these chunks
                stopped = True
                break
        call.value, call.outcome, done = chunks, "return", not stopped
    except effects._PASS_THROUGH:
        raise
    except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised by end_call
        call.outcome, call.value, call.chunks, done = "raise", exc, chunks or None, True
        cancelled_effects.note(call, since)
    finally:
        close = getattr(iterator, "aclose", None)
        if not done and close is not None:
            await close()  # the consumer stopped early
    with linked_caller(call.frame, sys._getframe().f_back):
        effects.end_call(recorder, call)


class JournaledUUID(types.ModuleType):
    """Stands in for the ``uuid`` module inside one framework module: ``uuid4()`` is effect
    ``name`` (site ``site``, lane ``lane``), served on replay; every other name is the real
    module's."""

    def __init__(self, real: types.ModuleType, name: str, site: str,
                 lane: str | None = None) -> None:
        super().__init__("uuid")
        self._real, self._name, self._key = real, name, Key(site, lane)

    def uuid4(self) -> Any:
        real = self._real.uuid4
        if active_recorder() is None:
            return real()
        return call_effect(self._name, self._key, real, (), {}, {})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def journal_uuid_module(module: types.ModuleType, name: str, site: str,
                        lane: str | None = None) -> None:
    """Replace ``module``'s global ``uuid`` by a ``JournaledUUID`` (once). Raises
    ``IntegrationSkipped`` when the module has no ``uuid`` module global."""
    from .base import IntegrationSkipped

    real = module.__dict__.get("uuid")
    if isinstance(real, JournaledUUID):
        return
    if not isinstance(real, types.ModuleType) or not hasattr(real, "uuid4"):
        raise IntegrationSkipped(f"{module.__name__} no longer uses uuid.uuid4")
    module.uuid = JournaledUUID(real, name, site, lane)  # type: ignore[attr-defined]


def journal_function(module: types.ModuleType, attribute: str, name: str, site: str,
                     lane: str | None = None) -> None:
    """Replace the id- or clock-making function ``module.attribute`` (called with no
    arguments that matter) by effect ``name``, once. Raises ``IntegrationSkipped`` when it is
    missing."""
    from .base import patch

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def journaled(*args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return original(*args, **kwargs)
            return call_effect(name, Key(site, lane), original, args, kwargs,
                               {"args": [repr(a) for a in args]})
        return journaled

    patch(module, attribute, make)
