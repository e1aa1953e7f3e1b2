"""LangGraph checkpoints on plain Redis: a ``BaseCheckpointSaver`` for the shared engine (``AGUI_STATE_URL``).

Why: LangGraph keeps everything a later run of a thread depends on (its conversation, a paused
approval, a paused specialist's subgraph) in the graph's checkpointer, and its own seam for keeping
that elsewhere is a ``BaseCheckpointSaver``. The well-kept Redis saver, langgraph-checkpoint-redis,
needs the RedisJSON and RediSearch modules (built in only from Redis 8; Debian's redis-server 7.0
has neither), so this is a small one on the plain ``redis`` client: LangGraph's ``InMemorySaver``'s
three maps as keys in the engine, stored with the saver's own serializer (``JsonPlusSerializer``),
and the same answers (``tests/test_langgraph_shared.py`` holds it to ``InMemorySaver``).

Layout, every key of a thread under ``agui:langgraph:checkpoints:<thread>:``
(``\\0`` separates the parts of a field or member):

* ``ids``: a sorted set of ``<ns>\\0<checkpoint id>``, all scored 0, so ordered as the ids are
  (LangGraph's ids sort by time): the latest checkpoint of a namespace is one ``ZRANGE ... BYLEX REV``;
* ``checkpoints``: a hash, ``<ns>\\0<checkpoint id>`` -> the checkpoint, its metadata and its parent's id;
* ``blobs``: a hash, ``<ns>\\0<channel>\\0<version>`` -> a channel's value at that version;
* ``writes:<ns>:<checkpoint id>``: a hash per checkpoint, ``<task id>\\0<index>`` -> a pending
  write (an index below 0, a special channel's, is overwritten; others are written once, as in memory);
* ``keys``: the set of the thread's ``writes:`` keys, for :meth:`EngineSaver.adelete_thread`.

Each write is one ``MULTI`` that also sets the expiry of the keys it touches; :meth:`EngineSaver.keep`
sets every key of the thread to one expiry in one script, when a run ends. Only the asynchronous
methods exist (the route drives its graph with LangGraph's async API; the synchronous ones raise
``NotImplementedError``, the base class's). Engine failures raise :class:`store.StoreUnavailable`
within ``timeout_s``, and are recorded for the run (:func:`failure`): ag-ui-langgraph catches what
the graph raises and answers with a RUN_ERROR of its own, so the route needs the record to say why.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.memory import InMemorySaver

from store import StoreUnavailable
from store.engine import TIMEOUT_S, UNAVAILABLE, engine_client

T = TypeVar("T")

PREFIX = "agui:langgraph:checkpoints:"
CONNECTIONS = 32
"""Engine connections of the saver, per worker process (a graph step holds one per call)."""
_SEP = "\x00"

# KEYS: ids, checkpoints, blobs, keys; ARGV[1] the expiry (ms). Every writes: key is in KEYS[4].
_KEEP = """
for _, key in ipairs(redis.call('SMEMBERS', KEYS[4])) do redis.call('PEXPIRE', key, ARGV[1]) end
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
"""
_DELETE = """
for _, key in ipairs(redis.call('SMEMBERS', KEYS[4])) do redis.call('DEL', key) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
"""

_FAILURES: contextvars.ContextVar[list[StoreUnavailable] | None] = contextvars.ContextVar(
    "agui_langgraph_engine_failures", default=None
)


def watch() -> None:
    """Give the current run its own failure record (before the graph starts its tasks, which copy
    the run's context)."""
    _FAILURES.set([])


def failure() -> StoreUnavailable | None:
    """The first engine failure of the current run, if any."""
    failures = _FAILURES.get()
    return failures[0] if failures else None


class EngineSaver(BaseCheckpointSaver[str]):
    """The checkpoints of every thread in Redis at ``url``; connects on first use."""

    get_next_version = InMemorySaver.get_next_version
    """``InMemorySaver``'s versions (``"<number>.<random>"``), so both modes version channels alike."""

    def __init__(self, url: str, *, ttl_s: float, timeout_s: float = TIMEOUT_S) -> None:
        super().__init__()
        self._redis = engine_client(url, connections=CONNECTIONS, timeout_s=timeout_s)
        self._ttl_ms = round(ttl_s * 1000)
        self._keep = self._redis.register_script(_KEEP)
        self._delete = self._redis.register_script(_DELETE)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id: str = config["configurable"]["thread_id"]
        ns: str = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:
            latest = await self._engine(
                self._redis.zrange(
                    self._key(thread_id, "ids"), f"({ns}\x01", f"[{ns}{_SEP}", desc=True, bylex=True, offset=0, num=1
                )
            )
            if not latest:
                return None
            checkpoint_id = latest[0].decode().split(_SEP)[1]
        return await self._tuple(thread_id, ns, checkpoint_id)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - the base class's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """A thread's checkpoints, newest first per namespace, as ``InMemorySaver.list`` filters them
        (every thread at once is not offered: it would scan the engine)."""
        if config is None:
            raise NotImplementedError("EngineSaver lists one thread's checkpoints (config names the thread)")
        thread_id: str = config["configurable"]["thread_id"]
        only_ns = config["configurable"].get("checkpoint_ns")
        only_id = get_checkpoint_id(config)
        before_id = get_checkpoint_id(before) if before else None
        members = await self._engine(self._redis.zrange(self._key(thread_id, "ids"), 0, -1))
        ids = [tuple(member.decode().split(_SEP)) for member in members]
        newest_first = sorted(ids, key=lambda pair: pair[1], reverse=True)
        for ns, checkpoint_id in sorted(newest_first, key=lambda pair: pair[0]):
            if (only_ns is not None and ns != only_ns) or (only_id and checkpoint_id != only_id):
                continue
            if before_id and checkpoint_id >= before_id:
                continue
            found = await self._tuple(thread_id, ns, checkpoint_id)
            if found is None or (filter and any(found.metadata.get(k) != v for k, v in filter.items())):
                continue
            if limit is not None:
                if limit <= 0:
                    return
                limit -= 1
            yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id: str = config["configurable"]["thread_id"]
        ns: str = config["configurable"]["checkpoint_ns"]
        stored = checkpoint.copy()
        values: dict[str, Any] = stored.pop("channel_values")  # type: ignore[misc]
        blobs = {
            _SEP.join((ns, channel, str(version))): _frame(
                self.serde.dumps_typed(values[channel]) if channel in values else ("empty", b"")
            )
            for channel, version in new_versions.items()
        }
        record = [
            *self.serde.dumps_typed(stored),
            *self.serde.dumps_typed(get_checkpoint_metadata(config, metadata)),
            config["configurable"].get("checkpoint_id"),  # the parent
        ]
        member = _SEP.join((ns, checkpoint["id"]))
        ids, checkpoints, blob_key = (self._key(thread_id, part) for part in ("ids", "checkpoints", "blobs"))
        pipe = self._redis.pipeline(transaction=True)
        if blobs:
            pipe.hset(blob_key, mapping=blobs)
        pipe.hset(checkpoints, member, _frame(self.serde.dumps_typed(record)))
        pipe.zadd(ids, {member: 0})
        for key in (ids, checkpoints, blob_key):
            pipe.pexpire(key, self._ttl_ms)
        await self._engine(pipe.execute())
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        thread_id: str = config["configurable"]["thread_id"]
        ns: str = config["configurable"].get("checkpoint_ns", "")
        key = self._writes_key(thread_id, ns, config["configurable"]["checkpoint_id"])
        keys = self._key(thread_id, "keys")
        pipe = self._redis.pipeline(transaction=True)
        for index, (channel, value) in enumerate(writes):
            index = WRITES_IDX_MAP.get(channel, index)
            record = _frame(self.serde.dumps_typed([task_id, channel, *self.serde.dumps_typed(value), task_path]))
            field = f"{task_id}{_SEP}{index}"
            if index >= 0:
                pipe.hsetnx(key, field, record)
            else:
                pipe.hset(key, field, record)
        pipe.sadd(keys, key)
        pipe.pexpire(key, self._ttl_ms)
        pipe.pexpire(keys, self._ttl_ms)
        await self._engine(pipe.execute())

    async def adelete_thread(self, thread_id: str) -> None:
        await self._engine(self._delete(keys=self._thread_keys(thread_id)))

    async def keep(self, thread_id: str, *, ttl_s: float) -> None:
        """Every key of the thread expires ``ttl_s`` from now."""
        await self._engine(self._keep(keys=self._thread_keys(thread_id), args=[round(ttl_s * 1000)]))

    async def aclose(self) -> None:
        await self._redis.aclose()

    async def _tuple(self, thread_id: str, ns: str, checkpoint_id: str) -> CheckpointTuple | None:
        pipe = self._redis.pipeline(transaction=False)
        pipe.hget(self._key(thread_id, "checkpoints"), _SEP.join((ns, checkpoint_id)))
        pipe.hgetall(self._writes_key(thread_id, ns, checkpoint_id))
        raw, writes = await self._engine(pipe.execute())
        if raw is None:
            return None
        checkpoint_type, checkpoint_bytes, metadata_type, metadata_bytes, parent = self.serde.loads_typed(_unframe(raw))
        checkpoint: Checkpoint = self.serde.loads_typed((checkpoint_type, checkpoint_bytes))
        versions = list(checkpoint["channel_versions"].items())
        fields = [_SEP.join((ns, channel, str(version))) for channel, version in versions]
        blobs = await self._engine(self._redis.hmget(self._key(thread_id, "blobs"), fields)) if fields else []
        values = {
            channel: self.serde.loads_typed(typed)
            for (channel, _), blob in zip(versions, blobs, strict=True)
            if blob is not None and (typed := _unframe(blob))[0] != "empty"
        }
        pending = []
        for field, record in writes.items():
            task_id, channel, value_type, value_bytes, task_path = self.serde.loads_typed(_unframe(record))
            index = int(field.decode().rsplit(_SEP, 1)[1])
            pending.append((writes_sort_key(task_path, task_id, index), (task_id, channel, (value_type, value_bytes))))
        pending.sort(key=lambda each: each[0])

        def at(checkpoint_id: str) -> RunnableConfig:
            return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}

        return CheckpointTuple(
            config=at(checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed((metadata_type, metadata_bytes)),
            parent_config=at(parent) if parent else None,
            pending_writes=[(task, channel, self.serde.loads_typed(value)) for _, (task, channel, value) in pending],
        )

    async def _engine(self, call: Awaitable[T]) -> T:
        """``call``'s result; the engine's failures raised as ``StoreUnavailable`` and recorded for the run."""
        try:
            return await call
        except UNAVAILABLE as exc:
            unavailable = StoreUnavailable(f"the state engine failed: {type(exc).__name__}: {exc}")
            failures = _FAILURES.get()
            if failures is not None:
                failures.append(unavailable)
            raise unavailable from exc

    @staticmethod
    def _key(thread_id: str, part: str) -> str:
        return f"{PREFIX}{quote(thread_id, safe='')}:{part}"

    def _writes_key(self, thread_id: str, ns: str, checkpoint_id: str) -> str:
        return self._key(thread_id, f"writes:{quote(ns, safe='')}:{checkpoint_id}")

    def _thread_keys(self, thread_id: str) -> list[str]:
        return [self._key(thread_id, part) for part in ("ids", "checkpoints", "blobs", "keys")]


def _frame(typed: tuple[str, bytes]) -> bytes:
    """A serializer's ``(type, bytes)`` as one value: the type, ``\\0``, the bytes."""
    return typed[0].encode() + b"\x00" + typed[1]


def _unframe(value: bytes) -> tuple[str, bytes]:
    kind, _, data = value.partition(b"\x00")
    return kind.decode(), data
