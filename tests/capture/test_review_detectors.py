"""Cases an adversarial review of this session's change detectors and part-by-part payloads
found storing something other than what the program held (a verdict taken per class on its
first instance: a ``mappingproxy`` or a weak proxy that dill refused once was then detected by
its preview alone, and a change its preview did not show was missed), or other bytes than
checking each part first gives (dill assumed able to write a part, then writing it with the
parts inside replaced)."""

from __future__ import annotations

import types
import weakref

import snapstate_capture as snap
from snapstate_capture.options import ValueOptions
from snapstate_capture.values import payload


class Foo:
    def __init__(self):
        self.n = 0

    def __repr__(self):
        return f"Foo({self.n})"


def _loaded(path, name):
    with snap.open_timeline(path, trust=True) as timeline:
        return [next(f.locals[name] for f in reversed(s.frames) if name in f.locals).load()
                for s in timeline.runs[-1].steps if s.kind == "checkpoint"
                and any(name in f.locals for f in s.frames)]


def test_a_mappingproxy_after_one_dill_refused_is_still_captured_when_it_changes(tmp_path):
    path = tmp_path / "m.snap"
    with snap.record(path):
        first = types.MappingProxyType({"g": (i for i in range(3))})
        snap.checkpoint()        # _REFUSED_TYPES[mappingproxy] = True (dill refuses this one)
        del first
        d = {f"k{i}": i for i in range(60)}  # more than the preview's repr shows
        value = types.MappingProxyType(d)
        snap.checkpoint()
        d["k59"] = -1
        snap.checkpoint()
    assert [m["k59"] for m in _loaded(path, "value")] == [59, -1]


def test_a_weak_proxy_after_one_to_a_generator_follows_its_referent(tmp_path):
    path = tmp_path / "p.snap"
    foo = Foo()
    with snap.record(path):
        gen = (i for i in range(3))
        first = {"p": weakref.proxy(gen), "f": lambda: 0}
        snap.checkpoint()        # _REFUSED_TYPES[weakproxy] = True
        del first
        value = {"p": weakref.proxy(foo), "f": lambda: 0}
        snap.checkpoint()
        foo.n = 1
        snap.checkpoint()
    assert [v["p"].n for v in _loaded(path, "value")] == [0, 1]


def test_a_part_dill_cannot_write_alone_is_a_placeholder_even_when_its_insides_are():
    class S:
        def __init__(self):
            self.g = (i for i in range(3))

    value = [S()]
    value.append(types.MappingProxyType({"s": value[0]}))
    result = payload.serialize(value, ValueOptions(), path="value")
    assert [p["path"] for p in result.placeholders] == ["value[0].g", "value[1]"]
