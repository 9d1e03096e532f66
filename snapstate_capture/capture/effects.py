"""Effects: calls whose results are recorded once and served from the journal on replay.

``@snap.effect`` (sync or ``async``) wraps a call that must not run again on replay: an LLM or
API call, a tool, ``input()``, a clock, a random draw (DESIGN.md "Replay and fork"). Inside a
``record`` block each call

- runs the function, then appends an ``effect`` step (its stack is the caller's; step values:
  ``args`` as a preview only, ``result`` or ``exception``) and, in the same transaction, a row
  of the run's **effect journal**: name, call site (``qualname file:line`` of the calling
  frame), task (the caller's lineage: ``lineage.py``), per-(site, task) ordinal, a digest of the
  arguments, and the outcome (``return``/``raise``) with its value ref;
- on replay is not run at all: the replay recorder checks that the call is the next one the
  task made in the recording, with the same site and argument digest, and returns the recorded
  result (or raises the recorded exception). Anything else is a divergence.

Outside a ``record`` block, and for an effect called by another effect, the function simply
runs. Helpers below wrap the usual sources of nondeterminism; ``nondeterminism.py``
(``record(..., patch_nondeterminism=True)``) routes the module functions themselves through the
journal, whoever calls them.
"""

from __future__ import annotations

import builtins
import contextvars
import functools
import inspect
import os
import random as _random
import sys
import time as _time
import types
import uuid as _uuid
import weakref
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from . import cancelled_effects, lineage, loop_passes
from .frames import _PACKAGE_DIR
from ..store.hashing import canonical_json, content_hash
from ..options import ValueOptions
from .recorder import active_recorder
from .step_capture import PreviewOnly
from .tasks import call_site, current_task_name, current_thread_name
from ..values import capture_value
from ..values.identity import identity
from ..values.payload import serialize

F = TypeVar("F", bound=Callable[..., Any])

#: True while an effect runs in this context (thread or asyncio task): effects it calls in
#: turn are part of it, not journaled on their own (on replay the outer one does not run).
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("snapstate_effect", default=False)

_DIGEST_OPTIONS = ValueOptions(test_load=False)
_PASS_THROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit)


@dataclass
class EffectCall:
    """One effect call in flight: its journal key and, on replay, what the journal served.

    ``site`` is ``"qualname /abs/file.py:line"`` of the calling frame; ``task`` the caller's
    lineage (``recorder.lane()``: task, pool call or thread by who spawned it — a framework
    may give a logical lane instead); ``ordinal`` counts calls per (site, task); ``seq`` counts the run's
    effects. ``args`` are the bound arguments (``self``/``cls`` left out) and ``args_digest``
    their digest (``arguments_digest``: an identity digest, compared with ``arguments_match``).
    ``served`` is True when the replay recorder supplied ``outcome``/``value`` from the journal.
    """

    name: str
    site: str
    task: str
    ordinal: int
    seq: int
    frame: types.FrameType
    args: dict[str, Any]
    args_digest: str
    function: Callable[..., Any]
    call: tuple[tuple, dict] = ((), {})
    advance: bool = False
    served: bool = False
    outcome: str = "return"
    value: Any = None
    rng_before: Any = None
    rng_after: tuple[str, bytes] | None = None
    #: On replay: the step index the served call's effect step had in the recording.
    recorded_step: int | None = None
    #: Who gave a wait's outcome (``capture/waits.py``): kept in the journal row, shown as the
    #: effect step's ``by`` value.
    by: dict[str, Any] | None = None
    #: On replay: a call the journal has nothing for (in flight when the run died), made
    #: before the replay went live in asyncio's thread; it runs for real, an ``async`` one
    #: after ``await_live``.
    before_live: bool = False
    #: The lineage the call was made in (``recorder.lane()``), where its effect step is
    #: recorded: ``task`` unless a framework gave a logical lane (the Agents SDK: "agents
    #: tool call_weather"; LangGraph: "langgraph tool call_notes").
    lineage: str = ""
    #: The line the call is sited at in ``frame`` when not the frame's current one: a pool
    #: call's, at its submit (``sited_at``); None otherwise.
    lineno: int | None = None
    #: Seconds an ``async`` call ran before it was cancelled (recording), or ran recorded
    #: (replay, served); None otherwise (``cancelled_effects.py``).
    cancelled_after: float | None = None
    #: A stream that raised after giving chunks (``integrations/calls.py``): the chunks its
    #: consumer got first — recorded, and served before the error on replay; None otherwise.
    chunks: list[Any] | None = None
    #: The passes of the event loop between the return of the ``async`` effect returned
    #: before this one and this call's return (0: the same pass; ``loop_passes.py``, at most
    #: ``PASS_LIMIT``): recorded, and read back on replay (where it decides how the served
    #: call is released: ``replay/effect_turns.py``); None: unknown.
    passes: int | None = None
    #: An ``async`` call that returned without suspending its task (False; True: it
    #: suspended; None: unknown), recorded and read back as ``passes`` is.
    suspended: bool | None = None

    def row(self) -> dict[str, Any]:
        """The journal row (``value`` and ``step`` are added when the step is written).

        ``rng``: when the call drew from the ``random`` module's generator, the generator's
        state after the call (hex key, JSON bytes), restored on replay after serving it.
        """
        return {"seq": self.seq, "site": self.site, "task": self.task, "ordinal": self.ordinal,
                "name": self.name, "args_hash": self.args_digest, "outcome": self.outcome,
                "rng": self.rng_after, "by": self.by, "cancelled_after": self.cancelled_after,
                "passes": self.passes, "suspended": self.suspended}


