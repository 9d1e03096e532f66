"""Comparing a traced replay with its recording, step by step, per lineage, as it is written.

A traced run is replayed by recording it again into a scratch timeline (``traced.py``).
``TracedComparison`` takes the scratch run's steps in the order they were written
(``feed``) and compares each with the recorded step it corresponds to: the next recorded step
of the same lineage (``order.py``), so tasks and threads may interleave differently. The
recorded run is read once, front to back; steps of other lineages met on the way wait in a
queue per lineage. Skipped on both sides: ``gap`` steps (tracer bookkeeping) and, in an asyncio
task's lineage, the suspensions of its coroutines at an ``await`` (``return`` steps labelled
``yield``): whether an await suspends is timing — a served effect or a finished future does
not. The recorded steps inside an effect's own body are skipped too — also those of threads
and tasks the effect's work spawned, in a thread-pool call those of functions not on the
stack the effect is sited at, and those whose saved stack does not hold the effect's calling
frame (a traced library called by an untraced effect) — replay serves the effect without
running it.
The first difference ends the replay (``session.diverge``); ``end`` checks that no recorded
step was left over, and a stop that every recorded step before it was met
(``check_reached``) — but for those of effects in flight there, in other tasks or threads.
"""

from __future__ import annotations

import os
from collections import defaultdict, deque
from typing import TYPE_CHECKING, Any, Iterator

from ..capture import lineage
from ..store.chunk_reader import TracedStep, value_ref
from ..store.records import Value
from .compare import compare_steps, inline_digest
from .report import divergence, steps

if TYPE_CHECKING:
    from ..store.reader import Run, Step
    from .session import ReplaySession


#: Pairs of preview keys whose identity comparison is kept (``_same_identity_of``).
_IDENTITIES_KEPT = 50_000


