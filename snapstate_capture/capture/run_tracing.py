"""Traced runs: the run handed to a trace writer process, and the tracer installed.

``RunTracing`` is the part of ``Recorder`` (``recorder.py``) for ``record(trace=...)``:
``_start_tracing`` hands the begun run to a trace writer process (``tracing/stream.py``; a run
on a database store with its spool), installs the tracer (``tracing/tracer.py``) and records one
``not traced`` step per thread already running. A held run (``held=True``, what
``pytest --snapstate`` uses) reaches the file only through ``keep``, whole, or not (``discard``).
It uses the recorder's ``path``, ``run_id``, ``options``, ``trace``, ``include``, ``exclude``,
``root``, ``held``, ``_begin_in_file``, ``_writer``, ``_stream``, ``_tracer``, ``_frames``,
``build_record`` and ``_warn``.
"""

from __future__ import annotations

import sys
import threading

from ..options import traced_options


class RunTracing:
    """Tracing a run, for ``Recorder`` (module docstring)."""

    def keep(self) -> bool:
        """A held run (``held=True``) after its block: write it to the file now, whole, and
        wait until it is stored. True when the run is in the file (a run not held, or already
        written because it had to be, is there already); False when it could not be written.
        Never raises."""
        stream = self._stream
        if not self.held or stream is None:
            return self.run_id is not None
        return stream.release()

    def discard(self) -> None:
        """A held run after its block: forget it; nothing of it is written (a run that was
        written already — a checkpoint in it needed its index — stays in the file)."""
        if self.held and self._stream is not None:
            self._stream.drop()

    def _start_tracing(self) -> None:
        """Hand the run to a trace writer process and install the tracer (``trace`` mode)."""
        from ..tracing.include import IncludeRule
        from ..tracing.stream import Stream
        from ..tracing.stream_writer import StreamWriter, hold_os_exit
        from ..tracing.tracer import Tracer, _active as tracing

        if tracing:
            raise RuntimeError("another record block is already tracing")
        assert self.run_id is not None
        spool = None
        if self._writer is not None:
            if getattr(self._writer, "spool_path", None) is not None:
                spool = self._writer  # kept (locked) by the stream until the run has ended
            else:
                self._writer.close()
            self._writer = None
        from ..tracing.step_tally import StepTally

        stream = Stream(str(self.path), self.run_id, traced_options(self.options),
                        begin=self._begin_in_file if self.held else None, tally=StepTally,
                        spool=spool)
        try:
            stream.start()
        except BaseException:
            if spool is not None:  # checkpoints only: they go on into the spool
                spool.start_writer()
                self._writer = spool
            raise
        self._stream = stream
        if not self.held:
            # the writer process answering before the program goes on: the first effect or
            # checkpoint waited for its start (0.1-0.2 s, over a second under load) in the
            # middle of the program's own timing — an ``asyncio.wait_for`` around it timed out
            # when recorded; each effect and checkpoint still waits until its step is stored
            stream.request_index()
        self._writer = StreamWriter(self)
        tracer = Tracer(mode=self.trace or "calls", options=self.options, stream=stream,
                        rule=IncludeRule(self.include, self.exclude))
        self._tracer = tracer
        from .lent_captures import LentCaptures

        tracer.encoder.lent = lent = LentCaptures()  # one capture of a value for both
        self._frames.lend_with(lent)
        self._record_other_threads()
        tracer.start(self.root)
        hold_os_exit(stream)

    def _record_other_threads(self) -> None:
        """One step per thread already running: its stack, labelled ``not traced``."""
        me = threading.get_ident()
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in list(sys._current_frames().items()):
            if ident == me or ident not in names or names[ident].startswith("snapstate-"):
                continue
            try:
                record = self.build_record("checkpoint", frame,
                                           f"thread {names[ident]}: not traced", None, None)
                record.thread = names[ident]
                record.task = None
                self._writer.append_step(self.run_id, record, numbered=False)
            except Exception as exc:  # noqa: BLE001
                self._warn(f"could not record thread {names[ident]}: {exc}")
