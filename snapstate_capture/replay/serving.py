"""Effects on replay: served from the journal, in the recorded order, or a divergence.

``EffectServing`` is the part of ``ReplayRecorder`` (``recorder.py``) that the capture side's
effect hooks call (``capture/effects.py``, ``integrations/calls.py``): ``serve_effect`` checks
a call against the journal's next entry for its lineage (name, site, arguments) and gives the
recorded outcome, restoring the random state the call left; ``await_turn`` and
``await_turn_async`` hold a served call until the steps (or, for ``async`` effects, the
effects — ``effect_turns.py``) recorded before it were replayed, so served calls return in the
recorded order; a call the journal has nothing more for while a live continuation is due
waits for it (``_wait_for_live``). It uses the recorder's ``session``, ``live``,
``replayed``, ``options``, ``_order``, ``_turn``, ``_effect_turns``, ``_served_exceptions``,
``effect_step`` and ``_recorded``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..clocks import Clocks
from ..capture import loop_passes
from ..capture.effects import arguments_match
from ..capture.rng import restore_states
from ..errors import PayloadLoadError, SnapStateError
from ..options import seconds_from_env
from ..store.reader import Value
from ..values import capture_value
from .effect_turns import EffectTurns
from .report import diff_previews, divergence, steps

if TYPE_CHECKING:
    from ..capture.effects import EffectCall


#: Seconds a served effect in one thread waits for the steps recorded before its own (taken
#: by other threads: the tool calls of a thread pool) before it is compared anyway; and the
#: longest any wait of a replay for other threads or tasks lasts (a stop's, an effect's in
#: flight at a fork). ``SNAPSTATE_TURN_WAIT`` overrides it (a slow machine).
TURN_WAIT = seconds_from_env("SNAPSTATE_TURN_WAIT", 10.0)


class EffectServing:
    """Serving effects from the journal, for ``ReplayRecorder`` (module docstring)."""

    def await_turn(self, call: EffectCall) -> None:
        """Before the step of a served effect in a thread other than the main one (a thread
        pool's call): wait (at most ``TURN_WAIT`` s) until every step recorded before it was
        replayed, in every lineage. An effect's step is written when its call returns, so
        the calls come back where they did among the other threads' steps: served at once,
        they finished in any order, and ``concurrent.futures.as_completed`` (or any consumer
        of results as they come) took them in another order than recorded, diverging at its
        next step. Effects served in the main thread never wait: it takes the earlier steps
        (and asyncio's tasks share it)."""
        target = call.recorded_step
        if self.live or target is None or self._replayed_before(target):
            return
        if threading.current_thread() is threading.main_thread():
            return  # asyncio tasks share this thread: waiting here would stop them all
        with self._turn:  # notified at each step replayed (``_replay_step``)
            self._turn.wait_for(lambda: self._replayed_before(target) or self.live, TURN_WAIT)

    def _replayed_before(self, target: int) -> bool:
        """Whether every step recorded before step ``target`` was replayed, in every lineage
        (``StepOrder.low``; in a run compared in global order, the steps replayed so far)."""
        return self._order.low >= target

    async def await_turn_async(self, call: EffectCall) -> None:
        """An effect served in an asyncio task (``@snap.effect``'s or a framework
        integration's), before it returns: in a run compared per lineage, suspend as the
        recorded call did and until the effects recorded as returning before it have returned
        (``served_in_order``); in one compared in global order (recorded before lineages),
        yield to the other tasks until every step recorded before it was replayed. At most
        ``TURN_WAIT`` s either way."""
        if self._order.by_lineage:
            await self.served_in_order(call)
        else:
            await self._after_recorded_steps(call)

    def effect_turns(self) -> EffectTurns:
        """The order served ``async`` effects return in (``effect_turns.py``), made from the
        journal on first use."""
        if self._effect_turns is None:
            self._effect_turns = EffectTurns(
                (entry.step for entry in self.session.journal.entries), TURN_WAIT)
        return self._effect_turns

    def effect_returned(self, call: EffectCall) -> None:
        """``call`` (served from the journal) returns now: the served ``async`` effects
        recorded as returning after it may return (``effect_turns.py``)."""
        self.effect_turns().returned(call.recorded_step)

    async def served_in_order(self, call: EffectCall) -> None:
        """A served ``async`` effect, before it returns: suspend as the recorded call did,
        until the effects recorded as returning before it have returned
        (``effect_turns.py``), and until every step recorded before its own was replayed
        (``_after_recorded_steps``). Never raises into the program."""
        if not self.live:
            await self.effect_turns().served(call.recorded_step, call.passes,
                                             call.suspended)
            await self._after_recorded_steps(call)

    async def _after_recorded_steps(self, call: EffectCall) -> None:
        """Yield to the other tasks (at most ``TURN_WAIT`` s) until every step recorded
        before ``call``'s own was replayed, in every lineage: what the program did while the
        recorded call was in flight — a deadline that fired around it
        (``asyncio.wait_for(asyncio.shield(call), timeout)``, ``asyncio.wait(..., timeout=)``)
        and the steps the program made then — happens before the served call returns, as it
        did when recorded. Effect turns alone order the calls among themselves: served at
        once, the call was done before the deadline and the program took the other path."""
        import asyncio

        target = call.recorded_step
        if target is None:
            return
        deadline = Clocks.monotonic() + TURN_WAIT
        while (not self.live and not self._replayed_before(target)
               and Clocks.monotonic() < deadline):
            await asyncio.sleep(0.001)

    #: Lineage -> how many of its calls wait in ``_wait_for_live`` (set per replay).
    waiting_for_live: dict[str, int]

    def _wait_for_live(self) -> bool:
        """A call the journal has nothing more for, made while a live continuation is due
        (``--live``/resume at a step not reached yet — another thread takes it): wait, at most
        ``TURN_WAIT`` s, until the replay goes live; True when it did (or will: see below).
        A waiting run's resume too: a call in flight in another thread when the wait ended
        the process (LangGraph's checkpoint ``put`` from its pool) has no journal row, and its
        resume ended there as "the recording ends here", the answer unused (helper-40: 10 of
        18)."""
        config, turn = self.session.config, getattr(self, "_turn", None)
        if turn is None or config.mode not in ("live", "resume") or config.to is None:
            return False
        if threading.current_thread() is threading.main_thread():
            # asyncio tasks share this thread: waiting would stop the task that takes the
            # stop step. The call runs for real; the replay is live by the time it ends.
            return True
        waiting = self.waiting_for_live
        lane = self.lane()
        with turn:
            waiting[lane] = waiting.get(lane, 0) + 1  # a stop does not wait for its steps
            try:
                turn.wait_for(lambda: self.live, TURN_WAIT)
            finally:
                waiting[lane] -= 1
                if not waiting[lane]:
                    del waiting[lane]
        return self.live

    def serve_effect(self, call: EffectCall) -> None:
        """Serve ``call`` from the journal, or end the replay with a divergence; an internal
        error ends the replay too, never raising into the program."""
        if self.live:
            return
        try:
            self._serve(call)
        except Exception as exc:  # noqa: BLE001
            self.session.fail(f"replay stopped at effect {call.name} by an internal error: "
                              f"{type(exc).__name__}: {exc}")

    def _serve(self, call: EffectCall) -> None:
        session = self.session
        entry = session.journal.next_for(call.task)
        actual = {"name": call.name, "site": call.site, "task": call.task}
        if entry is None and self._wait_for_live():
            call.before_live = not self.live  # in flight when the run died: it runs live
            return
        if entry is None:
            config = session.config
            if config.mode == "resume" and config.to is not None and not self.live:
                session.fail(f"the resume stopped at effect {call.name} at {_short(call.site)} "
                             f"({call.task}): the recording has no further effect there, and "
                             f"the run did not reach step {config.to}, where it continues, "
                             f"within {TURN_WAIT:g} s; nothing was continued")
            if not session.recording_complete:
                session.succeed(f"replayed {steps(self.replayed)}, no divergence; the recording "
                                f"ends here (run {session.run.status})")
            session.diverge(divergence(
                self.effect_step(None), "effect-missing",
                f"the program called effect {call.name} at {_short(call.site)}; the recording "
                f"has no further effect in {call.task}",
                effect=actual))
        if entry.name != call.name or self._recorded_site(entry) != call.site:
            session.diverge(divergence(
                self.effect_step(entry), "effect-order", f"expected effect {entry.name} at "
                f"{_short(entry.site)}, the program called {call.name} at {_short(call.site)}",
                effect={**actual, "expected_name": entry.name, "expected_site": entry.site}))
        if not _arguments_match(session, entry, call):
            expected = (Value(session.timeline, "arguments", entry.args_ref).preview
                        if entry.args_preview else None)
            got = capture_value(call.args, options=self.options.values, payloads=False).preview
            diff = diff_previews(expected, got)
            session.diverge(divergence(
                self.effect_step(entry), "effect-args",
                f"effect {call.name} at {_short(call.site)} was called with different arguments "
                f"({len(diff)} difference(s))",
                effect={**actual, "expected_name": entry.name, "expected_site": entry.site,
                        "arguments": diff}))
        if call.name in session.live_effects:
            self.effect_turns().returned(entry.step)  # runs for real: its return is not ordered
            return  # runs for real (``--live-effects``); its step is still compared
        try:
            value = session.journal.value(entry).load(trust=session.config.trust)
            chunks = entry.value.get("k")  # a stream's chunks before its error
            if chunks:
                call.chunks = Value(session.timeline, entry.name, chunks).load(
                    trust=session.config.trust)
        except PayloadLoadError as exc:
            session.diverge(divergence(
                self.effect_step(entry), "not-replayable",
                f"effect {call.name}: the recorded result cannot be served ({exc})",
                effect=actual))
            return
        except SnapStateError as exc:
            session.fail(str(exc))
            return
        if call.advance:  # keep the generator in step for draws not journaled (shuffle, …)
            args, kwargs = call.call
            call.function(*args, **kwargs)
        rng_key = entry.value.get("r")
        if rng_key:
            try:
                restore_states({"random": session.timeline.blob(rng_key)})
            except (SnapStateError, ValueError, KeyError, TypeError) as exc:
                session.fail(f"cannot restore the random state after effect {call.name}: {exc}")
        call.served, call.outcome, call.value = True, entry.outcome, value
        call.by = entry.value.get("w") or None
        call.cancelled_after = entry.value.get("c")
        call.passes = loop_passes.journaled(entry.value)
        call.suspended = False if entry.value.get("u") else None
        call.recorded_step = entry.step
        if entry.outcome == "raise":
            self._served_exceptions.add(id(value))


    def _recorded_site(self, entry: Any) -> str:
        """The journal entry's call site as it reads here: relocated, and with its line moved
        to where it is now when the code changed inside ``patched`` blocks."""
        site = self.session.relocation.site(entry.site)
        lines = self.session.comparer.lines
        if lines is None or entry.step is None:
            return site
        where, _, line = site.rpartition(":")
        path = where.rpartition(" ")[2]
        try:
            keys = self._recorded(entry.step).frame_keys
            record = self.session.timeline.json_blob(keys[-1]) if keys else {}
            moved = lines.line(record.get("source"), path, int(line))
        except (ValueError, IndexError, SnapStateError):
            return site
        return f"{where}:{moved}"


def _short(site: str) -> str:
    """``qualname file.py:line`` with the directory dropped."""
    function, _, where = site.rpartition(" ")
    return f"{function} {where.rsplit('/', 1)[-1]}" if function else site


def _arguments_match(session: Any, entry: Any, call: EffectCall) -> bool:
    """True when the journal's arguments digest for ``entry`` names the arguments of ``call``
    (``effects.arguments_match``); in an encrypted run the digest is compared keyed."""
    if not entry.args_sealed:
        return arguments_match(entry.args_hash, call)
    return bool(entry.args_hash == _recorded_form(session, entry, call.args_digest))


def _recorded_form(session: Any, entry: Any, digest: str) -> str:
    """``digest`` as the recording stored it: keyed under the user's key in an encrypted run
    (``encryption.keyed_digest``), so it compares with the journal's."""
    if not entry.args_sealed:
        return digest
    from ..trust.encryption import digest_key, keyed_digest, timeline_key

    key, _ = timeline_key(session.timeline)
    return keyed_digest(digest_key(key), digest) if key is not None else digest
