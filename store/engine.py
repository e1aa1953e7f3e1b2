"""The store in Redis (``AGUI_STATE_URL=redis://host:port/db``): what every worker and replica shares.

Why: the same :class:`store.base.Store` as :class:`store.memory.MemoryStore`, operation for
operation, on plain Redis 7.0 (no modules), so several server processes serve one thread. Each
operation is one command, one ``MULTI``/``EXEC`` or one Lua script, so it is atomic for every other
process. Keys are the callers' own, never prefixed. The scripts read lease keys they are not handed
(``park``), so this is for a standalone server (or a primary with replicas), not Redis Cluster.

How each part maps:

* records: ``GET`` / ``SET PX`` / ``DEL``; leases: ``SET NX PX``, and a compare-and-``PEXPIRE`` /
  compare-and-``DEL`` script for ``refresh`` / ``release``;
* replay logs: a stream per key whose entry ids are ``0-<seq>``, so an SSE id is the plain number
  (numbers start at 1: Redis refuses the id ``0-0``). ``append`` is one ``MULTI`` of
  ``XADD ... MAXLEN ~`` per entry and ``PEXPIRE`` (approximate trimming drops whole stream nodes,
  so a log keeps at least ``max_len`` entries and at most about one node, by default 100, more);
  ``read`` is ``XRANGE`` and, only when that finds nothing, ``XREAD BLOCK``. A log that does not
  exist yet is waited on like an empty one (its first ``XADD`` wakes the read), as in memory;
* the approval ledger: a sorted set scored by park time, decided by one script.

Connections, sized on purpose: short commands share one bounded pool (``COMMAND_CONNECTIONS``; a
burst of requests queues for a connection instead of opening hundreds), while a blocked ``XREAD``
holds a connection for as long as it waits, so blocked reads get a pool of their own and never take
the connections the commands need: 200 waiting SSE streams cannot stall a ``GET``. At most
``max_readers`` reads block at once (one engine connection each); a read beyond that waits for a
slot within its own ``wait_s`` and, when none frees in time, looks once more without blocking.

Failures: no retries (a retried ``SET NX`` or ``XADD`` after a lost reply would misreport), so an
unreachable engine (refused, reset: ``redis.exceptions.ConnectionError``) or a silent one (nothing
within ``timeout_s`` of sending: ``TimeoutError``), and one that refuses writes for now (a replica
after a failover, or full), raise :class:`store.base.StoreUnavailable` with the client's error as
its cause. A connection broken by an engine restart is replaced when next taken from the pool, so
the store works again by itself. Waiting for a pooled connection is this process's own queue, not
the engine's silence, so it has no deadline of its own (:func:`engine_client`).
Blocked reads wait in slices of ``READ_SLICE_S``, with a read timeout ``timeout_s`` longer, so a
silent engine fails them too instead of leaving them hanging.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import ParamSpec, TypeVar

from redis import exceptions
from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.connection import parse_url
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from store.base import Parked, StoreUnavailable

TIMEOUT_S = 5.0
"""How long the engine may take to accept a connection or to answer a command, by default."""
COMMAND_CONNECTIONS = 256
"""Connections for everything but blocked reads, per store (per worker process). Sized for a loaded
process, not a quick one: a connection is in use until the event loop has taken its answer, and with
50 unpaced runs a process on two busy cores held up to 98 at once (its runs' heartbeats come
together); at 64, commands queued behind up to 89 others and took up to 3.6 s."""
READ_SLICE_S = 10.0
"""The longest single ``XREAD BLOCK``; a longer ``wait_s`` blocks again until it is spent."""
FIELD = b"f"
"""The one field of a log entry (stream entries are field-value pairs)."""
UNAVAILABLE = (
    exceptions.ConnectionError,
    exceptions.TimeoutError,
    exceptions.ReadOnlyError,
    exceptions.OutOfMemoryError,
)
"""What the client raises when the engine cannot serve now: these become :class:`StoreUnavailable`."""

_REFRESH = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS[1] the parked set; ARGV: thread, max_parked, min_age_s, lease key prefix. The engine's
# clock scores the set, so replicas whose clocks differ agree on who waited longest.
_PARK = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
redis.call('ZREM', KEYS[1], ARGV[1])
local evicted = nil
local size = redis.call('ZCARD', KEYS[1])
if size >= tonumber(ARGV[2]) then
  local oldest, at = nil, nil
  for i = 0, size - 1 do
    local entry = redis.call('ZRANGE', KEYS[1], i, i, 'WITHSCORES')
    if redis.call('EXISTS', ARGV[4] .. entry[1]) == 0 then
      oldest, at = entry[1], tonumber(entry[2])
      break
    end
  end
  if oldest == nil or now - at < tonumber(ARGV[3]) then return {'refused'} end
  redis.call('ZREM', KEYS[1], oldest)
  evicted = oldest
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
return {'parked', evicted}
"""


P = ParamSpec("P")
R = TypeVar("R")


