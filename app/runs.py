"""A run outlives its HTTP response: it writes a numbered replay log, and its clients read the log.

Why: a client whose connection drops comes back the way SSE clients do, with the same request and
the ``Last-Event-ID`` of the last event it got, and must read the rest of its run exactly once, in
order, on any replica; and a run may go on for a while with nobody reading
(``AGUI_DETACHED_RUN_S``). So each run is two halves:

* its **producer** (:class:`_Producer`, the pipeline's :class:`app.pipeline.Delivery`): holds the
  thread's lease (one run per thread at a time, on every replica: a second gets RUN_ERROR
  ``THREAD_BUSY``), and appends every frame the route's pipeline delivers, numbered from 1, to the
  run's log in the store, in the run's own task (``app.pump``: no task of its own, which would be
  a wake per event); a heartbeat keeps the lease and the run's records alive while it runs (one
  timer for every run of the process, :meth:`RunRegistry._beat`: a task per run would be memory
  every open stream holds);
* its **readers** (:meth:`RunRegistry.follow`): the request that started the run, and any that
  reconnect, follow the log from where they are and send each frame with its ``id:``, until the
  terminal event.

When the run's last reader here leaves, the run ends at once with RUN_ERROR ``CLIENT_GONE`` (its
open subagents closed first), or after ``AGUI_DETACHED_RUN_S`` if nobody has come back by then; a
reconnect after that still reads what was logged, that terminal event included. A reader whose
producer died (its replica was killed) gets what was logged, then RUN_ERROR ``RUN_LOST``.

A ``runId`` names one run: a request that reuses one the server knows, without ``Last-Event-ID``,
is refused (409 ``run_exists``), never run twice. The log is bounded: at most
``AGUI_REPLAY_MAX_EVENTS`` entries, kept ``AGUI_REPLAY_S`` after the run ends.

Keys, all under ``agui:<route>:``: ``run:<thread>:<run>`` (the run's claim: the producing process,
then where the run ended), ``log:…`` (the log), ``alive:…`` (the producer's heartbeat), ``readers:…``
(readers on other processes), ``lease:<thread>`` (whose holder is the run's claim key).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent
from ag_ui.encoder import EventEncoder

from app.guard import BadRequest
from app.principals import scoped
from app.pump import CLIENT_GONE, Starting, run_starting
from runtimes.base import TERMINAL
from store import MemoryStore, Store, StoreUnavailable

if TYPE_CHECKING:  # the pipeline's settings carry this module's limits: no import at run time
    from app.pipeline import OpenRun, RoutePipeline

logger = logging.getLogger("agui.runs")

THREAD_BUSY = "THREAD_BUSY"
RUN_LOST = "RUN_LOST"
REPLAY_INCOMPLETE = "REPLAY_INCOMPLETE"
STATE_UNAVAILABLE = "STATE_UNAVAILABLE"
CODES = frozenset({THREAD_BUSY, CLIENT_GONE, RUN_LOST, REPLAY_INCOMPLETE, STATE_UNAVAILABLE})
"""The RUN_ERROR codes of this module (docs/errors.md)."""
BUSY_MESSAGE = "A run on this thread is still in flight; wait for it to finish."
"""The RUN_ERROR ``THREAD_BUSY`` message of a run refused because its thread's lease is held."""

RUNNING_LOG_TTL_S = 24 * 3600.0
"""A running run's log and claim: kept while it runs (a heartbeat or an append renews them)."""
READ_BATCH = 256
ENDED = b"ended:"
"""A run's claim holds its producer's id while it runs, then this and the number of its last event."""
LAST, MORE = b"T", b"E"
"""A log entry is one of these bytes, then the frame: the terminal event is the ``LAST`` one."""
_ENCODER = EventEncoder()


@dataclass(frozen=True)
class RunKeys:
    claim: str
    log: str
    alive: str
    readers: str
    lease: str

    @classmethod
    def of(cls, route: str, thread_id: str, run_id: str) -> RunKeys:
        run = f"{thread_id}:{run_id}"
        prefix = f"agui:{route}:"
        return cls(
            claim=f"{prefix}run:{run}",
            log=f"{prefix}log:{run}",
            alive=f"{prefix}alive:{run}",
            readers=f"{prefix}readers:{run}",
            lease=cls.lease_prefix(route) + thread_id,
        )

    @staticmethod
    def lease_prefix(route: str) -> str:
        """The route's thread leases are this and the thread id (the approval ledger reads them)."""
        return f"agui:{route}:lease:"


