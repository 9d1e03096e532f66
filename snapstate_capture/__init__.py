"""snapstate_capture: record a Python program's state at every step into one timeline file.

Light by design (stdlib + dill): it never imports textual, rich, deepdiff or pygments.

    import snapstate_capture as snap

    with snap.record("agent.snap"):
        ...
        snap.checkpoint("after plan", plan=plan)

    timeline = snap.open_timeline("agent.snap")
    step = timeline.runs[-1].steps[-1]
    step.frames[-1].locals["plan"].preview

See DESIGN.md "Public interface" for the contract.
"""

from . import effects
from .api import checkpoint, record, step
from .effects import effect
from .errors import (IntegrityError, NotFoundError, PayloadLoadError, SnapStateError,
                     TimelineError, UntrustedPayloadError)
from .options import CaptureOptions, ValueOptions
from .store.reader import Frame, Run, Step, StepSummary, Timeline, Value, open_timeline
from .values.placeholder import Placeholder

__version__ = "0.1.0"

__all__ = [
    "CaptureOptions", "Frame", "IntegrityError", "NotFoundError", "PayloadLoadError",
    "Placeholder", "Run", "SnapStateError", "Step", "StepSummary", "Timeline", "TimelineError",
    "UntrustedPayloadError", "Value", "ValueOptions", "checkpoint", "effect", "effects",
    "open_timeline", "record", "step",
]
