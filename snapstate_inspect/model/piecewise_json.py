"""Decoding a large JSON document (a hostile preview) without holding the GIL for all of it.

One ``json.loads`` call holds the GIL for the whole document: a 10 MB preview with 200,000
children stalls every other thread, the UI's included, for a quarter of a second or more. The
pure-Python scanner lets other threads run, but is five to eight times slower, which a hostile
preview on the first step turns into seconds of start-up. ``loads`` here walks the top of the
document itself and leaves everything below to the C scanner, a bounded piece at a time:

- the top object member by member; the top array, and arrays that are members of the top
  object (a preview's children, a children blob), element by element;
- runs of elements in one call where the text shows where a run ends: in canonical JSON a child
  ``[label, {preview}]`` is followed by ``,["``, so ``}],["`` a few kilobytes on is a likely
  boundary. The run is decoded on its own (``[`` + run + ``]``); it parses only if the cut was
  a real boundary — a cut inside a string leaves it unterminated, one inside a nested value
  leaves brackets open — and then it parses exactly as in the whole document. When a guess
  fails, the rest of that array goes element by element.

Between pieces, every ``STEP_ASIDE_EVERY`` elements or so, the caller's ``step_aside`` hook
runs, and the GIL is handed over (a sleep of zero) if ``HAND_OVER_SECONDS`` have passed since the
last time: the interpreter would switch by itself after its 5 ms switch interval, but a thread
coming back from SQLite or a lock would then wait that long for every round trip. (Not after
every piece: a sleep of zero costs about 90 us of wall time here, Linux's timer slack.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

#: Elements decoded between two calls of ``step_aside`` (well under a millisecond of work).
STEP_ASIDE_EVERY = 512
HAND_OVER_SECONDS = 0.002
#: Characters of elements decoded in one C call, roughly (some 600 small children, 0.4 ms).
RUN_CHARS = 32 * 1024
#: How far past ``RUN_CHARS`` a run's end is looked for before giving up on runs.
RUN_SLACK = 64 * 1024
RUN_END = '}],["'  # a child's end ``}]``, the comma, the next child's start ``["``

_DECODER = json.JSONDecoder()
_SCAN = _DECODER.scan_once  # the C scanner when available
_SCAN_KEY = json.decoder.scanstring
_WHITESPACE = json.decoder.WHITESPACE.match
_SPACE = frozenset(" \t\n\r")


def loads(text: str, step_aside: Callable[[], None] | None = None) -> Any:
    """``json.loads(text)``, decoded in pieces (see the module docstring).

    ``step_aside()`` is called between pieces, every ``STEP_ASIDE_EVERY`` elements or so (e.g.
    ``Activity.step_aside``: wait while a person uses the UI). The result equals
    ``json.loads(text)`` (duplicate keys: the last wins). Raises ``ValueError``
    (``json.JSONDecodeError``) for malformed text, ``RecursionError`` for nesting deeper than
    the C scanner allows. On the bench's 11 MB, 200,000-child preview about as fast as one
    ``json.loads`` call (0.1 s) and eight times faster than the pure-Python scanner.
    """
    decoder = _Pieces(text, step_aside)
    at = _skip(text, 0)
    opener = text[at:at + 1]
    if opener == "{":
        value, end = decoder.object(at + 1)
    elif opener == "[":
        value, end = decoder.array(at + 1)
    else:
        value, end = _scan(text, at)
    end = _skip(text, end)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _skip(text: str, at: int) -> int:
    """``at`` moved past any whitespace (canonical JSON has none: the common case is cheap)."""
    return _WHITESPACE(text, at).end() if text[at:at + 1] in _SPACE else at


def _next_member(text: str, at: int, closer: str) -> tuple[int, bool]:
    """After a member or element ending at ``at``: ``(start of the next one, False)`` past a
    comma, ``(just past closer, True)`` at ``closer``; raises ``json.JSONDecodeError`` else."""
    at = _skip(text, at)
    separator = text[at:at + 1]
    if separator == ",":
        return _skip(text, at + 1), False
    if separator == closer:
        return at + 1, True
    raise json.JSONDecodeError("Expecting ',' delimiter", text, at)


def _scan(text: str, at: int) -> tuple[Any, int]:
    try:
        return _SCAN(text, at)
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None


class _Pieces:
    """The walk over one document: where it is, and how many elements since the last pause."""

    def __init__(self, text: str, step_aside: Callable[[], None] | None) -> None:
        self.text = text
        self.step_aside = step_aside
        self.since_pause = 0
        self.handed_over = time.perf_counter()

    def counted(self, elements: int) -> None:
        self.since_pause += elements
        if self.since_pause >= STEP_ASIDE_EVERY:
            self.since_pause = 0
            if time.perf_counter() - self.handed_over >= HAND_OVER_SECONDS:
                time.sleep(0)  # releases the GIL: a thread waiting for it gets it at once
                self.handed_over = time.perf_counter()
            if self.step_aside is not None:
                self.step_aside()

    def object(self, at: int) -> tuple[dict, int]:
        """The top object from just after its ``{``: members decoded one by one."""
        text = self.text
        members: dict = {}
        at = _skip(text, at)
        if text[at:at + 1] == "}":
            return members, at + 1
        while True:
            if text[at:at + 1] != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes",
                                           text, at)
            key, at = _SCAN_KEY(text, at + 1)
            at = _skip(text, at)
            if text[at:at + 1] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
            at = _skip(text, at + 1)
            if text[at:at + 1] == "[":
                members[key], at = self.array(at + 1)
            else:
                members[key], at = _scan(text, at)
                self.counted(1)
            at, done = _next_member(text, at, "}")
            if done:
                return members, at

    def array(self, at: int) -> tuple[list, int]:
        """An array from just after its ``[``: runs of elements, or elements one by one."""
        text = self.text
        items: list = []
        at = _skip(text, at)
        if text[at:at + 1] == "]":
            return items, at + 1
        runs = True
        while True:
            if runs:
                run, at, runs = self.run(at)
                if run:
                    items.extend(run)
                    self.counted(len(run))
                    at += 1  # the comma after the run; the next element follows at once
                    continue
            item, at = _scan(text, at)
            items.append(item)
            self.counted(1)
            at, done = _next_member(text, at, "]")
            if done:
                return items, at

    def run(self, at: int) -> tuple[list | None, int, bool]:
        """Elements from ``at`` (an element's start) to a likely boundary some ``RUN_CHARS``
        on, decoded in one call: ``(elements, index of the comma after them, keep trying)``,
        or ``(None, at, False)`` when there is no boundary near or the guess was wrong."""
        text = self.text
        found = text.find(RUN_END, at + RUN_CHARS, at + RUN_CHARS + RUN_SLACK)
        if found < 0:
            return None, at, False
        end = found + 2  # after the run's last ``}]``: the comma
        try:
            run = _DECODER.decode("[" + text[at:end] + "]")
        except ValueError:  # the cut fell inside a string or a nested value
            return None, at, False
        return run, end, True