@dataclass(frozen=True)
class RunLimits:
    """``AGUI_DETACHED_RUN_S``, ``AGUI_REPLAY_S``, ``AGUI_REPLAY_MAX_EVENTS``, ``AGUI_LEASE_S``."""

    detached_s: float
    replay_s: float
    max_events: int
    lease_s: float

    @property
    def heartbeat_s(self) -> float:
        return self.lease_s / 4


class RunRegistry:
    """The runs of this process, and how any request reaches any run through the store."""

    def __init__(self, store: Store, limits: RunLimits) -> None:
        self.store = store
        self.limits = limits
        self.process = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._producers: dict[str, _Producer] = {}  # claim key -> the run it produces, while it runs
        self._heartbeat: asyncio.Task[None] | None = None  # the runs' heartbeat, while there are runs

    async def start(self, pipeline: RoutePipeline, run_input: RunAgentInput, principal: str) -> AsyncIterator[bytes]:
        """Start a new run for ``principal`` and follow it from its first event. Raises
        :class:`app.guard.BadRequest`."""
        keys = RunKeys.of(pipeline.runtime.route, scoped(run_input, principal).thread_id, run_input.run_id)
        try:
            claimed = await self.store.claim(keys.claim, self.process, ttl_s=RUNNING_LOG_TTL_S)
        except StoreUnavailable as exc:
            raise _store_down(run_input, exc) from exc
        if not claimed:
            raise BadRequest(
                409,
                "run_exists",
                "This runId was already used on this thread: send Last-Event-ID to read its events again, "
                "or a new runId for a new run.",
            )
        leased = False
        try:
            leased = await self.store.claim(keys.lease, keys.claim, ttl_s=self.limits.lease_s)
            await self.store.put(keys.alive, b"1", ttl_s=self.limits.lease_s)  # then the registry's heartbeat
        except StoreUnavailable as exc:
            with contextlib.suppress(StoreUnavailable):  # the run never started: its runId may be sent again
                if leased:
                    await self.store.release(keys.lease, keys.claim)
                await self.store.delete(keys.claim)
            raise _store_down(run_input, exc) from exc
        producer = _Producer(self, pipeline, run_input, principal, keys, leased)
        self._producers[keys.claim] = producer
        loop = asyncio.get_running_loop()
        if self._heartbeat is None or self._heartbeat.get_loop() is not loop:  # or the app is served anew
            self._heartbeat = loop.create_task(self._beat())
        producer.start()
        return self._follow(keys, 0, producer, run_starting())

    async def reconnect(
        self, pipeline: RoutePipeline, run_input: RunAgentInput, principal: str, last_event_id: int
    ) -> AsyncIterator[bytes] | None:
        """Follow a run ``principal`` started, after ``last_event_id``; None when the client already
        has all of it (its terminal event included). Raises :class:`app.guard.BadRequest`."""
        keys = RunKeys.of(pipeline.runtime.route, scoped(run_input, principal).thread_id, run_input.run_id)
        try:
            known = await self.store.get(keys.claim)
        except StoreUnavailable as exc:
            raise _store_down(run_input, exc) from exc
        if known is None:
            raise BadRequest(404, "unknown_run", "No run with this threadId and runId is known (or its log expired).")
        if _ended_at(known) is not None and last_event_id >= _ended_at(known):
            return None
        return self._follow(keys, last_event_id, self._producers.get(keys.claim))

    async def _follow(
        self, keys: RunKeys, after: int, producer: _Producer | None, starting: Starting | None = None
    ) -> AsyncIterator[bytes]:
        """The run's frames numbered above ``after``, each with its ``id:``, through the terminal
        event; then RUN_ERROR if the log cannot go on (producer dead, entries trimmed, store down).
        What one read of the log gets goes out as one chunk: a reader that fell behind catches up
        in one write, not one per event (each write is a send through the server and a wake of the
        client: docs/performance.md).
        ``starting`` (a new run's first reader) is done as the first frame goes out, or as the reader
        ends without one."""
        last_beat = 0.0
        if producer is not None:
            producer.attach()
        try:
            while True:
                entries = await self._read(keys, after, producer)
                if producer is None and time.monotonic() - last_beat >= self.limits.heartbeat_s:
                    last_beat = time.monotonic()  # a reader of a run produced elsewhere says it is here
                    await self.store.put(keys.readers, b"1", ttl_s=self.limits.lease_s)
                frames, ended = [], False
                for number, entry in entries:
                    if number != after + 1:
                        frames.append(_error_frame(REPLAY_INCOMPLETE, "Events of this run were dropped from its log."))
                        ended = True
                        break
                    frames.append(b"id: %d\n%s" % (number, entry[1:]))
                    after = number
                    if entry[:1] == LAST:
                        ended = True
                        break
                if frames:
                    if starting is not None:
                        starting.done()
                        starting = None
                    yield b"".join(frames)
                if ended:
                    return
                if not entries and not await self._alive(keys, producer):
                    if await self.store.read(keys.log, after, count=1, wait_s=0):
                        continue  # it wrote its last entries as it ended
                    if producer is not None and producer.failed:
                        raise StoreUnavailable("the run's producer could not write its log")
                    ended_at = _ended_at(await self.store.get(keys.claim))
                    if ended_at is None:
                        yield _error_frame(RUN_LOST, "The server running this run stopped before it finished.")
                    elif after < ended_at:
                        yield _error_frame(REPLAY_INCOMPLETE, "Events of this run are no longer in its log.")
                    return
        except StoreUnavailable:
            yield _error_frame(STATE_UNAVAILABLE, "The state store became unavailable during the run.")
        finally:
            if starting is not None:
                starting.done()
            if producer is not None:
                producer.detach()

    async def _read(self, keys: RunKeys, after: int, producer: _Producer | None) -> list[tuple[int, bytes]]:
        """The log's entries above ``after`` once there are any, or none after a while (the run's
        producer ended, or a heartbeat's time went by). A producer in this process wakes its readers
        itself as it logs (no wait in the store, and no timer, per event); one elsewhere is waited
        for in the store."""
        if producer is None:
            return await self.store.read(keys.log, after, count=READ_BATCH, wait_s=self.limits.heartbeat_s)
        while producer.logged <= after and not producer.done:
            await producer.woken()
        return await self.store.read(keys.log, after, count=READ_BATCH, wait_s=0)

    async def _beat(self) -> None:
        """Every ``heartbeat_s`` while this process produces runs: each run's heartbeat, together."""
        while True:
            await asyncio.sleep(self.limits.heartbeat_s)
            producers = list(self._producers.values())
            beats = await asyncio.gather(*(producer.beat() for producer in producers), return_exceptions=True)
            for producer, outcome in zip(producers, beats, strict=True):
                if isinstance(outcome, Exception):
                    logger.error("run=%.64r | the heartbeat failed", producer.run_id, exc_info=outcome)

    def _produced(self, claim: str) -> None:
        """The run of ``claim`` is over; the heartbeat stops with the last run."""
        self._producers.pop(claim, None)
        if not self._producers and self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None

    async def _alive(self, keys: RunKeys, producer: _Producer | None) -> bool:
        if producer is not None:
            return not producer.done
        return await self.store.get(keys.alive) is not None


