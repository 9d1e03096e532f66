"""``SnapStateSaver``: a LangGraph checkpointer that keeps LangGraph's checkpoints in a
timeline file.

    graph = builder.compile(checkpointer=SnapStateSaver("agent.snap"))
    graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})
    list(graph.get_state_history(config))          # every super-step, newest first
    graph.update_state(config, {...})              # a fork, as LangGraph users know them

It implements ``BaseCheckpointSaver`` (sync and async: put, put_writes, get_tuple, list,
delete_thread, copy_thread), so ``interrupt()`` / ``Command(resume=...)`` and time travel
work as with LangGraph's own savers. The checkpoints and pending writes live in two tables of
the timeline file (``langgraph_checkpoints``, ``langgraph_writes``), serialized by the
saver's ``serde`` (LangGraph's ``JsonPlusSerializer`` by default: msgpack, no pickle). The
file is a timeline like any other — created as one when missing — so the same file can hold
the ``snap.record`` runs of the program, and every checkpoint is also appended as a
``checkpoint`` step (label ``THREAD step N``, the channels as the step value ``state``) to
one run of the file per saver (``langgraph checkpoints``), which the inspector shows — outside
a ``record`` block: inside one, the recorded run has a checkpoint step per super-step.

Inside a ``snap.record`` block its reads and writes are effects (``langgraph.saver.put``…)
and LangGraph's checkpoint ids are journaled: ``snapstate replay`` is served what the
recording read and writes nothing, and a live fork (``--to N --live``, ``snapstate resume``)
writes its checkpoints as a branch off the recorded checkpoint of the super-step it forked
at, so ``get_state_history`` shows the fork as LangGraph users know them.

Errors: ``TimelineError`` when the file exists and is no timeline; ``SnapStateError`` for a
``postgresql://`` URL: the checkpoints live in a timeline file only (a shared store has no
checkpoint tables yet), refused rather than taken for a file name.
"""

from __future__ import annotations

import atexit
import functools
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (WRITES_IDX_MAP, BaseCheckpointSaver, ChannelVersions,
                                       Checkpoint, CheckpointMetadata, CheckpointTuple,
                                       get_checkpoint_id, get_checkpoint_metadata)

from ...capture.recorder import active_recorder
from .. import messages
from ..calls import Key, call_effect

_SCHEMA = """
CREATE TABLE IF NOT EXISTS langgraph_checkpoints (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    parent_id TEXT, type TEXT, checkpoint BLOB, metadata_type TEXT, metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
CREATE TABLE IF NOT EXISTS langgraph_writes (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT,
    value BLOB, task_path TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
"""


def _where(config: Any) -> dict[str, Any]:
    conf = (config or {}).get("configurable") or {}
    return {"thread": conf.get("thread_id"), "ns": conf.get("checkpoint_ns", "")}


#: What each journaled method is compared by on replay (never the ids LangGraph makes).
_DIGESTS: dict[str, Callable[..., dict[str, Any]]] = {
    "get_tuple": lambda config: _where(config),
    "list": lambda config, *, filter=None, before=None, limit=None: {
        **_where(config), "filter": messages.digest(filter), "before": before is not None,
        "limit": limit},
    "put": lambda config, checkpoint, metadata, new_versions: {
        **_where(config), "metadata": messages.digest(metadata),
        "channels": messages.digest((checkpoint or {}).get("channel_values"))},
    "put_writes": lambda config, writes, task_id, task_path="": {
        **_where(config), "task_path": task_path,
        "writes": [[channel, messages.digest(value)] for channel, value in writes]},
    "delete_thread": lambda thread_id: {"thread": thread_id},
    "copy_thread": lambda source_thread_id, target_thread_id: {
        "from": source_thread_id, "to": target_thread_id},
}


def _journaled(method: Callable[..., Any]) -> Callable[..., Any]:
    """Inside a ``record`` block the saver's reads and writes are effects: a replay is served
    the checkpoints the recording read and writes none (the file keeps the recorded history);
    a live fork's writes are real, so they branch off the recorded checkpoint it forked at —
    a LangGraph fork too."""
    name = method.__name__
    digest = _DIGESTS[name]
    run = (lambda self, *a, **k: list(method(self, *a, **k))) if name == "list" else method

    @functools.wraps(method)
    def journaled(self: Any, *args: Any, **kwargs: Any) -> Any:
        if active_recorder() is None:
            return method(self, *args, **kwargs)
        found = call_effect(f"langgraph.saver.{name}", Key(f"langgraph.saver {name}"), run,
                            (self, *args), kwargs, digest(*args, **kwargs))
        return iter(found) if name == "list" else found
    return journaled


class SnapStateSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpointer storing checkpoints in the timeline file ``path`` (see module
    docstring). ``serde``: LangGraph's serializer protocol (default ``JsonPlusSerializer``);
    ``mirror``: also append each checkpoint as a step of a timeline run (default True)."""

    def __init__(self, path: str | os.PathLike[str], *, serde: Any = None,
                 mirror: bool = True) -> None:
        super().__init__(serde=serde)
        from ...store.locations import is_store_url

        if is_store_url(path):
            from ...errors import SnapStateError

            raise SnapStateError(
                "SnapStateSaver keeps LangGraph's checkpoints in a timeline file; a "
                "postgresql:// store is not supported yet (record the program into the store "
                "with snap.record and give the saver a file)")
        self.path = Path(path)
        _ensure_timeline(self.path)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False,
                                     isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(_SCHEMA)
        self._mirror = _Mirror(self.path) if mirror else None
        # the ids of LangGraph's checkpoints, served on replay: a live fork's first new
        # checkpoint then names the recorded one as its parent
        from ...capture.imports import when_imported
        from .patches import patch_checkpoint_ids

        when_imported("langgraph.pregel._checkpoint", patch_checkpoint_ids)

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """End the mirror run and close the file (the saver is unusable afterwards)."""
        if self._mirror is not None:
            self._mirror.close()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SnapStateSaver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> SnapStateSaver:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------
    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _tuple(self, row: tuple) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, ctype, cdata, mtype, mdata = row
        writes = self._rows(
            "SELECT task_id, channel, type, value, task_path, idx FROM langgraph_writes WHERE "
            "thread_id=? AND checkpoint_ns=? AND checkpoint_id=?",
            (thread_id, ns, checkpoint_id))
        writes.sort(key=lambda w: (w[4], w[0], w[5]))
        config: RunnableConfig = {"configurable": {
            "thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}
        parent: RunnableConfig | None = ({"configurable": {
            "thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent_id}}
            if parent_id else None)
        return CheckpointTuple(
            config=config, checkpoint=self.serde.loads_typed((ctype, cdata)),
            metadata=self.serde.loads_typed((mtype, mdata)), parent_config=parent,
            pending_writes=[(task, channel, self.serde.loads_typed((vtype, value)))
                            for task, channel, vtype, value, _, _ in writes])

    @_journaled
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``), else the thread's latest;
        None when there is none."""
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            rows = self._rows("SELECT * FROM langgraph_checkpoints WHERE thread_id=? AND "
                              "checkpoint_ns=? AND checkpoint_id=?",
                              (thread_id, ns, checkpoint_id))
        else:
            rows = self._rows("SELECT * FROM langgraph_checkpoints WHERE thread_id=? AND "
                              "checkpoint_ns=? ORDER BY checkpoint_id DESC LIMIT 1",
                              (thread_id, ns))
        return self._tuple(rows[0]) if rows else None

    @_journaled
    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None
             ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace, and checkpoint id
        when given), older than ``before``, whose metadata has every ``filter`` item, at most
        ``limit``."""
        where, params = [], []
        if config is not None:
            conf = config["configurable"]
            if conf.get("thread_id") is not None:
                where.append("thread_id=?")
                params.append(conf["thread_id"])
            if conf.get("checkpoint_ns") is not None:
                where.append("checkpoint_ns=?")
                params.append(conf["checkpoint_ns"])
            if get_checkpoint_id(config):
                where.append("checkpoint_id=?")
                params.append(get_checkpoint_id(config))
        if before is not None and get_checkpoint_id(before):
            where.append("checkpoint_id<?")
            params.append(get_checkpoint_id(before))
        sql = "SELECT * FROM langgraph_checkpoints"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY checkpoint_id DESC"
        count = 0
        for row in self._rows(sql, params):
            if limit is not None and count >= limit:
                return
            found = self._tuple(row)
            if filter and not all(found.metadata.get(k) == v for k, v in filter.items()):
                continue
            count += 1
            yield found

    # -- writing -----------------------------------------------------------------------------
    @_journaled
    def put(self, config: RunnableConfig, checkpoint: Checkpoint,
            metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        """Store ``checkpoint`` (with its channel values) under ``config``'s thread and
        namespace, its parent being ``config``'s checkpoint; the new checkpoint's config."""
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        ctype, cdata = self.serde.dumps_typed(checkpoint)
        full = get_checkpoint_metadata(config, metadata)
        mtype, mdata = self.serde.dumps_typed(full)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO langgraph_checkpoints VALUES (?,?,?,?,?,?,?,?)",
                (thread_id, ns, checkpoint["id"], conf.get("checkpoint_id"), ctype, cdata,
                 mtype, mdata))
        if self._mirror is not None and active_recorder() is None:
            # (inside a record block the run has its own checkpoint step per super-step)
            self._mirror.checkpoint(thread_id, ns, checkpoint, full)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                 "checkpoint_id": checkpoint["id"]}}

    @_journaled
    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        """Store a task's pending writes for ``config``'s checkpoint: special channels
        (errors, interrupts, resume values) replace what the task wrote before, ordinary
        writes already stored are kept."""
        conf = config["configurable"]
        key = (conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"])
        with self._lock:
            for idx, (channel, value) in enumerate(writes):
                index = WRITES_IDX_MAP.get(channel, idx)
                vtype, vdata = self.serde.dumps_typed(value)
                verb = "INSERT OR REPLACE" if index < 0 else "INSERT OR IGNORE"
                self._conn.execute(f"{verb} INTO langgraph_writes VALUES (?,?,?,?,?,?,?,?,?)",
                                   (*key, task_id, index, channel, vtype, vdata, task_path))

    @_journaled
    def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and write of ``thread_id``."""
        with self._lock:
            self._conn.execute("DELETE FROM langgraph_checkpoints WHERE thread_id=?",
                               (thread_id,))
            self._conn.execute("DELETE FROM langgraph_writes WHERE thread_id=?", (thread_id,))

    @_journaled
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO langgraph_checkpoints SELECT ?, checkpoint_ns, "
                "checkpoint_id, parent_id, type, checkpoint, metadata_type, metadata FROM "
                "langgraph_checkpoints WHERE thread_id=?", (target_thread_id, source_thread_id))
            self._conn.execute(
                "INSERT OR REPLACE INTO langgraph_writes SELECT ?, checkpoint_ns, "
                "checkpoint_id, task_id, idx, channel, type, value, task_path FROM "
                "langgraph_writes WHERE thread_id=?", (target_thread_id, source_thread_id))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic string versions (``00000000000000000000000000000002.0.…``), as
        LangGraph's own savers make them."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{os.urandom(8).hex()}"

    # -- async (the file is local: the sync methods do not block for long) -----------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None, before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions
                   ) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)


