"""The trace writer process turning a traced replay into a fork (``replay --to N --live``).

A traced replay records the program again into a scratch timeline (``replay/traced.py``) and
compares it with the recording. At the fork point the replay creates the fork in the
recording's file — the parent's steps ``0 … N`` copied (``replay/fork.py``) — and sends the
trace writer ``("fork", FILE, FORK_ID, TAIL)``. From then on the writer process stores the
stream into the fork, so the tracer, its frames and its numbering go on as they were:

- the steps of the scratch run from ``TAIL`` on (those the replay made after the step that
  matched N: other threads' steps written before the switch) are copied onto the fork first;
- every blob of the scratch timeline is copied into the file (the copied steps, the frames
  still alive and the values the tracer already sent name them);
- the next chunk's header is the writer's state now (every live frame and its locals), so the
  fork's live chunks are read without the scratch run's.
"""

from __future__ import annotations

from typing import Any

from ..store.reader import Timeline
from ..store.step_copy import copy_blobs, copy_steps
from ..store.writer import TimelineWriter


def fork_into(builder: Any, scratch: str, path: str, fork_id: str, tail: int,
              signer: Any) -> int:
    """Move ``builder`` (a ``trace_writer.ChunkBuilder`` writing the scratch timeline
    ``scratch``) onto run ``fork_id`` of ``path`` (see the module docstring); returns the
    index the fork's next step gets. Raises ``KeyError`` when the fork is not in ``path``,
    ``WriteFailed``/``TimelineError`` when it cannot be written (the builder is left as it
    was then)."""
    builder.write_chunk()
    old, old_run = builder.writer, builder.run_id
    end = old.next_index(old_run)
    target = TimelineWriter(path, signer=signer)
    try:
        target.attach_run(fork_id)
        with Timeline(scratch) as source:
            copy_blobs(source.engine, target)
            copy_steps(source.run(old_run), tail, end, target, fork_id)
    except BaseException:
        target.close()
        raise
    builder.header = builder.state.next_header()
    builder.writer, builder.run_id = target, fork_id
    old.close()
    return target.next_index(fork_id)
