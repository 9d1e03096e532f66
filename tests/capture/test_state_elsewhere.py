"""A value whose state lives outside the instance (``weakref.finalize``: alive while its
class's ``_registry`` holds it) shows its state at every step: its pickle never changes, so
the checkpoint path's change detector and the tracer's content cache kept the first capture,
and a finalizer showed ``for 'Res' at …`` after ``detach()``."""

from __future__ import annotations

import weakref

import snapstate_capture as snap

HERE = __file__


class Resource:
    pass


def note(finalizer):
    return finalizer


def _checkpointed(path):
    resource = Resource()
    finalizer = weakref.finalize(resource, print, "closed")
    snap.checkpoint("attached")
    finalizer.detach()
    snap.checkpoint("detached")
    return resource


def _traced(resource):
    finalizer = weakref.finalize(resource, print, "closed")
    note(finalizer)
    finalizer.detach()
    note(finalizer)


def test_a_detached_finalizer_shows_dead_at_checkpoints(tmp_path):
    path = tmp_path / "checkpoints.snap"
    with snap.record(path):
        _checkpointed(path)
    with snap.open_timeline(path) as timeline:
        shown = {step.label: step.frames[-1].locals["finalizer"].repr
                 for step in timeline.runs[-1].steps}
    assert "for 'Resource'" in shown["attached"] and shown["detached"].endswith("; dead>")


def test_a_detached_finalizer_shows_dead_in_traced_steps(tmp_path):
    path = tmp_path / "traced.snap"
    resource = Resource()
    with snap.record(path, trace="calls", include=[HERE]):
        _traced(resource)
    with snap.open_timeline(path) as timeline:
        shown = [step.frames[-1].locals["finalizer"].repr for step in timeline.runs[-1].steps
                 if step.kind == "call" and step.function == "note"]
    assert len(shown) == 2
    assert "for 'Resource'" in shown[0] and shown[1].endswith("; dead>")
