"""Checking what the reader hands out: rows and JSON from a file may have been written by anyone.

SQLite columns are dynamically typed and JSON can hold anything, so a crafted file can put a
string where a time belongs, ``Infinity`` in a line number, or a preview nested 900 levels deep.
The reader passes every row and record through here, so code built on the reader API (``show``,
the inspector, diff) can rely on the documented types: a malformed row raises
``IntegrityError`` naming the file; a malformed preview is repaired into a well-formed one
(its bad parts replaced by ``"<malformed>"``), so one bad value never hides a whole step.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import IntegrityError

#: Times outside ±1e11 s (beyond the year 5000) are not from a real clock.
MAX_TIME = 1e11
#: Deepest JSON kept in run metadata and unknown preview keys (beyond: dropped).
MAX_JSON_DEPTH = 32
#: Deepest preview tree kept (previews are built with depth 3 by default; beyond: cut).
MAX_PREVIEW_DEPTH = 64
MALFORMED = "<malformed>"
#: Largest frame record, preview or source file the reader inflates (bytes).
MAX_RECORD = 32 * 1024 * 1024


def _bad(path: Path, what: str) -> IntegrityError:
    return IntegrityError(path, f"{what} is malformed")


def _opt(value: Any, kind: type | tuple[type, ...]) -> bool:
    return value is None or isinstance(value, kind)


def _time(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and abs(value) < MAX_TIME)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def json_depth(obj: Any, limit: int) -> int:
    """Return the nesting depth of JSON ``obj``, counting at most to ``limit + 1`` (iterative:
    safe on any depth)."""
    stack = [(obj, 1)]
    deepest = 0
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            stack.extend((child, depth + 1) for child in
                         (node.values() if isinstance(node, dict) else node))
    return deepest


def loads_bounded(text: Any, default: Any, *, kind: type | None = None) -> Any:
    """Parse JSON ``text`` (str/bytes/None); ``default`` when absent, malformed, of the wrong
    ``kind`` or nested deeper than ``MAX_JSON_DEPTH``."""
    if not text or not isinstance(text, (str, bytes)):
        return default
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return default
    if kind is not None and not isinstance(value, kind):
        return default
    opening = (text.count("[") + text.count("{") if isinstance(text, str)
               else text.count(b"[") + text.count(b"{"))
    if opening > MAX_JSON_DEPTH and json_depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return default  # (no text with fewer opening brackets nests deeper: not walked)
    return value


def run_row(path: Path, row: tuple) -> tuple:
    """Check one ``runs`` row as the reader selects it; raise ``IntegrityError`` if malformed."""
    (run_id, seq, name, status, started, ended, pid, host, proc_start, entry, env, parent_run,
     parent_step, error, step_count, chain_head, signature, key_id) = row
    if not isinstance(run_id, str) or not 0 < len(run_id) <= 64:
        raise _bad(path, "a run id")
    what = f"run {run_id[:8]}"
    checks = (_int(seq), isinstance(name, str), isinstance(status, str), _time(started),
              ended is None or _time(ended), pid is None or _int(pid), _opt(host, str),
              _opt(proc_start, str), _opt(entry, str), _opt(env, str), _opt(parent_run, str),
              parent_step is None or _int(parent_step), _opt(error, str),
              _int(step_count) and step_count >= 0, _opt(chain_head, bytes),
              _opt(signature, bytes), _opt(key_id, str))
    if not all(checks):
        raise _bad(path, what)
    return row


#: Bounds of a ``trace_chunks`` row: no run has more steps, no chunk holds more.
MAX_STEP_INDEX = 1 << 40
MAX_CHUNK_STEPS = 1 << 20


def chunk_row(path: Path, first: Any, count: Any, data: Any = b"") -> tuple[int, int, bytes]:
    """Check one ``trace_chunks`` row's ``first``/``count``/``data`` before anything uses them
    (an integer where the bytes belong must not become ``bytes(n)``); raise ``IntegrityError``
    naming the chunk when malformed."""
    where = f"trace chunk at step {first}" if _int(first) else "a trace chunk"
    if not (_int(first) and 0 <= first < MAX_STEP_INDEX and _int(count)
            and 0 < count <= MAX_CHUNK_STEPS and isinstance(data, bytes)):
        raise _bad(path, where)
    return first, count, data


def step_row(path: Path, row: tuple) -> tuple:
    """Check one ``steps`` row; return it with ``frames`` / ``extra`` / ``errors`` parsed:
    a list of hex keys, a dict of name -> value ref, a list of strings."""
    (idx, kind, label, wall, mono, thread, task, function, filename, lineno, depth, frames,
     extra, errors, n_changed, digest) = row
    checks = (_int(idx), isinstance(kind, str), _opt(label, str), _time(wall),
              isinstance(mono, (int, float)) and math.isfinite(mono), isinstance(thread, str),
              _opt(task, str), _opt(function, str), _opt(filename, str),
              lineno is None or _int(lineno), _int(depth), _int(n_changed),
              _opt(digest, bytes))
    if not all(checks):
        raise _bad(path, f"step {idx if _int(idx) else '?'}")
    # A traced step (``chunk_reader.TracedStep``) has no stack list and no hash of its own.
    frame_keys = [] if frames is None and digest is None else stack_keys(frames)
    if frame_keys is None:
        raise _bad(path, f"step {idx}'s stack")
    refs = extra_refs(extra)
    texts = [str(e) for e in loads_bounded(errors, [], kind=list)]
    return (idx, kind, label, wall, mono, thread, task, function, filename, lineno, depth,
            frame_keys, refs, texts, n_changed, digest)


def stack_keys(frames: Any) -> list[str] | None:
    """A ``steps.frames`` column as a list of frame-record keys, or None when malformed."""
    keys = loads_bounded(frames, None, kind=list)
    if keys is None or not all(isinstance(k, str) and len(k) <= 64 for k in keys):
        return None
    return keys


def extra_refs(extra: Any) -> dict[str, dict[str, Any]]:
    """A ``steps.extra`` column as name -> value ref (entries that are not refs dropped)."""
    refs = loads_bounded(extra, {}, kind=dict)
    return {str(name): ref for name, ref in refs.items() if isinstance(ref, dict)}


def frame_record(record: dict[str, Any]) -> tuple[str, str, int, str | None, str | None, list]:
    """Return ``(function, filename, lineno, code hash, source hash, [[name, ref], ...])`` of a
    frame record, repairing wrong types (bad line numbers become 0, bad locals are skipped)."""
    lineno = record.get("lineno")
    code, source = record.get("code"), record.get("source")
    local_refs = record.get("locals")
    return (str(record.get("function", "?"))[:10_000], str(record.get("filename", "?"))[:10_000],
            lineno if _int(lineno) and 0 <= lineno < 2**31 else 0,
            code if isinstance(code, str) else None,
            source if isinstance(source, str) else None,
            [[str(item[0]), item[1]] for item in (local_refs if isinstance(local_refs, list)
                                                  else ())
             if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict)])


def value_ref(ref: dict[str, Any]) -> dict[str, Any]:
    """A value ref with only well-typed fields kept: string hashes and names (``p``, ``b``,
    ``s``, ``x``) and an inline scalar ``v`` (traced steps; ``store.chunks``)."""
    out = {k: v for k, v in ref.items() if isinstance(k, str) and isinstance(v, str)}
    inline = ref.get("v", out)
    if inline is None or isinstance(inline, (int, float, str)):  # bool is an int
        out["v"] = inline
    return out


_KNOWN = {"type", "repr", "children", "len", "more", "truncated", "redacted", "placeholder",
          "not_loadable", "sealed"}
#: A leaf node with only these keys, all well typed, is copied as it is (the fast path).
_LEAF = frozenset({"type", "repr", "len"})


def preview(data: dict[str, Any]) -> dict[str, Any]:
    """Return a well-formed copy of preview ``data`` (see ``values/preview.py`` for the shape):
    ``type``/``repr`` strings, ``children`` a list of ``[label, preview]``, ``len``/``more``
    ints, ``placeholder`` a dict of strings (``reason`` and ``path`` always present); other keys
    (``shape``, ``exception``, …: their readers check them) kept when at most
    ``MAX_JSON_DEPTH`` deep. Iterative, so any nesting is safe."""
    root: dict[str, Any] = {}
    stack = [(data, root, 1)]
    while stack:
        node, out, depth = stack.pop()
        if type(node) is dict and node.keys() <= _LEAF:  # most nodes: a str, a number
            kind, text = node.get("type"), node.get("repr")
            size = node.get("len", 0)
            if type(kind) is str and type(text) is str and type(size) is int:
                out["type"], out["repr"] = kind, text
                if "len" in node:
                    out["len"] = size
                continue
        if not isinstance(node, dict):
            out.update(type="?", repr=MALFORMED)
            continue
        kind, text = node.get("type", "?"), node.get("repr", "")
        out["type"] = kind if isinstance(kind, str) else MALFORMED
        out["repr"] = text if isinstance(text, str) else MALFORMED
        for key in ("len", "more"):
            if _int(node.get(key)):
                out[key] = node[key]
        for key in ("truncated", "redacted"):
            if node.get(key) is True:
                out[key] = True
        holder = node.get("placeholder")
        if isinstance(holder, dict):
            out["placeholder"] = {"reason": "?", "path": "",
                                  **{str(k): str(v) for k, v in holder.items()
                                     if isinstance(v, (str, int, float))}}
        if isinstance(node.get("not_loadable"), str):
            out["not_loadable"] = node["not_loadable"]
        if isinstance(node.get("sealed"), dict):
            out["sealed"] = {str(k): str(v) for k, v in node["sealed"].items()}
        for key, value in node.items():
            if key not in _KNOWN and isinstance(key, str) \
                    and json_depth(value, MAX_JSON_DEPTH) <= MAX_JSON_DEPTH:
                out[key] = value
        children = node.get("children")
        if isinstance(children, list):
            if depth >= MAX_PREVIEW_DEPTH:
                out["truncated"] = True
                continue
            kept = out["children"] = []
            for item in children:
                if isinstance(item, list) and len(item) == 2:
                    child: dict[str, Any] = {}
                    kept.append([str(item[0]), child])
                    stack.append((item[1], child, depth + 1))
    return root