class _Producer:
    """One run's producer (see the module docstring): the pipeline's ``Delivery``, in the run's own
    task. Lives on the server's loop."""

    def __init__(
        self,
        registry: RunRegistry,
        pipeline: RoutePipeline,
        run_input: RunAgentInput,
        principal: str,
        keys: RunKeys,
        leased: bool,
    ) -> None:
        self._registry = registry
        self._principal = principal
        self._store = registry.store
        self._limits = registry.limits
        self._pipeline = pipeline
        self._input = run_input
        self._keys = keys
        self._leased = leased  # the run holds its thread's lease (else the thread is busy: it is refused)
        self._run: OpenRun | None = None  # the pipeline's run, once started (None for a refusal)
        self._log = _LogWriter(registry.store, keys.log, registry.limits.max_events, self._logged)
        self._number = 0  # of the last frame delivered
        self._waiting: list[asyncio.Future[None]] = []  # this process's readers' waits (one each: a
        # reader cancelled while it waits cancels its own future, never another reader's)
        self.logged = 0  # the number of the last frame in the log
        self._terminal: bytes | None = None  # held back until the pipeline has closed and the thread is free
        self._readers = 0  # readers in this process
        self._attached = False  # a reader has come (the request that started the run, normally at once)
        self._left_at: float | None = time.monotonic()  # since when nobody here reads; None while someone does
        self.done = False
        self.failed = False  # it stopped because the store failed (its readers here say so)

    def start(self) -> None:
        """Open the run's pipeline (its bridge starts now, in its pump's task), or send its refusal."""
        if self._leased:
            self._run = self._pipeline.open(self._input, self._principal, self)
            return
        self._pipeline.refuse(self._input, self._principal, THREAD_BUSY, BUSY_MESSAGE, self)
        task = asyncio.get_running_loop().create_task(self.finish())
        _finishing.add(task)
        task.add_done_callback(_finishing.discard)

    # --- the pipeline's Delivery (app.pipeline), in the run's task ----------------------------------

    def send(self, event: BaseEvent, frame: bytes) -> None:
        """Log the run's next frame (its terminal one once the run is over: :meth:`finish`)."""
        self._number += 1
        if event.type in TERMINAL:
            self._terminal = frame
            return
        if self.failed:
            return
        try:
            self._log.add(self._number, MORE + frame)
        except StoreUnavailable as exc:
            self._fail(exc)

    def room(self) -> Awaitable[object] | None:
        return self._log.room()

    async def finish(self) -> None:
        """The run is over and its bridge closed: the log complete, the thread released, then the
        terminal event logged, so a client that read it may start the thread's next run at once."""
        keys, store, leased, ended = self._keys, self._store, self._leased, False
        try:
            if not self.failed:
                await self._log.flush()
                if leased:
                    leased = False
                    await store.release(keys.lease, keys.claim)
                if self._terminal is not None:
                    entry = [(self._number, LAST + self._terminal)]
                    await store.append(keys.log, entry, max_len=self._limits.max_events, ttl_s=self._limits.replay_s)
                    ended = True
                    self._logged(self._number)
        except StoreUnavailable as exc:
            self._fail(exc)
        finally:
            self.done = True
            self._wake_readers()
            self._log.cancel()
            self._registry._produced(keys.claim)
            with contextlib.suppress(StoreUnavailable):
                if leased:
                    await store.release(keys.lease, keys.claim)
                await store.delete(keys.alive)
                if ended:  # else its readers see the producer gone before the end: RUN_LOST
                    await store.put(keys.claim, b"%s%d" % (ENDED, self._number), ttl_s=self._limits.replay_s)

    def woken(self) -> asyncio.Future[None]:
        """A wait that ends when more of the run is logged, or when it ends (for a reader here)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        return waiter

    def _logged(self, number: int) -> None:
        """The log holds the run's frames up to ``number``."""
        self.logged = number
        self._wake_readers()

    def _wake_readers(self) -> None:
        if self._waiting:
            waiting, self._waiting = self._waiting, []
            for waiter in waiting:
                if not waiter.done():
                    waiter.set_result(None)

    def _fail(self, exc: StoreUnavailable) -> None:
        """The store failed under the run's log: it stops (its readers here say why)."""
        if self.failed:
            return
        logger.warning("run=%.64r | the state store failed mid-run; the run stops: %s", self.run_id, exc)
        self.failed = True
        if self._run is not None:
            self._run.stop()

    # --- its readers and its heartbeat ----------------------------------------------------------

    def attach(self) -> None:
        self._readers += 1
        self._attached = True
        self._left_at = None

    def detach(self) -> None:
        self._readers -= 1
        if self._readers == 0 and not self.done:
            self._left_at = time.monotonic()
            if self._limits.detached_s == 0:
                self._end("The client went away, and runs do not go on without one (AGUI_DETACHED_RUN_S=0).")

    def _end(self, message: str) -> None:
        """End the run now with RUN_ERROR ``CLIENT_GONE`` (a refusal ends by itself)."""
        if self._run is not None:
            self._run.end_by(0, CLIENT_GONE, message)

    async def beat(self) -> None:
        """The run's heartbeat (every ``heartbeat_s``, from :meth:`RunRegistry._beat`): renew its
        lease and records, and end it once it has had no reader for ``AGUI_DETACHED_RUN_S`` (readers
        on other processes count; a request that never started reading gets at least a lease's time)."""
        keys, store, limits = self._keys, self._store, self._limits
        if self.done:  # it ended since this beat was due: its records are gone and must stay gone
            return
        try:
            await store.put(keys.alive, b"1", ttl_s=limits.lease_s)
            await store.refresh(keys.lease, keys.claim, ttl_s=limits.lease_s)
            allowed = limits.detached_s if self._attached else max(limits.detached_s, limits.lease_s)
            if self._left_at is not None and time.monotonic() - self._left_at >= allowed:
                if await store.get(keys.readers) is None:
                    self._end(f"Nobody read this run for AGUI_DETACHED_RUN_S ({limits.detached_s:g} s).")
                else:
                    self._left_at = time.monotonic()
        except StoreUnavailable:
            logger.warning("run=%.64r | the state store did not answer the heartbeat", self.run_id)

    @property
    def run_id(self) -> str:
        return self._input.run_id


