"""The store in this process's memory: the default, for one server process.

Every key has a deadline; an expired key is gone the moment anything looks at it, and a timer set
for the earliest deadline (a heap ordered by deadline) sweeps the expired ones, so memory holds only
what is alive, busy or idle. A key is in the heap once: a write that only pushes its deadline later
(a log's every append, a heartbeat) leaves the heap and the timer alone, and the sweep looks the key
up again when its old deadline comes; so a write costs no heap entry, and the heap holds about one
entry per live key however often keys are written. Parked sets do not expire: the approval ledger
bounds them. Readers waiting on a log are woken by the append that brings their entry. The parked
sets' clock is this process's monotonic one.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import time
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence

from store.base import Parked

BLOCK = 32
"""Entries of a replay log compressed together (:class:`_Log`)."""
WINDOW_BITS = 12
"""Deflate's window for a block, 4 KiB: a frame repeats mostly the one just before it."""


class _Log:
    """A replay log, compact: the entries' numbers in one array; their frames end to end, the older
    ones compressed :data:`BLOCK` entries at a time.

    Every open run holds its log, and a finished run's log stays ``AGUI_REPLAY_S`` for reconnects:
    a plain reply is ~116 entries and ~18 KB of frames, most of each frame the same as the one
    before it (event type, message id), so a block compresses ~15 times, for ~7 µs. A client
    following the run reads the uncompressed tail; only a reconnect that goes back further
    decompresses, ~4 µs a block. A list of (number, frame) pairs would cost ~110 bytes more per
    entry: a tuple, an int and a bytes object each.

    Invariants: entry ``i`` (0 = the oldest kept) is in ``blocks[i // BLOCK]``, or in ``tail`` past
    the blocks; ``ends[i]`` is where its frame ends in its block (or the tail) uncompressed, and it
    starts where entry ``i - 1`` ends, or at 0 when ``i % BLOCK == 0``. Trimming drops whole blocks.
    """

    __slots__ = ("numbers", "ends", "blocks", "tail")

    def __init__(self) -> None:
        self.numbers = array("q")  # ascending
        self.ends = array("q")
        self.blocks: list[bytes] = []  # raw deflate, oldest first
        self.tail = bytearray()

    def extend(self, entries: Sequence[tuple[int, bytes]]) -> None:
        for number, frame in entries:
            self.tail += frame
            self.numbers.append(number)
            self.ends.append(len(self.tail))
            if len(self.numbers) == (len(self.blocks) + 1) * BLOCK:
                packer = zlib.compressobj(1, zlib.DEFLATED, -WINDOW_BITS, 4)  # small window and state: a block is ~5 KB
                self.blocks.append(packer.compress(self.tail) + packer.flush())
                self.tail = bytearray()  # a new buffer: clearing keeps the old allocation

    def keep(self, max_len: int) -> None:
        """Drop the oldest blocks while at least ``max_len`` entries remain."""
        drop = min((len(self.numbers) - max_len) // BLOCK, len(self.blocks))
        if drop > 0:
            del self.blocks[:drop], self.numbers[: drop * BLOCK], self.ends[: drop * BLOCK]

    def last(self) -> int:
        return self.numbers[-1] if self.numbers else 0

    def read(self, after: int, count: int) -> list[tuple[int, bytes]]:
        start = bisect.bisect_right(self.numbers, after)
        entries = []
        frames: bytes | bytearray = b""
        block = -1  # the block ``frames`` holds, uncompressed (len(blocks): the tail)
        for index in range(start, min(start + count, len(self.numbers))):
            if index // BLOCK != block:
                block = index // BLOCK
                frames = zlib.decompress(self.blocks[block], -WINDOW_BITS) if block < len(self.blocks) else self.tail
            begin = self.ends[index - 1] if index % BLOCK else 0
            entries.append((self.numbers[index], bytes(frames[begin : self.ends[index]])))
        return entries


class MemoryStore:
    """:class:`store.base.Store` in a dict. Use it from one event loop."""

    shared = False
    url = None

    def __init__(self) -> None:
        self._values: dict[str, bytes | _Log] = {}
        self._deadlines: dict[str, float] = {}
        self._expiring: list[tuple[float, str]] = []  # (deadline, key), a heap; stale pairs are skipped
        self._scheduled: dict[str, float] = {}  # key -> the deadline of its pair in the heap (at most its own)
        self._sets: dict[str, OrderedDict[str, float]] = {}  # parked sets: thread -> parked at, oldest first
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}  # log key -> readers' waits its next append ends
        self._timer: asyncio.TimerHandle | None = None  # the next sweep, at the earliest deadline
        self._timer_at = 0.0

    # --- records ------------------------------------------------------------------------------
    async def get(self, key: str) -> bytes | None:
        value = self._live(key)
        return value if isinstance(value, bytes) else None

    async def put(self, key: str, value: bytes, *, ttl_s: float) -> None:
        self._set(key, value, ttl_s)

    async def delete(self, *keys: str) -> None:
        for key in keys:
            self._drop(key)

    # --- leases -------------------------------------------------------------------------------
    async def claim(self, key: str, holder: str, *, ttl_s: float) -> bool:
        if self._live(key) is not None:
            return False
        self._set(key, holder.encode(), ttl_s)
        return True

    async def refresh(self, key: str, holder: str, *, ttl_s: float) -> bool:
        if self._live(key) != holder.encode():
            return False
        self._set(key, holder.encode(), ttl_s)
        return True

    async def release(self, key: str, holder: str) -> None:
        if self._live(key) == holder.encode():
            self._drop(key)

    # --- replay logs --------------------------------------------------------------------------
    async def append(self, key: str, entries: Sequence[tuple[int, bytes]], *, max_len: int, ttl_s: float) -> None:
        self.append_now(key, entries, max_len=max_len, ttl_s=ttl_s)

    def append_now(self, key: str, entries: Sequence[tuple[int, bytes]], *, max_len: int, ttl_s: float) -> None:
        """:meth:`append`, as the plain call it is in this process (a run logs each frame as it is
        made, in its own task: ``app.runs``)."""
        log = self._live(key)
        if not isinstance(log, _Log):
            log = _Log()
        log.extend(entries)
        log.keep(max_len)
        self._set(key, log, ttl_s)
        for waiter in self._waiting.pop(key, ()):
            if not waiter.done():
                waiter.set_result(None)

    async def read(self, key: str, after: int, *, count: int, wait_s: float) -> list[tuple[int, bytes]]:
        log = self._live(key)
        if not isinstance(log, _Log) or log.last() <= after:
            if wait_s <= 0:
                return []
            # A future per wait, not an asyncio.Event per log: every open stream's reader is waiting
            # here most of the time, and an Event holds a deque (~0.6 KiB) for as long as it lives.
            # Its time limit is a timer that ends the wait like an append would: a reader waits here
            # once per event it follows, and asyncio.timeout costs twice the wait itself (wait_for
            # makes a task per wait on 3.11).
            loop = asyncio.get_running_loop()
            waiter = loop.create_future()
            waiters = self._waiting.setdefault(key, [])
            waiters.append(waiter)
            timer = loop.call_later(wait_s, _end_wait, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                if self._waiting.get(key) is waiters:  # no append took the list: the wait is still in it
                    waiters.remove(waiter)
                    if not waiters:
                        del self._waiting[key]
            log = self._live(key)
            if not isinstance(log, _Log):
                return []
        return log.read(after, count)

    async def first(self, key: str) -> int | None:
        log = self._live(key)
        return log.numbers[0] if isinstance(log, _Log) and log.numbers else None

    # --- the approval ledger ------------------------------------------------------------------
    async def park(self, key: str, thread: str, *, max_parked: int, min_age_s: float, leases: str) -> Parked:
        now = time.monotonic()
        parked = self._sets.setdefault(key, OrderedDict())
        parked.pop(thread, None)
        evicted = None
        if len(parked) >= max_parked:
            oldest = next((t for t in parked if self._live(leases + t) is None), None)
            if oldest is None or now - parked[oldest] < min_age_s:
                return Parked("refused")
            del parked[oldest]
            evicted = oldest
        parked[thread] = now
        return Parked("parked", evicted)

    async def unpark(self, key: str, thread: str) -> None:
        self._sets.get(key, {}).pop(thread, None)

    async def parked(self, key: str) -> list[str]:
        return list(self._sets.get(key, {}))

    async def aclose(self) -> None:
        """Nothing to release."""

    # --- expiry -------------------------------------------------------------------------------
    def _live(self, key: str) -> bytes | _Log | None:
        deadline = self._deadlines.get(key)
        if deadline is not None and deadline <= time.monotonic():
            self._drop(key)
        return self._values.get(key)

    def _set(self, key: str, value: bytes | _Log, ttl_s: float) -> None:
        deadline = time.monotonic() + ttl_s
        self._values[key] = value
        self._deadlines[key] = deadline
        scheduled = self._scheduled.get(key)
        if scheduled is None or deadline < scheduled:  # a later deadline is found by the sweep at the earlier one
            self._schedule(key, deadline)

    def _schedule(self, key: str, deadline: float) -> None:
        self._scheduled[key] = deadline
        heapq.heappush(self._expiring, (deadline, key))
        self._compact()
        if self._timer is None or deadline < self._timer_at:
            self._arm(deadline)

    def _sweep(self) -> None:
        """Drop every key whose deadline has passed, look again at the next deadline of those a later
        write kept alive, then wake up at the earliest deadline (one timer for the whole store), so an
        idle server lets go of expired state too."""
        self._timer = None
        now = time.monotonic()
        while self._expiring and self._expiring[0][0] <= now:
            at, key = heapq.heappop(self._expiring)
            if self._scheduled.get(key) != at:
                continue  # a stale pair: the key was dropped, or scheduled earlier since
            del self._scheduled[key]
            deadline = self._deadlines[key]
            if deadline <= now:
                self._drop(key)
            else:
                self._scheduled[key] = deadline
                heapq.heappush(self._expiring, (deadline, key))
        self._compact()
        if self._expiring:
            self._arm(self._expiring[0][0])

    def _compact(self) -> None:
        """When the heap is mostly stale pairs (keys dropped or scheduled earlier), keep one per live key."""
        if len(self._expiring) > 2 * len(self._scheduled) + 64:
            self._expiring = [(at, key) for key, at in self._scheduled.items()]
            heapq.heapify(self._expiring)

    def _arm(self, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = asyncio.get_running_loop().call_later(max(deadline - time.monotonic(), 0), self._sweep)

    def _drop(self, key: str) -> None:
        self._values.pop(key, None)
        self._deadlines.pop(key, None)
        self._scheduled.pop(key, None)


def _end_wait(waiter: asyncio.Future[None]) -> None:
    """A reader's time limit: end its wait unless an append already has."""
    if not waiter.done():
        waiter.set_result(None)
