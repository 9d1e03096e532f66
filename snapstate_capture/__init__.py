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

from importlib import import_module
from typing import Any

from .errors import (IntegrityError, NotFoundError, PayloadLoadError, SnapStateError,
                     TimelineError, UntrustedPayloadError)
from .options import CaptureOptions, ValueOptions
from .store.reader import Frame, Run, Step, StepSummary, Timeline, Value, open_timeline

__version__ = "0.1.0"

#: Names imported on first use (PEP 562): a reader (the inspector, ``snapstate ls``) never
#: needs the recorder, the stack walker or the effects, which cost more to import than the
#: reader itself. ``name -> (module, attribute or None for the module itself)``.
_ON_FIRST_USE = {
    "checkpoint": (".api", "checkpoint"),
    "record": (".api", "record"),
    "step": (".api", "step"),
    "effect": (".effects", "effect"),
    "effects": (".effects", None),
    "Placeholder": (".values.placeholder", "Placeholder"),
}


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, attribute = _ON_FIRST_USE[name]
    module = import_module(module_name, __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


__all__ = [
    "CaptureOptions", "Frame", "IntegrityError", "NotFoundError", "PayloadLoadError",
    "Placeholder", "Run", "SnapStateError", "Step", "StepSummary", "Timeline", "TimelineError",
    "UntrustedPayloadError", "Value", "ValueOptions", "checkpoint", "effect", "effects",
    "open_timeline", "record", "step",
]
