"""Retry policies for effects: ``@snap.effect(retry=snap.Retry(on=(RateLimitError,), ...))``.

An effect that raises one of ``on`` is called again after a back-off, up to ``max_attempts``
calls in all; the last failure is raised. Each attempt is its own effect (journaled, served
on replay), and each wait between attempts is a ``sleep_until`` (``capture/waits.py``) whose
due time is computed from a journaled clock: a short back-off sleeps in the process, a long
one — a rate limit that resets in an hour — ends the run ``sleeping`` with its due time, and
``snapstate worker`` resumes it then; the replay serves the failed attempts and the next
attempt runs live.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

#: Back-off in seconds for attempt n (1 = after the first failure): a number, or a function
#: of the attempt number and the exception.
Backoff = Callable[[int, BaseException], float] | float | int


def exponential(base: float = 1.0, factor: float = 2.0, cap: float = 3600.0
                ) -> Callable[[int, BaseException], float]:
    """Back-off ``base * factor ** (attempt - 1)`` seconds, at most ``cap``."""
    def delay(attempt: int, exc: BaseException) -> float:
        return min(cap, base * factor ** (attempt - 1))
    return delay


@dataclass(frozen=True)
class Retry:
    """When and how often an effect is called again.

    - ``on``: the exception types that are retried (others propagate at once);
    - ``backoff``: seconds to wait before attempt n+1 — a number, or
      ``backoff(attempt, exception)``; default ``exponential()`` (1, 2, 4 … s, at most an
      hour). An exception with a numeric ``retry_after`` attribute (seconds; read without
      running any property) waits at least that long;
    - ``max_attempts``: calls in all, the first included (at least 1).

    Raises ``ValueError``/``TypeError`` for a bad policy.
    """

    on: tuple[type[BaseException], ...] = (Exception,)
    backoff: Backoff = field(default_factory=exponential)
    max_attempts: int = 5

    def __post_init__(self) -> None:
        on = self.on if isinstance(self.on, tuple) else (self.on,)
        if not on or not all(isinstance(t, type) and issubclass(t, BaseException) for t in on):
            raise TypeError("Retry(on=...) takes exception types")
        object.__setattr__(self, "on", on)
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError("Retry(max_attempts=...) must be an int >= 1")
        if not callable(self.backoff) and not (
                isinstance(self.backoff, (int, float)) and self.backoff >= 0):
            raise TypeError("Retry(backoff=...) takes seconds or a function of (attempt, exc)")

    def delay(self, attempt: int, exc: BaseException) -> float:
        """Seconds to wait after failed attempt ``attempt`` with ``exc``."""
        seconds = (float(self.backoff(attempt, exc)) if callable(self.backoff)
                   else float(self.backoff))
        try:
            hint = inspect.getattr_static(exc, "retry_after", None)
        except Exception:  # noqa: BLE001 - a strange exception object: no hint
            hint = None
        if isinstance(hint, (int, float)) and not isinstance(hint, bool) and hint > seconds:
            seconds = float(hint)
        return max(0.0, seconds)

    def retries(self, exc: BaseException, attempt: int) -> bool:
        """True when failed attempt ``attempt`` with ``exc`` is followed by another."""
        return isinstance(exc, self.on) and attempt < self.max_attempts

    def reason(self, name: str, exc: BaseException, attempt: int) -> str:
        """The sleep's reason: ``retry fetch after RateLimitError (attempt 2 of 5)``."""
        return (f"retry {name} after {type(exc).__name__} (attempt {attempt + 1} of "
                f"{self.max_attempts})")

    def call(self, name: str, attempt_once: Callable[[], Any]) -> Any:
        """Run the attempts of effect ``name`` (``call_with_retry``)."""
        return call_with_retry(self, name, attempt_once)

    async def call_async(self, name: str, attempt_once: Callable[[], Any]) -> Any:
        """Run the attempts of ``async`` effect ``name`` (``call_with_retry_async``)."""
        return await call_with_retry_async(self, name, attempt_once)


def call_with_retry(policy: Retry, name: str, attempt_once: Callable[[], Any]) -> Any:
    """Call ``attempt_once`` (one journaled effect call) until it succeeds or ``policy``
    gives up; between attempts ``sleep_until`` a due time taken from a journaled clock."""
    from . import effects
    from .waits import sleep_until

    attempt = 1
    while True:
        try:
            return attempt_once()
        except BaseException as exc:  # noqa: BLE001 - the policy decides; else re-raised
            if not policy.retries(exc, attempt):
                raise
            due = effects.time() + policy.delay(attempt, exc)
            sleep_until(due, reason=policy.reason(name, exc, attempt))
            attempt += 1


async def call_with_retry_async(policy: Retry, name: str, attempt_once: Callable[[], Any]
                                ) -> Any:
    """``call_with_retry`` for ``async`` effects: a short back-off is awaited (the event loop
    keeps running), then the (already due) ``sleep_until`` records the wait."""
    import asyncio

    from . import effects
    from .waits import hold_seconds, sleep_until

    attempt = 1
    while True:
        try:
            return await attempt_once()
        except BaseException as exc:  # noqa: BLE001
            if not policy.retries(exc, attempt):
                raise
            now = effects.time()
            delay = policy.delay(attempt, exc)
            if delay <= hold_seconds():
                await asyncio.sleep(max(0.0, now + delay - effects._originals["time.time"]()))
            sleep_until(now + delay, reason=policy.reason(name, exc, attempt))
            attempt += 1