class _LogWriter:
    """A run's log appends, made in the run's task as its frames come. In this process's memory an
    append is a call, not a round trip, and each frame is appended as it comes; on a shared engine
    the frames a run produces while its last append is on its way wait and go together in the next
    one, so a busy engine costs a round trip per batch, not per event (at most :data:`WAITING_MAX`
    frames wait: past that the run waits for the engine, :meth:`room`)."""

    def __init__(self, store: Store, key: str, max_len: int, logged: Callable[[int], None]) -> None:
        self._store = store
        self._key = key
        self._max_len = max_len
        self._logged = logged  # told the number of the last entry each time more are in the log
        self._waiting: list[tuple[int, bytes]] = []
        self._writing: asyncio.Task[None] | None = None  # the append on its way, if any

    def add(self, number: int, entry: bytes) -> None:
        """Log ``entry`` as event ``number``. Raises StoreUnavailable if an earlier append failed."""
        if isinstance(self._store, MemoryStore):
            self._store.append_now(self._key, [(number, entry)], max_len=self._max_len, ttl_s=RUNNING_LOG_TTL_S)
            self._logged(number)
            return
        if self._writing is not None and self._writing.done():
            writing, self._writing = self._writing, None
            writing.result()  # raises what the append raised
        self._waiting.append((number, entry))
        if self._writing is None:
            self._writing = asyncio.get_running_loop().create_task(self._write())

    def room(self) -> asyncio.Task[None] | None:
        """The append to wait for before the run goes on, while too many frames wait for it."""
        return self._writing if len(self._waiting) >= WAITING_MAX else None

    async def flush(self) -> None:
        """Every entry added so far is in the log. Raises StoreUnavailable."""
        while self._writing is not None:
            writing = self._writing
            await writing
            if self._writing is writing:
                self._writing = None

    def cancel(self) -> None:
        """The run is over: an append still on its way stops; a failed one's error was reported."""
        if self._writing is not None:
            if not self._writing.done():
                self._writing.cancel()
            elif not self._writing.cancelled():
                self._writing.exception()  # retrieved: the run's failure is already logged (or it had none)

    async def _write(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            await self._store.append(self._key, batch, max_len=self._max_len, ttl_s=RUNNING_LOG_TTL_S)
            self._logged(batch[-1][0])


WAITING_MAX = 256
"""Frames of one run that may wait for the engine before the run itself waits (``_LogWriter``)."""

_finishing: set[asyncio.Task] = set()
"""Strong references to the refusals' last steps (the loop keeps only weak ones)."""


def _ended_at(claim: bytes | None) -> int | None:
    """The number of a run's terminal event, from its claim, once the run has ended."""
    return int(claim[len(ENDED) :]) if claim is not None and claim.startswith(ENDED) else None


def _store_down(run_input: RunAgentInput, cause: StoreUnavailable) -> BadRequest:
    """The answer to a request the store cannot serve right now (nothing of the run has started),
    logged with its cause: the client sees only the stable code."""
    logger.warning("code=state_unavailable thread=%.64r | %s", run_input.thread_id, cause)
    return BadRequest(503, "state_unavailable", "The state store is unavailable; try again shortly.")


def _error_frame(code: str, message: str) -> bytes:
    """A RUN_ERROR this module sends a reader itself: not in the log, so it has no ``id:``."""
    return _ENCODER.encode(RunErrorEvent(message=message, code=code)).encode()


def last_event_id(raw: str | None) -> int | None:
    """The ``Last-Event-ID`` header as a log position, None without one. Raises :class:`app.guard.BadRequest`."""
    if raw is None:
        return None
    if not raw.strip().isdigit() or len(raw.strip()) > 18:
        raise BadRequest(400, "invalid_last_event_id", "Last-Event-ID must be the id of an event this server sent.")
    return int(raw.strip())
