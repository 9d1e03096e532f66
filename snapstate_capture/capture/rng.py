"""Random-generator states saved at run start and restored on replay (DESIGN.md "Replay and fork").

The ``random`` module's global generator, and numpy's legacy global generator when numpy is
already imported, are saved as JSON blobs (plain lists of integers, never pickles: restoring
them runs no code from the file). Replay restores them at the same point, so draws the program
makes without going through the effect journal repeat exactly.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from ..store.hashing import canonical_json, content_hash


def _random_raw() -> Any:
    """The ``random`` generator's state as read (a tuple: compared with the last one)."""
    return random.getstate()


def _random_state(raw: Any) -> Any:
    version, internal, gauss = raw
    return {"version": version, "internal": list(internal), "gauss": gauss}


def _numpy_raw() -> Any | None:
    """numpy's legacy global generator's state as read, its keys as bytes (comparable), or
    None when numpy is not imported."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    name, keys, pos, has_gauss, cached = numpy.random.get_state()
    return (name, keys.astype("<u4").tobytes(), int(pos), int(has_gauss), float(cached))


def _numpy_state(raw: Any) -> Any:
    name, keys, pos, has_gauss, cached = raw
    return {"name": name, "keys": list(memoryview(keys).cast("I")), "pos": pos,
            "has_gauss": has_gauss, "cached": cached}


#: generator name -> (its state as last read, the (hex key, json bytes) saved for it): a
#: process that records again and again without drawing (``pytest --snapstate``: a run per
#: test) reuses the blob instead of writing 625 integers as JSON each time (~0.1 ms).
_last: dict[str, tuple[Any, tuple[str, bytes]]] = {}


def save_states() -> dict[str, tuple[str, bytes]]:
    """Return ``{"random": (hex key, json bytes), "numpy": ...}`` for the generators in use.

    Never raises: a generator whose state cannot be read is left out.
    """
    out: dict[str, tuple[str, bytes]] = {}
    for name, read_raw, as_state in (("random", _random_raw, _random_state),
                                     ("numpy", _numpy_raw, _numpy_state)):
        try:
            raw = read_raw()
            if raw is None:
                continue
            known = _last.get(name)
            if known is not None and known[0] == raw:
                out[name] = known[1]
                continue
            state = as_state(raw)
        except Exception:  # noqa: BLE001 - a replaced or broken generator is simply not saved
            continue
        data = canonical_json(state)
        out[name] = (content_hash(data).hex(), data)
        _last[name] = (raw, out[name])
    return out


def restore_states(states: dict[str, bytes]) -> list[str]:
    """Restore saved generator states (``{"random": json bytes, ...}``); return the names
    restored. numpy's is restored only if numpy is importable. Raises ``ValueError`` for a
    malformed state."""
    restored = []
    for name, data in states.items():
        state = json.loads(data)
        if name == "random":
            random.setstate((state["version"], tuple(state["internal"]), state["gauss"]))
        elif name == "numpy":
            try:
                import numpy
            except ImportError:
                continue
            numpy.random.set_state((state["name"], numpy.array(state["keys"], dtype="uint32"),
                                    state["pos"], state["has_gauss"], state["cached"]))
        else:
            continue
        restored.append(name)
    return restored
