"""The pump: one task per run that runs the run's event stream and delivers each event as it is made.

Why a task of its own:

* **Live events from inside a tool.** While a bridge runs a delegation tool it emits nothing, yet
  the specialist is talking. Code running inside the run (the subagent emitter's dialects) puts
  those events *out of band* with :meth:`Pump.put`; they are delivered at once, in the order they
  were put, between the bridge's own events.
* **One context per run.** Every step of the run executes in this task, in one copy of the
  request's ``contextvars`` context: what a stage sets before the bridge starts (the emitter's
  current run, a runtime's per-run record) is what the bridge's tools see, no other run sees it,
  and libraries that attach and detach context tokens (OpenTelemetry, which a runtime may use) do so in the
  context they attached in.
* **Delivery where the event is made.** Each event goes to ``deliver`` (the pipeline's wire steps,
  then the run's replay log: ``app.pipeline``, ``app.runs``) as a plain call, in this task for the
  stream's own events: no other task is woken to carry an event on. A task per run that took the
  events from here and logged them cost a wake and a chain of generators per event: 2.6M of the
  91M instructions of a plain Pydantic AI run (docs/performance.md, "One task per run").
* **Turns.** A pump whose bridge never waits on I/O (an unpaced model) would run its whole run in
  one step of the loop, and with hundreds of runs in flight one pass of the loop would take most
  of a second: a request that has just arrived would wait through several before its first event
  left, and the readers would send nothing until the server had produced nearly everything, the
  server's work and then the clients' instead of both at once. So a pump gives the loop back after
  :data:`AHEAD` events in one step; while any run is starting (:func:`run_starting`, until its
  first event is on its way to the client), after each event; and the pumps together take at most
  :data:`PASS_EVENTS` events per pass (:class:`_Passes`): one that finds the pass spent waits its
  turn for a later one, in order, and the readers send what was logged while the runs are produced.
* **Ending early.** When the server is told to stop (:func:`shut_down`, from ``deploy.serve`` on
  SIGTERM), every run gets a grace period to finish; one still going then ends with RUN_ERROR
  ``SERVER_SHUTDOWN`` (after what ``closing`` says must close first), instead of being cut off
  mid-stream with no terminal event. A run whose clients left ends the same way, at once, with the
  code its owner gives (:meth:`Pump.end_by`, from ``app.runs``); a run whose owner can take no more
  of its events stops delivering at once (:meth:`Pump.stop`). Either way its task is cancelled
  once and left to unwind, so the bridge's cleanup runs to the end and every model connection is
  released.

Invariants: events are delivered in the order they were produced or put; nothing is delivered
after the last event (a terminal one, RUN_FINISHED or RUN_ERROR, or :meth:`Pump.stop`); the
source is closed when the pump ends, however it ends, and ``finish`` is awaited once, after that.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

from ag_ui.core import BaseEvent, RunErrorEvent

logger = logging.getLogger("agui.pump")

AHEAD = 64
"""How many events a pump takes in one step of the loop, at most, before it gives the loop back."""
PASS_EVENTS = 256
"""How many events the pumps of the process take in one pass of the event loop, together: a few
milliseconds of work, then the readers send what was logged."""
SHUTDOWN_MESSAGE = "The server is shutting down; this run did not finish in time. Send it again."

SERVER_SHUTDOWN = "SERVER_SHUTDOWN"
CLIENT_GONE = "CLIENT_GONE"
"""The run's clients left and it may not go on without them (``app.runs``)."""

Deliver = Callable[[BaseEvent], bool]
"""Where a pump's events go, one call each, in order: True once nothing more may follow (the event
went out as a terminal one)."""

_starting: weakref.WeakSet[Starting] = weakref.WeakSet()
"""Runs whose first event is not yet on its way to their client (:func:`run_starting`)."""
_tasks: set[asyncio.Task] = set()
"""Strong references to the pumps' tasks until they end (the loop keeps only weak ones)."""
_running: weakref.WeakSet[Pump] = weakref.WeakSet()
"""The pumps of the runs in flight (the process's: one server per process)."""
_making_outside = threading.Lock()
"""Held while a pump makes its queue for events put from other threads (the first such put)."""


def shut_down(grace_s: float) -> None:
    """The server is stopping: every run in flight, and every run that starts from now on, has
    ``grace_s`` seconds to finish. Call it on the server's loop; calls after the first change nothing."""
    if Pump.grace_s is not None:
        return
    Pump.grace_s = grace_s
    for pump in list(_running):
        pump.end_by(grace_s)