def _ensure_timeline(path: Path) -> None:
    """Create ``path`` as an empty timeline when missing; raise ``TimelineError`` when it
    exists and is not one."""
    from ...store.sqlite.connection import open_for_reading
    from ...store.writer import TimelineWriter

    if path.exists():
        open_for_reading(path).close()
        return
    TimelineWriter(path).close()


class _Mirror:
    """Appends each stored checkpoint as a ``checkpoint`` step of one run of the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._recorder: Any = None
        self._lock = threading.Lock()
        self._closed = False

    def checkpoint(self, thread_id: str, ns: str, checkpoint: Any, metadata: Any) -> None:
        with self._lock:
            if self._closed:
                return
            if self._recorder is None:
                from ...capture.recorder import Recorder
                from ...options import CaptureOptions

                recorder = Recorder(self.path, name="langgraph checkpoints",
                                    options=CaptureOptions(), root=None)
                if not recorder.start():
                    self._closed = True
                    return
                self._recorder = recorder
                atexit.register(self.close)
            step = metadata.get("step") if isinstance(metadata, dict) else None
            where = f"{thread_id}/{ns}" if ns else thread_id
            values = checkpoint.get("channel_values") or {}
            state = {k: v for k, v in values.items() if not str(k).startswith(("__", "branch:"))}
            self._recorder.capture("checkpoint", None, label=f"{where} step {step}", extra={
                "state": state, "metadata": dict(metadata or {}),
                "checkpoint_id": checkpoint.get("id")})

    def close(self) -> None:
        with self._lock:
            self._closed = True
            recorder, self._recorder = self._recorder, None
        if recorder is not None:
            recorder.finish(None)
