"""Checking ``marshal`` data from a file before ``marshal.loads`` sees it.

Trace chunks are stored as marshal data (``store.chunks``), and the marshal module is not meant
for untrusted input: its container headers are believed, so the 15 bytes ``b"(" + 2**31-1``
make ``marshal.loads`` allocate a 2-billion-slot tuple (16 GB, 30 s) before failing. A timeline
may come from anyone, so ``check(data)`` walks the stream first and refuses it unless every
declared length fits in the bytes that remain (each element needs at least one byte) and only
plain data types appear: no code objects. Then ``marshal.loads`` allocates at most a small
multiple of ``len(data)``. Format: CPython's ``Python/marshal.c`` (version 4).
"""

from __future__ import annotations

import re
import sys

_FLAG_REF = 0x80
_FIXED = {"0": 0, "N": 0, "F": 0, "T": 0, "S": 0, ".": 0, "i": 4, "g": 8, "y": 16, "r": 4}
_SIZED4, _SEQ4, _LONG, _SIZED1, _TUPLE1, _DICT = -1, -2, -3, -4, -5, -6
_INVALID = -9
#: What follows each type code (without the ref flag): a fixed payload size, or how it is sized.
_SKIP = [_INVALID] * 128
for _code, _size in _FIXED.items():
    _SKIP[ord(_code)] = _size
for _code in "stuaA":
    _SKIP[ord(_code)] = _SIZED4  # 4-byte length, then bytes
for _code in "([<>":
    _SKIP[ord(_code)] = _SEQ4  # 4-byte count, then items
for _code in "zZf":
    _SKIP[ord(_code)] = _SIZED1  # 1-byte length, then bytes
_SKIP[ord("l")] = _LONG  # 4-byte signed digit count, then 2 bytes per digit
_SKIP[ord(")")] = _TUPLE1  # 1-byte count (at most 255 items: nothing big to allocate)
_SKIP[ord("{")] = _DICT  # key, value ... until "0"


def _simple_run() -> re.Pattern[bytes] | None:
    """A pattern for a run of the tokens a trace chunk is mostly made of — ints, refs, floats,
    small tuples' headers, singletons, small longs and short strings — each sized by its own
    bytes, so ``re`` skips them in C. Possessive (Python 3.11+): no backtracking state kept."""
    if sys.version_info < (3, 11):
        return None

    def codes(letters: str) -> bytes:
        found = sorted({ord(c) | flag for c in letters for flag in (0, _FLAG_REF)})
        return b"[" + b"".join(re.escape(bytes([b])) for b in found) + b"]"

    longs = [re.escape(n.to_bytes(4, "little", signed=True)) + b".{%d}" % (2 * abs(n))
             for n in (*range(1, 9), *range(-8, 0))]
    strings = [re.escape(bytes([n])) + b".{%d}" % n for n in range(65)]
    alternatives = [codes("ir") + b".{4}", codes("g") + b".{8}", codes(")") + b".",
                    codes("0NFTS."), codes("l") + b"(?:" + b"|".join(longs) + b")",
                    codes("zZ") + b"(?:" + b"|".join(strings) + b")"]
    return re.compile(b"(?:" + b"|".join(alternatives) + b")*+", re.DOTALL)


_SIMPLE_RUN = _simple_run()


def check(data: bytes) -> str | None:
    """Return None when ``data`` is marshal data of plain types whose every declared size fits
    in ``data``, else what is wrong.

    The items of a container follow its header in the stream, so the type codes are found by
    one linear walk, token after token, without following the nesting: what ``marshal.loads``
    reads is a prefix of these tokens, and each of its allocations is then bounded by the bytes
    left (a container's items need at least one byte each). An object cut short is left to
    ``marshal.loads``, which refuses it without allocating more. Runs of the common small
    tokens are skipped by one regular expression: 0.2 s for the 16 MB of a million traced line
    steps (the token-by-token walk that followed the nesting took 1.6 s, most of a scan of
    the run)."""
    pos, end = 0, len(data)
    skip = _SKIP
    simple = _SIMPLE_RUN.match if _SIMPLE_RUN is not None else None
    while pos < end:
        if simple is not None:
            pos = simple(data, pos).end()  # type: ignore[union-attr]  # matches "" at least
            if pos >= end:
                break
        size = skip[data[pos] & 0x7F]
        pos += 1
        if size >= 0:
            pos += size
        elif size == _SIZED1:
            if pos >= end:
                return "truncated"
            pos += 1 + data[pos]
        elif size == _TUPLE1:
            pos += 1
        elif size == _DICT:
            continue
        elif size == _INVALID:
            return f"type {chr(data[pos - 1] & 0x7F)!r} is not plain data"
        else:
            if pos + 4 > end:
                return "truncated"
            count = int.from_bytes(data[pos:pos + 4], "little", signed=True)
            pos += 4
            if size == _LONG:
                count = abs(count) * 2
            if count < 0 or count > end - pos:
                return "a length larger than the data"
            if size != _SEQ4:
                pos += count
    return None if pos == end else "truncated"