def effect(func: F | None = None, *, name: str | None = None, retry: Any = None) -> Any:
    """Decorator: record each call of ``func`` in the effect journal; serve it on replay.

    Bare (``@snap.effect``) or named (``@snap.effect(name="llm")``; default: the function's
    qualname). The name is what ``snapstate replay --live-effects NAME`` refers to. Works on
    plain and ``async`` functions; the wrapper returns what the function returns and raises
    what it raises. Never raises because of recording. ``retry``: a ``snap.Retry`` policy —
    failed attempts are retried after a back-off, and a long back-off ends the run
    ``sleeping`` until it is due (``capture/retry.py``; the policy's ``call``/``call_async``
    runs the attempts).
    """
    def decorate(fn: F) -> F:
        effect_name = name or fn.__qualname__
        if inspect.iscoroutinefunction(fn):
            async def once_async(args: tuple, kwargs: dict, caller: types.FrameType) -> Any:
                recorder = active_recorder()
                if recorder is None or _inside.get():
                    return await fn(*args, **kwargs)
                call = begin_call(recorder, effect_name, fn, args, kwargs, caller)
                if call is None:
                    return await fn(*args, **kwargs)
                if not call.served:
                    await await_live(recorder, call)
                    token = _inside.set(True)
                    watch_rng(call)
                    since = cancelled_effects.started()
                    mark = loop_passes.before_call()
                    try:
                        call.value = await fn(*args, **kwargs)
                        call.outcome = "return"
                    except _PASS_THROUGH:
                        raise
                    except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised
                        call.outcome, call.value = "raise", exc
                        cancelled_effects.note(call, since)
                    finally:
                        _inside.reset(token)
                        check_rng(call)
                        call.passes = loop_passes.passes_since_previous(mark)
                        call.suspended = loop_passes.suspended(mark)
                else:  # replay: return in the recorded order (``replay/effect_turns.py``)
                    # (and one cancelled when recorded waits to be cancelled again)
                    await cancelled_effects.served(call, getattr(recorder, "await_turn_async",
                                                                 None))
                return end_call(recorder, call)

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                caller = sys._getframe(1)
                if retry is None or _inside.get():
                    return await once_async(args, kwargs, caller)
                return await retry.call_async(effect_name,
                                              lambda: once_async(args, kwargs, caller))
            return async_wrapper  # type: ignore[return-value]

        def once(args: tuple, kwargs: dict, caller: types.FrameType) -> Any:
            recorder = active_recorder()
            if recorder is None or _inside.get():
                return fn(*args, **kwargs)
            call = begin_call(recorder, effect_name, fn, args, kwargs, caller)
            if call is None:
                return fn(*args, **kwargs)
            run_call(call)
            return end_call(recorder, call)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1)
            if retry is None or _inside.get():
                return once(args, kwargs, caller)
            return retry.call(effect_name, lambda: once(args, kwargs, caller))
        return wrapper  # type: ignore[return-value]

    return decorate(func) if func is not None else decorate