class Starting:
    """A run counted as starting (:func:`run_starting`) until :meth:`done` is called, or until
    nothing holds it any more (a response that never began)."""

    def done(self) -> None:
        """Its first event is on its way to the client, or never will be. Idempotent."""
        _starting.discard(self)


def run_starting() -> Starting:
    """Count a new run as starting: while any run is, every pump takes one event per step of the loop."""
    token = Starting()
    _starting.add(token)
    return token


class Pump:
    """One run's pump. Create it on the server's loop, then :meth:`start` it once.

    ``deliver`` takes every event (see :data:`Deliver`). ``closing`` gives the events that must go
    out before a RUN_ERROR the pump sends itself (at shutdown, or when the run's clients left),
    given that RUN_ERROR's message: what the run has open that a client should see closed. ``room``
    is what the run waits for before it takes another event, or None when it may go on (the owner's
    writes catching up); what it raises is the owner's to report.
    """

    grace_s: float | None = None
    """Set once the server is shutting down: how long a run may still take."""

    def __init__(
        self,
        deliver: Deliver,
        closing: Callable[[str], list[BaseEvent]] = lambda reason: [],
        room: Callable[[], Awaitable[object] | None] = lambda: None,
    ) -> None:
        self._deliver = deliver
        self._closing = closing
        self._room = room
        self._deadline: float | None = None
        self._ending = RunErrorEvent(message=SHUTDOWN_MESSAGE, code=SERVER_SHUTDOWN)  # sent at the deadline
        self._timer: asyncio.TimerHandle | None = None  # ends the run at the deadline
        self._outside: deque[BaseEvent] | None = None  # put from other threads, not yet delivered (made
        # by the first such put: a deque holds ~0.6 KiB, and every open stream has a pump)
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._passes = _Passes.of(self._loop)
        self._task: asyncio.Task[None] | None = None
        self._closed = False  # the last event was delivered: nothing else may follow it
        self._began = False  # the task runs (one cancelled before it began would skip ``finish``)
        self._cancelled = False  # the task was told to stop where it waits (once is enough)
        self._unwinding = False  # the source is being closed, then ``finish`` runs: nothing may cancel that

    def start(self, source: AsyncIterator[BaseEvent], finish: Callable[[], Awaitable[None]]) -> None:
        """Run ``source`` in the pump's task, from now on; once its last event is delivered (or the
        run ended early) and the source is closed, await ``finish()`` in the same task."""
        self._task = self._loop.create_task(self._run(source, finish), context=contextvars.copy_context())
        _tasks.add(self._task)
        self._task.add_done_callback(_tasks.discard)
        _running.add(self)
        if Pump.grace_s is not None:
            self.end_by(Pump.grace_s)

    def put(self, event: BaseEvent) -> None:
        """Deliver ``event`` now, out of band. Safe from any thread; dropped after the last event."""
        if threading.get_ident() == self._loop_thread:
            self._send(event)
        else:  # in order: whatever the run delivers next on the loop delivers this first
            if self._outside is None:
                with _making_outside:  # two threads putting a run's first events at once make one deque
                    if self._outside is None:
                        self._outside = deque()
            self._outside.append(event)
            self._loop.call_soon_threadsafe(self._send_outside)

    def end_by(self, grace_s: float, code: str = SERVER_SHUTDOWN, message: str = SHUTDOWN_MESSAGE) -> None:
        """Give the run ``grace_s`` more seconds; then it ends with RUN_ERROR ``code``. The earliest
        deadline wins."""
        deadline = self._loop.time() + grace_s
        if self._closed or (self._deadline is not None and deadline >= self._deadline):
            return
        self._deadline = deadline
        self._ending = RunErrorEvent(message=message, code=code)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(deadline, self._expire)

    def stop(self) -> None:
        """Deliver nothing more and end the run now (its owner can take no more of its events)."""
        self._closed = True
        self._cancel()

    def _send(self, event: BaseEvent) -> None:
        if self._outside:
            self._send_outside()
        if not self._closed and self._deliver(event):
            self._closed = True
            self._cancel()  # the run's own terminal event, or one put from outside it: it is over

    def _send_outside(self) -> None:
        while self._outside and not self._closed:  # (popleft and append are safe across threads)
            event = self._outside.popleft()
            if self._deliver(event):
                self._closed = True
                self._cancel()

    def _expire(self) -> None:
        """The deadline: what the run has open is closed, then its RUN_ERROR; nothing after that."""
        self._timer = None
        if self._closed:
            return
        for event in [*self._closing(self._ending.message), self._ending]:
            self._send(event)
        self.stop()

    def _cancel(self) -> None:
        """Stop the run's task where it waits (the bridge), unless it is this one or it unwinds."""
        task = self._task
        if not self._began or self._cancelled or self._unwinding or task.done() or task is _current_task():
            return  # (a task that has not begun sees the run closed as it begins)
        self._cancelled = True
        task.cancel()

    async def _run(self, source: AsyncIterator[BaseEvent], finish: Callable[[], Awaitable[None]]) -> None:
        self._began = True
        try:
            await self._pull(source)
        finally:
            _running.discard(self)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._send_outside()
            await finish()

    async def _pull(self, source: AsyncIterator[BaseEvent]) -> None:
        iterator = source.__aiter__()
        try:
            if self._closed:  # it ended before it began (no time left at shutdown): the bridge never starts
                return
            first = True
            step, taken = -1, 0  # the pass this step of the task began in, and the events it took
            async for event in iterator:
                self._send(event)
                if self._closed:
                    return
                self._passes.spend(self._loop)
                room = self._room()
                if room is not None:
                    try:
                        await room
                    except Exception:  # noqa: BLE001 - the owner reports its own failures (room's contract)
                        pass
                elif first or _starting:
                    # Let the client see this run start, or another run start, before going on.
                    await asyncio.sleep(0)
                    first = False
                else:
                    if step != self._passes.number:  # the source waited since: a new step
                        step, taken = self._passes.number, 0
                    taken += 1
                    if taken < AHEAD:
                        continue  # the same step goes on
                    await asyncio.sleep(0)
                step = -1
                turn = self._passes.turn(self._loop)  # a new step: in a pass with room for it
                if turn is not None:
                    await turn
        except Exception:  # noqa: BLE001 - the stages end every run with a terminal event; this is a bug
            logger.exception("the run's stream raised past its error boundary")
        finally:
            self._unwinding = True
            closer = getattr(iterator, "aclose", None)
            if closer is not None:
                try:
                    await closer()
                except Exception:  # noqa: BLE001 - the run is over; closing is best effort
                    logger.debug("the run's stream raised while closing", exc_info=True)


