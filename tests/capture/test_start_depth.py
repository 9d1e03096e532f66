"""``capture/start_depth``: a starter called through ``at_depth`` runs with exactly the asked
number of frames beneath it, or as it is when the caller is already deeper."""

from __future__ import annotations

import sys

from snapstate_capture.capture.start_depth import at_depth, depth_for_callee, frames_beneath


def _beneath_me() -> int:
    return frames_beneath(sys._getframe())


def test_the_starter_gets_the_asked_depth():
    here = depth_for_callee()
    assert _beneath_me() == here
    for extra in (1, 2, 7):
        assert at_depth(here + extra, _beneath_me)() == here + extra


def test_a_shallower_or_missing_depth_leaves_the_starter_as_it_is():
    here = depth_for_callee()
    assert at_depth(here, _beneath_me) is _beneath_me
    assert at_depth(here - 3, _beneath_me) is _beneath_me
    assert at_depth(None, _beneath_me) is _beneath_me
    assert at_depth(True, _beneath_me) is _beneath_me


def test_arguments_reach_the_starter():
    assert at_depth(depth_for_callee() + 3, lambda a, *, b: (a, b))(1, b=2) == (1, 2)