def run_call(call: EffectCall) -> None:
    """Run ``call``'s function for real (unless the journal served it), keeping its outcome."""
    if call.served:
        return
    token = _inside.set(True)
    watch_rng(call)
    try:
        args, kwargs = call.call
        call.value = call.function(*args, **kwargs)
        call.outcome = "return"
    except _PASS_THROUGH:
        raise
    except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised by end_call
        call.outcome, call.value = "raise", exc
    finally:
        _inside.reset(token)
        check_rng(call)


def watch_rng(call: EffectCall) -> None:
    """Note the ``random`` generator's state before a real call (see ``check_rng``)."""
    if not call.advance:
        call.rng_before = _random_state()


def check_rng(call: EffectCall) -> None:
    """If the call drew from the ``random`` module's generator, keep its state afterwards so
    replay, which does not run the call, can put the generator where the call left it."""
    if call.advance or call.rng_before is None:
        return
    after = _random_state()
    if after != call.rng_before:
        data = canonical_json({"version": after[0], "internal": list(after[1]),
                               "gauss": after[2]})
        call.rng_after = (content_hash(data).hex(), data)
    call.rng_before = None


def _random_state() -> Any:
    try:
        return _random.getstate()
    except Exception:  # noqa: BLE001 - a replaced generator is not watched
        return None


def begin_call(recorder: Any, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
               caller: types.FrameType, *, advance: bool = False, site: str | None = None,
               task: str | None = None, arguments: dict[str, Any] | None = None,
               digest: str | None = None) -> EffectCall | None:
    """Key a new effect call and let the recorder serve it (replay) or not (recording).

    ``site``/``task``/``arguments`` replace the call site, the lineage and the compared
    arguments with a logical identity when the caller has one (a framework integration keys a
    tool call by its ``tool_call_id`` and compares a digest of the messages, not the objects);
    ``digest`` is then the hex digest compared on replay (default: ``arguments_digest``).
    Returns None when the call cannot be keyed (it then runs unrecorded). On replay a
    divergence found here ends the replay child; nothing is raised into the program.
    """
    try:
        frame, line = sited_at(caller, getattr(getattr(recorder, "_frames", None), "is_hidden",
                                               None))
        bound = bind_arguments(fn, args, kwargs) if arguments is None else arguments
        if site is None:
            site = call_site(frame, line)
        lane = getattr(recorder, "lane", None)
        made_in = lane() if lane is not None else current_task_name() or current_thread_name()
        task = made_in if task is None else task
        with recorder.effect_lock:
            seq = recorder.effect_seq
            recorder.effect_seq += 1
            ordinal = recorder.effect_counts.get((site, task), 0)
            recorder.effect_counts[(site, task)] = ordinal + 1
        call = EffectCall(name=name, site=site, task=task, ordinal=ordinal, seq=seq,
                          frame=frame, args=bound,
                          args_digest=digest if digest is not None else arguments_digest(bound),
                          function=fn, call=(args, kwargs), advance=advance,
                          lineage=made_in, lineno=line)
    except Exception:  # noqa: BLE001 - an unkeyable call runs unrecorded, never fails
        return None
    serve = getattr(recorder, "serve_effect", None)
    if serve is not None:
        serve(call)
    return call


async def await_live(recorder: Any, call: EffectCall) -> None:
    """Before an ``async`` call runs for real on replay though the replay is not live yet
    (``EffectCall.before_live``): let the recorder hold it until it is
    (``TracedReplayRecorder.await_live``)."""
    wait = getattr(recorder, "await_live", None) if call.before_live else None
    if wait is not None:
        await wait(call)


