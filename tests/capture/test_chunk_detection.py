"""Change detection of big containers costs what changed (issue 19): unchanged chunks are judged
by element identity, an in-place edit deep inside an old chunk is caught by the sweep within its
bound (at once with ``deep_check_chunks=None``), and manifests beyond ``FANOUT`` chunks are trees
whose per-step writes do not grow with the container."""

from __future__ import annotations

import json

import pytest

import snapstate_capture as snap
from snapstate_capture.capture import chunk_capture
from snapstate_capture.capture.chunk_capture import FANOUT
from snapstate_capture.capture.frames import StackCapture
from snapstate_capture.capture.valuecache import ValueCache
from snapstate_capture.options import CaptureOptions
from snapstate_capture.store import blobs


def _messages(n: int) -> list[dict]:
    return [{"role": "user", "content": f"message {i} " + "x" * 40} for i in range(n)]


def _capture(cache: ValueCache, value, name: str = "messages"):
    out = StackCapture()
    return cache.ref(("f", 0, name), value, name, out), out


def _content(out_blobs: dict[str, bytes], manifests: set[str], key: str) -> bytes:
    """The content of ``key`` from blobs queued across captures (manifests joined)."""
    data = out_blobs[key]
    if key not in manifests:
        return data
    pieces = blobs.manifest_pieces(data)
    assert pieces is not None
    return b"".join(_content(out_blobs, manifests, p.hex()) for p in pieces)