class TracedComparison:
    """Compares scratch steps with the recorded run (see module docstring).

    ``recorded``: the recorded run (read through its own timeline: the comparison may run in
    another thread than the program); ``limit``: only recorded steps below it are compared
    (``--to N`` gives N + 1); ``cwd``: the recording's working directory (recorded relative
    paths are resolved against it).
    """

    def __init__(self, session: ReplaySession, recorded: Run, cwd: str, limit: int) -> None:
        self.session = session
        self.cwd = cwd
        self.limit = limit
        self.by_lineage = bool(recorded.entry.get("lineage"))
        self.replayed = 0
        #: The index of the scratch step that matched the recording's last compared one,
        #: ``limit - 1`` (where a fork goes live: ``traced.py``), once it was met — or of a
        #: step recorded before it that another thread, behind, made after it (the fork's
        #: copy of its parent's steps holds that one: the scratch steps it takes come after).
        self.matched_at: int | None = None
        #: The first recorded step at or after ``limit`` the replay made after the stop's own,
        #: while it had not made them all up to the stop (``_late``).
        self._after_stop: Step | None = None
        #: The first recorded step at or after ``limit`` the replay made before that one:
        #: another task ran ahead of the stop (a fork there would not hold its step).
        self.ahead: Step | None = None
        #: The scratch steps made ahead of the stop (``ahead`` and those after it in their
        #: lanes), in the order made: a continuation's fork takes them (``take_ahead``).
        self._held: list[Step] = []
        #: The scratch index of the first step made before the stop past the end of the
        #: recording's steps in its lane (a crashed run's lineage going on), if any.
        self._first_beyond: int | None = None
        self._recorded: Iterator[Step] = (s for s in recorded.steps if not self._skipped(s))
        self._waiting: dict[str, deque[Step]] = defaultdict(deque)
        self._exhausted = False
        self._read = -1  # the index of the last recorded step read
        self._paths: dict[tuple[str | None, bool], str] = {}
        self._seen: set[str] = set()  # lanes the replay made steps in
        self._effects: dict[str, list[int]] = defaultdict(list)  # lane -> its effect steps
        #: (recorded preview key, replayed preview key) -> same identity (``_same_identity_of``)
        self._identities: dict[tuple[str, str], bool] = {}
        #: The effects in flight in the replay: lane -> the recorded steps of the served calls
        #: it made that have not returned yet (``TracedReplayRecorder.in_flight``).
        self.in_flight: Any = dict
        #: lane -> effect steps of calls in flight at the stop, taken as met there
        #: (``first_unmet``): compared when the calls return
        self._owed: dict[str, deque[Step]] = defaultdict(deque)

    def _lane(self, step: Step) -> str:
        return (step.lineage or "") if self.by_lineage else ""

    def _skipped(self, step: Step) -> bool:
        """Steps not compared (see the module docstring)."""
        if step.kind == "gap":
            return True
        return (step.kind == "return" and step.label == "yield" and self.by_lineage
                and _in_task(step.lineage))

    def _next(self, lane: str) -> Step | None:
        """The lane's next recorded step (reading on, queueing other lanes' steps)."""
        queue = self._waiting.get(lane)
        if queue:
            return queue.popleft()
        for step in self._recorded:
            self._read = step.index
            if self._lane(step) == lane:
                return step
            self._waiting[self._lane(step)].append(step)
        self._exhausted = True
        return None

    def _push_back(self, lane: str, step: Step) -> None:
        self._waiting[lane].appendleft(step)

    def feed(self, actual: Step) -> int | None:
        """Compare one scratch step; a difference ends the replay (never returns then).
        Returns the index of the recorded step it was compared with, None when it was not
        compared (skipped, past the recording's end, or ahead of the stop). Should reading
        the step fail midway (the scratch file is written as it is read), the recorded steps
        it took are put back and the error raised: the step is fed again later, as if for the
        first time (the follower fed a whole batch again, from the scratch run's first step:
        "expected a return step, the program reached a call step" of ``<module>``)."""
        if self._skipped(actual):
            return None
        lane = self._lane(actual)
        taken: list[tuple[bool, Step]] = []  # (owed, recorded step) taken from the queues
        try:
            return self._feed(actual, lane, taken)
        except Exception:
            for owed, step in reversed(taken):
                (self._owed[lane] if owed else self._waiting[lane]).appendleft(step)
            raise

    def _feed(self, actual: Step, lane: str, taken: list[tuple[bool, Step]]) -> int | None:
        session = self.session
        self._seen.add(lane)
        owed = self._owed.get(lane)
        if owed and actual.kind == "effect":
            expected: Step | None = owed.popleft()
            taken.append((True, expected))
        else:
            expected = self._next(lane)
            if expected is not None:
                taken.append((False, expected))
        if actual.kind == "effect":
            # the recording also traced the effect's own body, which replay never runs: the
            # steps deeper than the effect's call — in a pool call, whose effect is sited at
            # the code that submitted it (``lineage.origin``), those not on that stack
            sited = _pool_call(lane) and {f.function for f in actual.frames}
            caller = self._caller(actual)
            while (expected is not None and expected.kind != "effect"
                   and (expected.depth > actual.depth
                        or (sited and expected.function not in sited)
                        or not self._passes_through(expected, caller))):
                self.replayed += 1
                expected = self._next(lane)
                if expected is not None:
                    taken.append((False, expected))
        if expected is None:
            if session.recording_complete:
                where = f" in {lane}" if lane else ""
                session.diverge(divergence(
                    session.count, "extra-step", f"the program went on{where} after the "
                    f"recording's last step there ({actual.kind} in {actual.function} line "
                    f"{actual.lineno})"))
            if self.matched_at is None and self._first_beyond is None:
                self._first_beyond = actual.index
            return None
        if expected.index >= self.limit:
            if self.matched_at is None:
                self.ahead = self.ahead or expected
                self._held.append(actual)
            else:
                self._after_stop = self._after_stop or expected
            self._push_back(lane, expected)
            return None
        if (actual.label == "raised" and expected.kind == "return" and expected.label is None
                and isinstance(expected, TracedStep)
                and expected.stored_extra == {"return": None}):
            expected.read_as_raised()  # recorded before unwinding returns were labelled
        if not self._identical(expected, actual):
            report = compare_steps(expected, actual, self.cwd, self.session.relocation)
            if report is not None:
                session.diverge(report)
        if expected.kind == "effect":
            self._effects[lane].append(expected.index)
        if expected.index == self.limit - 1:
            self.matched_at = actual.index
        elif self.matched_at is not None and actual.index > self.matched_at:
            self._late(actual)
        self.replayed += 1
        session.progress(self.replayed - 1)  # the index of the last step replayed, as before
        return expected.index

    def _late(self, actual: Step) -> None:
        """Scratch step ``actual``, recorded before the stop, was made after the stop's own
        step (another thread was behind; the stop waits for it: ``traced_stop``). A fork there
        copies its parent's steps up to the stop, which hold it: the scratch steps the fork
        takes begin after it (else the fork held it twice). Should a step recorded after the
        stop have been made before it, the fork could not hold both: that one is ``ahead``
        (refused, ``ran_ahead``)."""
        self.matched_at = actual.index
        if self._after_stop is not None:
            self.ahead = self.ahead or self._after_stop

    def take_ahead(self) -> tuple[int, int] | None:
        """A continuation's fork (a resume) whose stop, recorded step ``limit - 1``, the
        replay reached after other lineages had made steps recorded after it (``ahead``): the
        program did them, so the fork is to hold them. Compares those steps now and moves the
        stop to the last of them. Returns ``(recorded step, scratch index matched there)`` —
        the fork copies the parent's steps up to that step and the scratch run's after that
        index — or None when the steps made ahead are not all the recorded ones up to it (one
        between was not made, or a step past the recording's end in its lane was made before
        them), and the fork stays refused. A step made ahead that differs from its recorded
        one ends the replay at a divergence (never returns)."""
        held, self._held = self._held, []
        if not held or self.matched_at is None:
            return None
        self.ahead, self.limit = None, 1 << 62
        highest = -1
        for actual in held:
            compared = self.feed(actual)
            if compared is not None:
                highest = max(highest, compared)
        if highest < 0:
            return None
        self.limit = highest + 1
        if self.first_unmet(highest) is not None:
            return None
        matched = max(self.matched_at, held[-1].index)
        if self._first_beyond is not None and self._first_beyond <= matched:
            return None
        self.matched_at = matched
        return highest, matched

    def _caller(self, effect: Step) -> tuple[str | None, str] | None:
        """The frame an effect step was made in, as ``(function, absolute path)``."""
        frames = effect.frames
        if not frames:
            return None
        return frames[-1].function, self._path(frames[-1].filename, recorded=False)

    def _passes_through(self, expected: Step, caller: tuple[str | None, str] | None) -> bool:
        """True when the recorded step's saved stack holds the effect's calling frame (or the
        effect's caller is unknown). A traced step of the effect's own body whose callers
        were not traced (``--include`` on the library an effect calls: httpx under an
        ``@effect``) holds only the library's frames — counted from 1, so no deeper than the
        effect step's stack of untraced callers — and is the effect's work all the same."""
        if caller is None:
            return True
        stack = (expected.stack_view() if isinstance(expected, TracedStep)
                 else [(f.function, f.filename) for f in expected.frames])
        return any(frame[0] == caller[0] and self._path(frame[1]) == caller[1]
                   for frame in stack)

    def _identical(self, expected: Step, actual: Step) -> bool:
        """True when two traced steps hold the very same stored data (kind, label, lines,
        the stack's functions and files, every local and step value): the usual case, decided
        without building frames (a value whose digest differs, by its preview's identity:
        ``_same_identity_of``). False leaves it to ``compare_steps``."""
        if not (isinstance(expected, TracedStep) and isinstance(actual, TracedStep)):
            return False
        if (expected.kind, expected.label, expected.lineno) != (
                actual.kind, actual.label, actual.lineno):
            return False
        same = self._same_identity_of(expected, actual)
        if not _same_stored(expected.stored_extra, actual.stored_extra, same):
            return False
        rec_stack, act_stack = expected.stack_view(), actual.stack_view()
        if len(rec_stack) != len(act_stack):
            return False
        last = len(rec_stack) - 1
        for position, (rec, got) in enumerate(zip(rec_stack, act_stack)):
            if rec[0] != got[0] or self._path(rec[1]) != self._path(got[1], recorded=False):
                return False
            if position != last and rec[2] != got[2]:
                return False
            if rec[3] != got[3] and not _same_digests(rec[3], got[3], same):
                return False
            if not _same_types(rec[3], got[3]):
                return False
        return True

    def _same_identity_of(self, expected: Step, actual: Step) -> Any:
        """``same(recorded ref, replayed ref)`` for two stored values of these steps whose
        digests differ: True when both previews hold the same identity digest — the rule
        ``compare._same_stored`` decides such values by, read here from the two preview rows
        alone and kept per pair of preview keys. A generator's preview names its address and a
        set's pickle follows string hashing, so without this every step with such a value on
        its stack went through ``compare_steps`` (mistune: a render's steps, ~15x the
        recording's time). Two inline strings are the same text once memory addresses in
        them are blanked (``compare.inline_digest``)."""
        known = self._identities
        recorded, replayed = expected.run.timeline, actual.run.timeline

        def same(exp: Any, got: Any) -> bool:
            if type(exp) is str and type(got) is str:  # inline: as ``compare`` decides
                return inline_digest(exp) == inline_digest(got)
            if type(exp) is not tuple or type(got) is not tuple or len(exp) != 3 \
                    or len(got) != 3:
                return False
            pair = (exp[0], got[0])
            found = known.get(pair)
            if found is None:
                if len(known) >= _IDENTITIES_KEPT:
                    known.clear()
                first = Value(recorded, "", value_ref(exp)).identity
                found = known[pair] = first is not None and first == Value(
                    replayed, "", value_ref(got)).identity
            return found

        return same

    def _path(self, filename: str | None, *, recorded: bool = True) -> str:
        key = (filename, recorded)
        known = self._paths.get(key)
        if known is None:
            name = filename or ""
            known = self._paths[key] = (
                self.session.relocation.path(os.path.normpath(os.path.join(self.cwd, name)))
                if recorded else os.path.abspath(name))  # a copy replays: recorded paths map
        return known

    def first_left(self) -> Step | None:
        """The lowest recorded step below ``limit`` not compared yet, or None."""
        candidates: list[Any] = [queue[0] for queue in self._waiting.values() if queue]
        if not self._exhausted:
            nxt = next(self._recorded, None)
            if nxt is None:
                self._exhausted = True
            else:
                self._read = nxt.index
                self._waiting[self._lane(nxt)].append(nxt)  # read ahead, kept in its place
                candidates.append(nxt)
        left = [step for step in candidates if step.index < self.limit]
        return min(left, key=lambda step: step.index) if left else None

    def lane_left(self, lane: str, index: int) -> bool:
        """True when a recorded step at most ``index`` of lineage ``lane`` or one beneath it
        (a thread or task it started: ``lane/…``) was not compared yet; always True in a run
        recorded before lineages."""
        if not self.by_lineage:
            return True
        self._read_up_to(index)
        beneath = lane + "/"
        return any(queue and queue[0].index <= index for name, queue in self._waiting.items()
                   if name == lane or name.startswith(beneath))

    def end(self, stopped_at: int | None) -> None:
        """The scratch run is complete: succeed, or report the first recorded step the
        program never made (never returns)."""
        session = self.session
        self.check_reached(None)
        if stopped_at is not None:
            # (a stop in pdb, the console or a debugger: the program ran on past it, unchecked,
            # as its banner said; a test's own failure was reported by pytest above)
            went_on = ("; the program then ran on to its end, unchecked"
                       if session.config.mode in ("pdb", "console", "debugpy") else "")
            session.succeed(f"replayed {steps(stopped_at + 1)} (0-{stopped_at}), no divergence"
                            f"{went_on}")
        self.replayed = session.count  # skipped ones included: every step is accounted for
        session.succeed(f"replayed {steps(self.replayed)}, no divergence")

    def check_reached(self, index: int | None) -> None:
        """Diverge (never returning) when a recorded step below ``limit`` — and at most
        ``index``, when given — was not met by the scratch steps fed so far
        (``first_unmet``)."""
        session = self.session
        left = self.first_unmet(index)
        if left is not None:
            when = ("the program's run ended" if index is None else
                    f"the program reached the stop at step {index}")
            session.diverge(divergence(
                left.index, "ended-early", f"{when} without step "
                f"{left.index} ({left.kind} in {left.function} line {left.lineno}); the "
                f"recording has {session.count} steps"))

    def waiting_on(self, index: int, held: set[str],
                   serving: dict[str, list[int]] | None = None) -> Step | None:
        """The first recorded step at most ``index`` not met yet that the replay is still to
        make, or None; takes nothing as met (unlike ``first_unmet``), for a stop that waits
        for other threads. Not to be made: the body of an effect in flight at the stop
        (``_in_flight_body``), and the steps of a lineage the replay has not made whose
        spawner is inside a served effect recorded after them — its next recorded step is
        that effect's, or the replay compared such an effect there (``_spawned_by_effect``).
        A lineage not made yet of a spawner that went on past it is still to be made: a pool
        worker behind the others. Nor the steps of the lineages in ``held``: calls in flight
        when the run died, waiting to run for real once the replay goes live there.
        ``serving``: lane -> the recorded effect steps of the served calls not returned yet
        (``InFlight.steps``), whose bodies are not to be made either."""
        self._read_up_to(index)
        in_flight = self.in_flight()
        if serving:
            in_flight = {lane: [*in_flight.get(lane, ()), *serving.get(lane, ())]
                         for lane in {*in_flight, *serving}}
        first: Step | None = None
        for lane, queue in self._waiting.items():
            if lane in held:
                continue
            for step in queue:
                if step.index > index or step.index >= self.limit:
                    break
                if self._in_flight_body(step, lane, in_flight) or self._spawned_by_effect(step):
                    continue
                if first is None or step.index < first.index:
                    first = step
                break
        return first

    def _spawned_by_effect(self, step: Step) -> bool:
        """True for a step of a lineage the replay has not made, spawned (a thread, task or
        pool call: ``spawner/…``) by a lineage inside a served effect recorded after it."""
        lane = self._lane(step)
        if not lane or lane in self._seen or "/" not in lane:
            return False
        spawner = lane.rpartition("/")[0]
        if any(i > step.index for i in self._effects.get(spawner, ())):
            return True
        queue = self._waiting.get(spawner)
        return bool(queue) and queue[0].kind == "effect" and queue[0].index > step.index

    def _read_up_to(self, index: int) -> None:
        """Queue every recorded step at most ``index`` (read ahead, kept in its place)."""
        while not self._exhausted and self._read < index:
            nxt = next(self._recorded, None)
            if nxt is None:
                self._exhausted = True
            else:
                self._read = nxt.index
                self._waiting[self._lane(nxt)].append(nxt)

    def first_unmet(self, index: int | None) -> Step | None:
        """The first recorded step below ``limit`` — and at most ``index``, when given — not
        met by the scratch steps fed so far, or None. Steps of an effect's own work, which
        replay serves, do not count (they are taken as met): those of a lineage the replay
        never made (``_inside_effect``) and, at a stop (``index``), those of an effect in
        flight there — called in another task or thread before the stop, returning after it
        or not yet, and the pool calls its body spawned (``_in_flight_body``)."""
        in_flight = self.in_flight() if index is not None else {}
        left = self.first_left()
        while left is not None and (index is None or left.index <= index):
            lane = self._lane(left)
            if not (self._inside_effect(left) or self._in_flight_body(left, lane, in_flight)):
                return left
            self._waiting[lane].popleft()  # first_left queued it at the head
            if left.kind == "effect" and left.index in in_flight.get(lane, ()):
                self._owed[lane].append(left)  # the call returns later: compared then
            else:
                self.replayed += 1
            left = self.first_left()
        return None

    def _in_flight_body(self, step: Step, lane: str, in_flight: dict[str, Any]) -> bool:
        """True for a recorded step of the body of a served call in flight at a stop (its
        recorded effect step at this step or after it), which replay serves, never runs:
        - a step of the call's own lineage (the replay made every earlier step there: it is
          the first one left), up to and with the call's effect step, made when the call
          returns with the served result (``in_flight.py``);
        - a step of a lineage beneath the call's that the replay has not spawned yet: the
          call's body spawned it (a pool call a sync tool runs in: the Agents SDK's). Exact:
          the call's lineage, blocked in the call, spawns nothing else until it returns, and
          spawns in program order (``lineage.spawned``)."""
        if not in_flight:
            return False
        if any(effect >= step.index for effect in in_flight.get(lane, ())):
            return True
        if lane in self._seen:
            return False
        for head in lineage.ancestors(lane):
            if any(effect >= step.index for effect in in_flight.get(head, ())):
                return not lineage.spawned(lane, head)
        return False

    def _inside_effect(self, step: Step) -> bool:
        """True for a recorded step of a lineage the replay never made at all, recorded
        before an effect step the replay served: an effect's own work in a thread or task of
        its own (a framework running a sync model or tool in a pool thread — one the pool
        may have started for an earlier call), which replay serves, never runs."""
        lane = self._lane(step)
        if not lane or lane in self._seen or "/" not in lane:
            return False
        return any(i > step.index for indexes in self._effects.values() for i in indexes)