def end_call(recorder: Any, call: EffectCall) -> Any:
    """Append the effect step (and journal row) for ``call``; return or raise its outcome."""
    extra: dict[str, Any] = {"args": PreviewOnly(call.args)}
    extra["result" if call.outcome == "return" else "exception"] = call.value
    if call.chunks is not None and call.outcome == "raise":
        extra["chunks"] = call.chunks
    if call.by:
        extra["by"] = call.by
    wait = getattr(recorder, "await_turn", None)
    if wait is not None and call.served:
        wait(call)
    returned = getattr(recorder, "effect_returned", None)
    if returned is not None and call.served:
        returned(call)
    recorder.capture("effect", call.frame, label=call.name, extra=extra, lineno=call.lineno,
                     effect=call.row())
    if call.outcome == "raise":
        raise call.value
    return call.value


def user_frame(frame: types.FrameType,
               hidden: Callable[[str], bool] | None = None) -> types.FrameType:
    """The first frame outward from ``frame`` that is not snapstate's own code — nor, with
    ``hidden`` (the recorder's test of frames it leaves off stacks), library code: an effect
    called by a library (``datetime.now`` inside a framework) or run as an asyncio task (whose
    caller is the event loop) is sited where the program's own code is, which is the same in
    every process and every installation."""
    return sited_at(frame, hidden)[0]


def sited_at(frame: types.FrameType, hidden: Callable[[str], bool] | None = None
             ) -> tuple[types.FrameType, int | None]:
    """``user_frame``, and the line a call there is sited at when it is not the frame's
    current line: a thread-pool call with no frame of the program's own on its thread is
    sited where the code that submitted it was, at the line it submitted from
    (``lineage.origin``) — by the time the call runs or returns, that frame has gone on as
    far as timing takes it, another line in a replay whose effects return at once. None: the
    frame's own line."""
    found = _visible(frame, hidden)
    if found is not None and (hidden is None or not hidden(found.f_code.co_filename)):
        return found, None
    for submitted, line in lineage.origin():  # a pool call: sited where its submitter was
        filename = submitted.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep) and (
                hidden is None or not hidden(filename)):
            return submitted, line
    return found or frame, None


def _visible(frame: types.FrameType | None,
             hidden: Callable[[str], bool] | None) -> types.FrameType | None:
    """The first frame outward that is neither snapstate's nor hidden; else the first that
    is not snapstate's; else None."""
    current = frame
    own = None
    while current is not None:
        filename = current.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            if hidden is None or not hidden(filename):
                return current
            own = own or current
        current = current.f_back
    return own


#: ``signature_of``'s memory: function -> (its code object then, its signature). Weak: a
#: function decorated per call (a closure, a bound method) is not kept alive by it.
_signatures: "weakref.WeakKeyDictionary[Any, tuple[Any, inspect.Signature | None]]" = \
    weakref.WeakKeyDictionary()


def signature_of(fn: Callable[..., Any]) -> inspect.Signature | None:
    """``inspect.signature(fn)``, or None for a callable without one (or one that cannot be
    read); worked out once per function (~10 µs each time otherwise, at every effect call) and
    again when its code was swapped (a hot reloader edits ``__code__``). Never raises."""
    code = _code_of(fn)
    try:
        known = _signatures.get(fn)
    except Exception:  # noqa: BLE001 - not weakly referable or hashable: worked out each time
        known = None
    if known is not None and known[0] is code:
        return known[1]
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except Exception:  # noqa: BLE001 - no signature, or a callable that fails to give one
        signature = None
    try:
        _signatures[fn] = (code, signature)
    except Exception:  # noqa: BLE001 - not weakly referable or hashable
        pass
    return signature