class _Store:
    """Every blob and manifest a cache queued, as a file would hold them."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: set[str] = set()

    def take(self, out: StackCapture) -> None:
        self.blobs.update(out.blobs)
        self.manifests |= out.manifests

    def load(self, ref: dict) -> object:
        from snapstate_capture.values import loads

        return loads("pickle", _content(self.blobs, self.manifests, ref["b"]))


def test_an_unchanged_list_of_dicts_is_never_pickled_whole(monkeypatch):
    cache = ValueCache(CaptureOptions())
    messages = _messages(4000)  # 250 chunks
    first, _ = _capture(cache, messages)
    pickled = []
    original = chunk_capture.dumps
    monkeypatch.setattr(chunk_capture, "dumps", lambda part: pickled.append(part) or
                        original(part))
    again, out = _capture(cache, messages)
    assert again is first and not out.blobs
    assert len(pickled) == CaptureOptions().deep_check_chunks  # the sweep, nothing else


def test_an_append_pickles_the_tail_and_the_sweep_only(monkeypatch):
    cache = ValueCache(CaptureOptions())
    messages = _messages(4000)
    _capture(cache, messages)
    pickled = []
    original = chunk_capture.dumps
    monkeypatch.setattr(chunk_capture, "dumps", lambda part: pickled.append(part) or
                        original(part))
    messages.append({"role": "assistant", "content": "new"})
    ref, out = _capture(cache, messages)
    assert len(pickled) <= 2 + CaptureOptions().deep_check_chunks  # the tail, the sweep
    assert ref["b"] in out.manifests


def test_an_in_place_edit_deep_inside_is_caught_within_the_sweep_bound():
    options = CaptureOptions()
    cache = ValueCache(options)
    store = _Store()
    messages = _messages(4000)
    chunks = -(-len(messages) // 16)
    bound = -(-chunks // options.deep_check_chunks)
    ref, out = _capture(cache, messages)
    store.take(out)
    messages[1234]["content"] = "edited in place"
    seen_at = None
    for capture in range(1, bound + 1):
        ref, out = _capture(cache, messages)
        store.take(out)
        if store.load(ref)[1234]["content"] == "edited in place":
            seen_at = capture
            break
    assert seen_at is not None and seen_at <= bound, (seen_at, bound)
    assert store.load(ref) == messages


def test_exact_mode_catches_an_in_place_edit_at_once():
    cache = ValueCache(CaptureOptions(deep_check_chunks=None))
    store = _Store()
    messages = _messages(4000)
    for step in range(5):
        messages[(step * 977) % 4000]["content"] = f"edited at {step}"
        ref, out = _capture(cache, messages)
        store.take(out)
        assert store.load(ref) == messages


@pytest.mark.parametrize("edit", ["append", "replace", "insert", "pop", "delete", "reorder"])
def test_identity_changes_anywhere_are_seen_at_once(edit):
    cache = ValueCache(CaptureOptions())
    store = _Store()
    values = _messages(3000)
    table = {f"k{i}": i * 1.5 for i in range(5000)}  # scalars: 20 chunks of 256
    for step in range(4):
        if edit == "append":
            values.append({"role": "tool", "content": str(step)})
            table[f"new{step}"] = step
        elif edit == "replace":
            values[1500 + step] = {"role": "tool", "content": str(step)}
            table[f"k{2500 + step}"] = -step
        elif edit == "insert":
            values.insert(10 + step, {"role": "tool", "content": str(step)})
        elif edit == "pop":
            values.pop()
            table.popitem()
        elif edit == "delete":
            del values[700]
            del table[f"k{700 + step}"]
        else:
            values[5], values[2900] = values[2900], values[5]
            table[f"k{step}"] = table.pop(f"k{4000 + step}")
        ref, out = _capture(cache, values, "values")
        store.take(out)
        assert store.load(ref) == values
        ref, out = _capture(cache, table, "table")
        store.take(out)
        assert store.load(ref) == table


def test_tree_manifests_keep_each_step_small():
    cache = ValueCache(CaptureOptions())
    store = _Store()
    sizes = {}
    for count in (FANOUT * 16 + 5, FANOUT * 16 * 8 + 5):  # 2 and 9 groups of chunks
        messages = _messages(count)
        ref, out = _capture(cache, messages, f"m{count}")
        store.take(out)
        messages.append({"role": "assistant", "content": "one more"})
        ref, out = _capture(cache, messages, f"m{count}")
        store.take(out)
        assert store.load(ref) == messages
        manifests = [key for key in out.manifests]
        sizes[count] = sum(len(out.blobs[k]) for k in manifests)
        assert len(manifests) == 2  # the top and the last group
    small, big = sizes.values()
    assert big < small + 8 * 16 + 1  # the top grows by one key per group, nothing else


def test_tree_manifests_read_back_from_a_file(snap_path):
    messages = _messages(FANOUT * 16 * 2 + 7)
    with snap.record(snap_path, name="tree"):
        for step in range(3):
            messages.append({"role": "assistant", "content": f"reply {step}"})
            snap.checkpoint()
    with snap.open_timeline(snap_path, trust=True) as timeline:
        steps = timeline.runs[-1].steps
        assert steps[-1].frames[-1].locals["messages"].load() == messages
        assert len(steps[0].frames[-1].locals["messages"].load()) == len(messages) - 2


def test_a_chunk_of_an_unpicklable_element_falls_back_to_the_whole_value():
    cache = ValueCache(CaptureOptions())
    values = _messages(100)
    values.append({"role": "tool", "content": lambda: None})  # pickle refuses a lambda
    ref, out = _capture(cache, values, "values")
    preview = json.loads(out.blobs[ref["p"]])
    assert preview["len"] == 101
    assert ref["b"] not in out.manifests  # captured whole (dill, or a placeholder part)


@pytest.mark.parametrize("edit", ["string", "nested list", "bytearray", "key renamed"])
def test_the_sweep_sees_each_kind_of_in_place_edit(edit):
    cache = ValueCache(CaptureOptions())
    store = _Store()
    messages = [{"role": "user", "content": f"m{i}", "parts": [f"p{i}"],
                 "raw": bytearray(b"abc")} for i in range(4000)]
    ref, out = _capture(cache, messages)
    store.take(out)
    target = messages[2500]
    if edit == "string":
        target["content"] = "m" + "2500"  # equal text would be no change: make it differ
        target["content"] += "!"
    elif edit == "nested list":
        target["parts"].append("more")
    elif edit == "bytearray":
        target["raw"][0] = ord("z")  # no new object anywhere: only a pickle sees it
    else:
        target["name"] = target.pop("role")  # same value object, same count
    bound = -(-(-(-4000 // 16)) // CaptureOptions().deep_check_chunks)
    for _ in range(bound):
        ref, out = _capture(cache, messages)
        store.take(out)
    assert store.load(ref) == messages