def _engine_call(operation: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """``operation``, with the engine's failures raised as :class:`StoreUnavailable`."""

    @functools.wraps(operation)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await operation(*args, **kwargs)
        except UNAVAILABLE as exc:
            raise StoreUnavailable(f"the state engine failed: {type(exc).__name__}: {exc}") from exc

    return call


class RedisStore:
    """:class:`store.base.Store` in Redis. Create it anywhere; it connects on first use."""

    shared = True

    def __init__(self, url: str, *, timeout_s: float = TIMEOUT_S, max_readers: int = 512) -> None:
        self.url = url
        options = _options(url, timeout_s)
        read_timeout_s = float(options["socket_timeout"]) + READ_SLICE_S
        readers = ConnectionPool(max_connections=max_readers, **{**options, "socket_timeout": read_timeout_s})
        self._commands = engine_client(url, connections=COMMAND_CONNECTIONS, timeout_s=timeout_s)
        self._readers = Redis.from_pool(readers)
        self._reader_slots = asyncio.Semaphore(max_readers)
        self._refresh = self._commands.register_script(_REFRESH)
        self._release = self._commands.register_script(_RELEASE)
        self._park = self._commands.register_script(_PARK)

    # --- records ------------------------------------------------------------------------------
    @_engine_call
    async def get(self, key: str) -> bytes | None:
        return await self._commands.get(key)

    @_engine_call
    async def put(self, key: str, value: bytes, *, ttl_s: float) -> None:
        await self._commands.set(key, value, px=_ms(ttl_s))

    @_engine_call
    async def delete(self, *keys: str) -> None:
        if keys:
            await self._commands.delete(*keys)

    # --- leases -------------------------------------------------------------------------------
    @_engine_call
    async def claim(self, key: str, holder: str, *, ttl_s: float) -> bool:
        return bool(await self._commands.set(key, holder, nx=True, px=_ms(ttl_s)))

    @_engine_call
    async def refresh(self, key: str, holder: str, *, ttl_s: float) -> bool:
        return bool(await self._refresh(keys=[key], args=[holder, _ms(ttl_s)]))

    @_engine_call
    async def release(self, key: str, holder: str) -> None:
        await self._release(keys=[key], args=[holder])

    # --- replay logs --------------------------------------------------------------------------
    @_engine_call
    async def append(self, key: str, entries: Sequence[tuple[int, bytes]], *, max_len: int, ttl_s: float) -> None:
        async with self._commands.pipeline(transaction=True) as pipe:
            for seq, frame in entries:
                pipe.xadd(key, {FIELD: frame}, id=f"0-{seq}", maxlen=max_len, approximate=True)
            pipe.pexpire(key, _ms(ttl_s))
            await pipe.execute()

    @_engine_call
    async def read(self, key: str, after: int, *, count: int, wait_s: float) -> list[tuple[int, bytes]]:
        deadline = time.monotonic() + wait_s
        found = await self._commands.xrange(key, _above(after), "+", count=count)
        if found or wait_s <= 0:
            return _entries(found)
        try:
            async with asyncio.timeout(wait_s):
                await self._reader_slots.acquire()
        except TimeoutError:  # every reader slot stayed taken: look once more, without blocking
            return _entries(await self._commands.xrange(key, _above(after), "+", count=count))
        try:
            while True:  # at least once, even if the slot came at the deadline: entries may have come meanwhile
                left = deadline - time.monotonic()
                reply = await self._readers.xread(
                    {key: f"0-{max(after, 0)}"}, count=count, block=_ms(min(left, READ_SLICE_S))
                )
                if reply:
                    return _entries(reply[0][1])
                if time.monotonic() >= deadline:
                    return []
        finally:
            self._reader_slots.release()

    @_engine_call
    async def first(self, key: str) -> int | None:
        found = await self._commands.xrange(key, "-", "+", count=1)
        return _entries(found)[0][0] if found else None

    # --- the approval ledger ------------------------------------------------------------------
    @_engine_call
    async def park(self, key: str, thread: str, *, max_parked: int, min_age_s: float, leases: str) -> Parked:
        reply = await self._park(keys=[key], args=[thread, max_parked, repr(min_age_s), leases])
        if reply[0] == b"refused":
            return Parked("refused")
        return Parked("parked", reply[1].decode() if len(reply) > 1 else None)

    @_engine_call
    async def unpark(self, key: str, thread: str) -> None:
        await self._commands.zrem(key, thread)

    @_engine_call
    async def parked(self, key: str) -> list[str]:
        return [thread.decode() for thread in await self._commands.zrange(key, 0, -1)]

    async def aclose(self) -> None:
        await self._readers.aclose()
        await self._commands.aclose()


def engine_client(url: str, *, connections: int, timeout_s: float = TIMEOUT_S) -> Redis:
    """A client of the engine at ``url`` for short commands, as every engine user here wants one:
    plain RESP2, no retries, connect and answer timeouts of ``timeout_s``, at most ``connections``
    connections. A command that finds them all in use queues for one with no deadline of its own:
    each connection in use is free again within ``timeout_s`` (answered, refused or timed out), so
    the queue always moves, and a loaded process (its event loop late to take an answer and hand
    the connection on) is not an engine failure; its callers see the engine's own failures only."""
    pool = BlockingConnectionPool(max_connections=connections, timeout=None, **_options(url, timeout_s))
    return Redis.from_pool(pool)


def _options(url: str, timeout_s: float) -> dict:
    """The connection options of every pool here."""
    return {
        "socket_connect_timeout": timeout_s,
        "socket_timeout": timeout_s,
        "retry": Retry(NoBackoff(), 0),
        "protocol": 2,  # plain RESP2: no HELLO handshake, no RESP3-only client features
        **parse_url(url),  # the URL's own options (host, port, db, password, ?socket_timeout=...) win
    }


def _ms(seconds: float) -> int:
    """Whole milliseconds for ``PX`` / ``PEXPIRE`` / ``BLOCK``, at least 1 (0 means forever to ``BLOCK``)."""
    return max(1, math.ceil(seconds * 1000))


def _above(after: int) -> str:
    """The ``XRANGE`` start of the entries numbered above ``after``."""
    return f"(0-{after}" if after > 0 else "-"


def _entries(found: list[tuple[bytes, dict[bytes, bytes]]]) -> list[tuple[int, bytes]]:
    """Stream entries ``(b"0-<seq>", {FIELD: frame})`` as ``(seq, frame)``."""
    return [(int(entry_id.split(b"-")[1]), fields[FIELD]) for entry_id, fields in found]
