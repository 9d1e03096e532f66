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

_FLAG_REF = 0x80
_FIXED = {ord("0"): 0, ord("N"): 0, ord("F"): 0, ord("T"): 0, ord("S"): 0, ord("."): 0,
          ord("i"): 4, ord("g"): 8, ord("y"): 16, ord("r"): 4}
_SIZED4 = {ord("s"), ord("t"), ord("u"), ord("a"), ord("A")}  # 4-byte length, then bytes
_SIZED1 = {ord("z"), ord("Z")}  # 1-byte length, then bytes
_SEQ4 = {ord("("), ord("["), ord("<"), ord(">")}  # 4-byte count, then items
_TUPLE1 = ord(")")
_DICT = ord("{")
_LONG = ord("l")
_FLOAT_TEXT = ord("f")


def check(data: bytes) -> str | None:
    """Return None when ``data`` is one marshal object of plain data whose every declared size
    fits in ``data``, else what is wrong. Iterative: any nesting is safe."""
    pos, end = 0, len(data)
    pending = [1]  # items still to read, per open container (-1: a dict, until "0")
    while pending:
        if pending[-1] == 0:
            pending.pop()
            continue
        if pos >= end:
            return "truncated"
        code = data[pos] & ~_FLAG_REF
        pos += 1
        if pending[-1] > 0:
            pending[-1] -= 1
        elif code == ord("0"):  # the end of a dict
            pending.pop()
            continue
        if code in _FIXED:
            pos += _FIXED[code]
        elif code in _SIZED4 or code in _SEQ4 or code == _LONG:
            if pos + 4 > end:
                return "truncated"
            size = int.from_bytes(data[pos:pos + 4], "little", signed=True)
            pos += 4
            if code == _LONG:
                size = abs(size) * 2
            if size < 0 or size > end - pos:
                return "a length larger than the data"
            if code in _SEQ4:
                pending.append(size)
            else:
                pos += size
        elif code in _SIZED1 or code == _FLOAT_TEXT:
            if pos >= end:
                return "truncated"
            pos += 1 + data[pos]
        elif code == _TUPLE1:
            if pos >= end:
                return "truncated"
            size = data[pos]
            pos += 1
            if size > end - pos:
                return "a length larger than the data"
            pending.append(size)
        elif code == _DICT:
            pending.append(-1)
        else:
            return f"type {chr(code)!r} is not plain data"
        if pos > end:
            return "truncated"
    return None if pos == end else "trailing bytes"