def _code_of(fn: Any) -> Any:
    """The code object a plain function or method runs now (read from its slots, no lookup
    of the program's), else None."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    return fn.__code__ if isinstance(fn, types.FunctionType) else None


def bind_arguments(fn: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Any]:
    """Bind ``args``/``kwargs`` to ``fn``'s parameter names, leaving out a first ``self`` or
    ``cls`` (the receiver is not an argument of the external call). Falls back to
    ``{"args": args, "kwargs": kwargs}`` for callables without a signature."""
    signature = signature_of(fn)
    if signature is not None:
        try:
            bound = dict(signature.bind_partial(*args, **kwargs).arguments)
        except TypeError:
            bound = None
        if bound is not None:
            first = next(iter(signature.parameters), None)
            if first in ("self", "cls") and first in bound:
                del bound[first]
            return bound
    out: dict[str, Any] = {}
    if args:
        out["args"] = args
    if kwargs:
        out["kwargs"] = kwargs
    return out


#: Prefix of an arguments digest that is an identity digest (``values.identity``); journals
#: written before it hold pickle digests, still matched by ``arguments_match``.
IDENTITY_PREFIX = "i:"


def arguments_digest(arguments: dict[str, Any]) -> str:
    """Digest of ``arguments`` compared on replay: ``"i:"`` + their identity digest (the same
    arguments whatever the process: sets by members, functions by name and code, objects by
    state — docs/value-identity.md); for arguments too big to walk, the hex digest of their
    pickle, else of their (bounded) preview."""
    found = identity(arguments)
    if found is not None:
        return IDENTITY_PREFIX + found
    return _pickle_digest(arguments)


def arguments_match(recorded: str | None, call: EffectCall) -> bool:
    """True when the journal's ``recorded`` digest names the arguments of ``call``: equal
    digests, or a journal from before identity digests whose pickle digest matches (or, for
    a framework integration's plain-data arguments, their canonical-JSON digest)."""
    if recorded == call.args_digest:
        return True
    if recorded and not recorded.startswith(IDENTITY_PREFIX) and call.args_digest.startswith(
            IDENTITY_PREFIX):
        return recorded in (_pickle_digest(call.args), _json_digest(call.args))
    return False


def _json_digest(arguments: Any) -> str | None:
    """The digest framework integrations kept before value identity (their plain-data
    arguments in canonical JSON), or None for arguments that are not plain data."""
    try:
        return content_hash(canonical_json(arguments)).hex()
    except (TypeError, ValueError):
        return None


def _pickle_digest(arguments: dict[str, Any]) -> str:
    data = serialize(arguments, _DIGEST_OPTIONS).data
    if data is None:
        data = canonical_json(capture_value(arguments, options=_DIGEST_OPTIONS,
                                            payloads=False).preview)
    return content_hash(data).hex()


# -- helpers: the usual nondeterministic sources, one effect each --------------------------------
_originals: dict[str, Callable[..., Any]] = {
    "time.time": _time.time, "time.monotonic": _time.monotonic,
    "random.random": _random.random, "random.randint": _random.randint,
    "random.randrange": _random.randrange, "random.uniform": _random.uniform,
    "random.choice": _random.choice, "random.getrandbits": _random.getrandbits,
    "uuid.uuid4": _uuid.uuid4, "os.urandom": os.urandom, "input": builtins.input,
}


def _helper(effect_name: str) -> Callable[..., Any]:
    original = _originals[effect_name]

    def helper(*args: Any, **kwargs: Any) -> Any:
        recorder = active_recorder()
        if recorder is None or _inside.get():
            return original(*args, **kwargs)
        call = begin_call(recorder, effect_name, original, args, kwargs, sys._getframe(1),
                          advance=effect_name.startswith("random."))
        if call is None:
            return original(*args, **kwargs)
        run_call(call)
        return end_call(recorder, call)

    helper.__name__ = helper.__qualname__ = effect_name.rsplit(".", 1)[-1]
    helper.__doc__ = (f"``{effect_name}`` as a recorded effect (named ``{effect_name}``): "
                      "the recorded result is served on replay.")
    return helper


time = _helper("time.time")
monotonic = _helper("time.monotonic")
random = _helper("random.random")
randint = _helper("random.randint")
uniform = _helper("random.uniform")
choice = _helper("random.choice")
uuid4 = _helper("uuid.uuid4")
urandom = _helper("os.urandom")
input = _helper("input")  # noqa: A001 - the point is to stand in for the builtin