def _current_task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop running in this thread
        return None


class _Passes:
    """What the pumps of one event loop take in one pass of it, together: :data:`PASS_EVENTS`
    events; a pump starting a step once the pass is spent waits for its turn in a later pass, in
    order (the module docstring says why)."""

    def __init__(self) -> None:
        # The loop is passed to each call, not kept: a value of the weak map must not hold its key.
        self.number = 0  # counts the passes in which any pump took an event
        self._spent = 0  # events taken in this pass
        self._turns: deque[asyncio.Future[None]] = deque()  # pumps waiting for a pass, in order
        self._pending = False  # the next pass is scheduled (once anything was spent in this one)

    @staticmethod
    def of(loop: asyncio.AbstractEventLoop) -> _Passes:
        """The passes of ``loop``."""
        passes = _passes.get(loop)
        if passes is None:
            passes = _passes[loop] = _Passes()
        return passes

    def spend(self, loop: asyncio.AbstractEventLoop) -> None:
        """Count one event taken in this pass."""
        if not self._pending:
            self._pending = True
            loop.call_soon(self._pass, loop)
        self._spent += 1

    def turn(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None] | None:
        """None while this pass has room for more events, else the turn to wait for."""
        if self._spent < PASS_EVENTS:
            return None
        turn = loop.create_future()
        self._turns.append(turn)
        return turn

    def _pass(self, loop: asyncio.AbstractEventLoop) -> None:
        """A new pass: the first pumps waiting get their turn (as many as its events, at full steps, fill)."""
        self.number += 1
        self._spent, self._pending = 0, False
        given = 0
        while self._turns and given < PASS_EVENTS // AHEAD:
            turn = self._turns.popleft()
            if not turn.done():  # else its pump was cancelled while it waited
                turn.set_result(None)
                given += 1
        if self._turns:
            self._pending = True
            loop.call_soon(self._pass, loop)


_passes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Passes] = weakref.WeakKeyDictionary()
"""Each event loop's passes (a server has one loop; tests serve the app on loops of their own)."""
