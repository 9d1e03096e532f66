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

from typing import TYPE_CHECKING, Any

# The public names load their modules on first use (PEP 562), so a process that needs one part
# — the trace writer process, `snapstate ls` — does not pay for the rest: importing everything
# took ~70 ms, which every traced recording waited for twice (writer start and end).
_PUBLIC = {
    "checkpoint": "capture.api", "record": "capture.api", "step": "capture.api",
    "effect": "capture.effects",
    "IntegrityError": "errors", "NotFoundError": "errors", "PayloadLoadError": "errors",
    "SnapStateError": "errors", "TimelineError": "errors", "UntrustedPayloadError": "errors",
    "CaptureOptions": "options", "ValueOptions": "options",
    "Frame": "store.records", "Run": "store.reader", "Step": "store.records",
    "StepSummary": "store.records", "Timeline": "store.reader", "Value": "store.records",
    "open_timeline": "trust.gate", "Placeholder": "values.placeholder",
    # durable waits (issue 17)
    "wait_for": "capture.waits", "sleep_until": "capture.waits", "patched": "capture.waits",
    "EXIT_PAUSED": "capture.waits", "Retry": "capture.retry", "resume": "durable.resume",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .capture import effects
    from .capture.api import checkpoint, record, step
    from .capture.effects import effect
    from .errors import (IntegrityError, NotFoundError, PayloadLoadError, SnapStateError,
                         TimelineError, UntrustedPayloadError)
    from .options import CaptureOptions, ValueOptions
    from .store.reader import Run, Timeline
    from .store.records import Frame, Step, StepSummary, Value
    from .trust.gate import open_timeline
    from .values.placeholder import Placeholder
    from .capture.retry import Retry
    from .capture.waits import EXIT_PAUSED, patched, sleep_until, wait_for
    from .durable.resume import resume


def __getattr__(name: str) -> Any:
    """Import the module of public ``name`` on first use (raises ``AttributeError`` for others)."""
    import importlib

    if name == "effects":
        return importlib.import_module(".capture.effects", __name__)
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module == "capture.api":  # the framework integrations hook into every record block
        importlib.import_module(".integrations", __name__)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "EXIT_PAUSED", "Retry", "patched", "resume", "sleep_until", "wait_for",
    "CaptureOptions", "Frame", "IntegrityError", "NotFoundError", "PayloadLoadError",
    "Placeholder", "Run", "SnapStateError", "Step", "StepSummary", "Timeline", "TimelineError",
    "UntrustedPayloadError", "Value", "ValueOptions", "checkpoint", "effect", "effects",
    "open_timeline", "record", "step",
]
