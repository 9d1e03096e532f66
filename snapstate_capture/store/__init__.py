"""The timeline file: SQLite schema, blob encoding, the writer and the reader API."""

from .reader import Frame, ParentRef, Run, Step, Steps, Timeline, Value, open_timeline
from .writer import StepRecord, TimelineWriter

__all__ = ["Frame", "ParentRef", "Run", "Step", "StepRecord", "Steps", "Timeline",
           "TimelineWriter", "Value", "open_timeline"]