def _pool_call(lineage: str | None) -> bool:
    """True for the lineage of a thread-pool call (its last segment ``p<n>``)."""
    last = (lineage or "").rsplit("/", 1)[-1]
    return last[:1] == "p" and last[1:].isdigit()


def _in_task(lineage: str | None) -> bool:
    """True for the lineage of an asyncio task (or of code it runs): a ``t``/``u`` segment."""
    return bool(lineage) and any(part[:1] in ("t", "u") for part in lineage.split("/")[1:])


def _same_types(expected: tuple, actual: tuple) -> bool:
    """Equal pairs of stored values are the same values only with the same types
    (``1 == True == 1.0``)."""
    return all(type(exp) is type(got) for (_, exp), (_, got) in zip(expected, actual))


def _digest(value: Any) -> Any:
    """What a stored value is compared by (``Value.digest``): the payload's key, else the
    preview's; an inline scalar by itself."""
    if type(value) is tuple and len(value) == 3:
        return value[1] or value[0]
    return value


def _same_digests(expected: tuple, actual: tuple, same_identity: Any) -> bool:
    """Same names, and values with the same digests (a function's preview names its address;
    its payload is the same) or, where they differ, ``same_identity``."""
    return len(expected) == len(actual) and all(
        exp_name == got_name and (_digest(exp) == _digest(got) or same_identity(exp, got))
        for (exp_name, exp), (got_name, got) in zip(expected, actual))


def _same_stored(expected: dict[str, Any], actual: dict[str, Any], same_identity: Any) -> bool:
    """The step values (``return``, ``exception``) of two steps are the same: the same names,
    and values with the same digests and types. A returned object whose preview names its
    address (pyflakes' ``Checker.scope``, ``getParent``: a third of its return steps) has the
    same payload in both runs, and ``compare_steps`` decides by that digest too."""
    if expected == actual:
        return all(type(value) is type(actual[name]) for name, value in expected.items())
    if expected.keys() != actual.keys():
        return False
    for name, value in expected.items():
        got = actual[name]
        if type(value) is not type(got) or (_digest(value) != _digest(got)
                                            and not same_identity(value, got)):
            return False
    return True
