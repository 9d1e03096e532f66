"""The local spool of a run recorded into a database store: a file on local disk that the
recorder appends each change to, and the spool writer process (``capture.spool_writer``)
stores from, so recording never waits on the database.

A spool file is ``MAGIC`` followed by frames: ``uint32 length``, ``uint32 crc32`` (both little
endian) and a ``marshal`` body. The first frame is the header ``("spool", VERSION, url,
run_id)``; the others are changes in the order the recorder made them:

- ``("begin", fields)`` — ``TimelineWriter.begin_run``'s keyword arguments (with ``run_id``
  and ``facts``);
- ``("step", record_fields, effect_or_None)`` — one ``StepRecord`` as a dict;
- ``("effect", row, blobs)`` — ``TimelineWriter.add_effect``;
- ``("chunk", count, data, blobs[, manifests, bases])`` — ``TimelineWriter.append_chunk`` (a
  traced run's steps, appended by its trace writer process, which takes the spool over after
  the ``begin``; the manifest keys and delta bases only when there are any);
- ``("end", status, error_or_None)``.

Each frame is written with one ``os.write`` (the recorder's only cost per step); a recorder
killed mid-frame leaves a short last frame, which readers take as not there yet (and, once
the recorder is gone, as the step in flight that is lost). Spools live in ``spool_dir()``,
owner-only, named after their run; the spool writer deletes one once everything in it is
stored. Marshal is the format of the recording interpreter: a spool is stored by the same
Python that wrote it.
"""

from __future__ import annotations

import marshal
import os
import struct
import zlib
from pathlib import Path
from typing import Any

#: The first bytes of a spool file.
MAGIC = b"SNAPSTATE-SPOOL\n"
#: Version of the frame layout and of the header frame.
VERSION = 1
#: Where spools go instead of ``~/.cache/snapstate/spool`` (e.g. a faster local disk).
SPOOL_DIR_ENV = "SNAPSTATE_SPOOL_DIR"
_FRAME = struct.Struct("<II")
_READ_SIZE = 4 * 1024 * 1024


def spool_dir() -> Path:
    """The directory spool files live in (``$SNAPSTATE_SPOOL_DIR``, else ``snapstate/spool``
    under ``$XDG_CACHE_HOME`` or ``~/.cache``), created owner-only when missing. Raises
    ``OSError`` when it cannot be made."""
    chosen = os.environ.get(SPOOL_DIR_ENV)
    if chosen:
        path = Path(chosen)
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                  ".cache")
        path = Path(cache) / "snapstate" / "spool"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def encode_frame(change: Any) -> bytes:
    """One frame holding ``change`` (plain data: what ``marshal`` takes)."""
    body = marshal.dumps(change)
    return _FRAME.pack(len(body), zlib.crc32(body)) + body


class SpoolFile:
    """The recorder's end of a spool: created at ``path`` (owner-only, must not exist) with its
    header frame, or opened to append to (``existing``); ``append`` writes one change. ``OSError`` on a failed write (a full disk):
    the change is not in the spool, and a torn frame, if any, ends what readers take."""

    def __init__(self, path: Path, url: str, run_id: str, *, existing: bool = False) -> None:
        self.path = path
        if existing:  # appended to by a second process (a traced run's trace writer)
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND)
            return
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        self.append_bytes(MAGIC + encode_frame(("spool", VERSION, url, run_id)))

    def append(self, change: Any) -> None:
        """Write one change (``marshal``-able plain data)."""
        self.append_bytes(encode_frame(change))

    def append_bytes(self, data: bytes) -> None:
        if self._fd is None:
            raise OSError("the spool is closed")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SpoolReader:
    """The spool writer's end: ``read()`` returns the complete frames added since the last call
    (decoded changes), leaving a short last frame for later. ``header`` is the header frame's
    ``(url, run_id)``. Raises ``ValueError`` when the file is not a spool of this version."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = open(path, "rb")
        self._buffer = b""
        magic = self._handle.read(len(MAGIC))
        if magic != MAGIC:
            raise ValueError(f"{path}: not a SnapState spool")
        header = self.read(limit=1)
        if not header or header[0][:2] != ("spool", VERSION):
            raise ValueError(f"{path}: not a spool this SnapState reads")
        self.header: tuple[str, str] = (header[0][2], header[0][3])
        #: True once a complete frame failed its checksum: nothing after it is taken.
        self.damaged = False

    def read(self, limit: int | None = None) -> list[Any]:
        """Complete frames not read yet, at most ``limit``; ``[]`` when none is complete."""
        data = self._buffer
        want = _READ_SIZE - len(data)
        if len(data) >= _FRAME.size:  # a big first frame is read whole
            want = max(want, _FRAME.size + _FRAME.unpack_from(data)[0] - len(data))
        if want > 0:
            data += self._handle.read(want)
        changes: list[Any] = []
        at = 0
        while limit is None or len(changes) < limit:
            if len(data) - at < _FRAME.size:
                break
            length, crc = _FRAME.unpack_from(data, at)
            end = at + _FRAME.size + length
            if len(data) < end:
                break
            body = data[at + _FRAME.size:end]
            if zlib.crc32(body) != crc or getattr(self, "damaged", False):
                self.damaged = True
                at = len(data)
                break
            changes.append(marshal.loads(body))
            at = end
        self._buffer = data[at:]
        return changes

    @property
    def pending_bytes(self) -> int:
        """Bytes read from the file that are not a complete frame yet."""
        return len(self._buffer)

    def close(self) -> None:
        self._handle.close()
