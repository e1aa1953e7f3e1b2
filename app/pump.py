"""The pump: one task per run that pulls the run's event stream, so the client's side never does.

Why a task of its own:

* **Live events from inside a tool.** While a bridge runs a delegation tool it emits nothing, yet
  the specialist is talking. Code running inside the run (the subagent emitter's dialects) puts
  those events *out of band* with :meth:`Pump.put`; the client receives them at once, in the
  order they were put, between the bridge's own events.
* **One context per run.** Every step of the run executes in this task, in one copy of the
  request's ``contextvars`` context: what a stage sets before the bridge starts (the emitter's
  current run, a runtime's per-run record) is what the bridge's tools see, no other run sees it,
  and libraries that attach and detach context tokens (OpenTelemetry, which a runtime may use) do so in the
  context they attached in.
* **Backpressure.** The pump runs at most :data:`AHEAD` events ahead of a slow client, then waits.
* **Turns.** A pump whose bridge never waits on I/O (an unpaced model) runs up to :data:`AHEAD`
  events per step of the loop, and what it takes reaches its client two passes of the loop later
  (the run's producer logs it in one, its reader sends it in the next). With hundreds of runs in
  flight, full steps for every pump would make one pass take most of a second: a request that has
  just arrived would wait through several before its first event left, and the clients would get
  nothing until the server had produced nearly everything, the server's work and then theirs
  instead of both at once. So while any run is starting (:func:`run_starting`, until its first
  event is on its way to the client), every pump gives the loop back after each event; and the
  pumps together take at most :data:`PASS_EVENTS` events per pass (:class:`_Passes`): one that
  finds the pass spent waits its turn for a later one, in order, and frames keep flowing while the
  runs are produced, in chunks as large as before.
* **Cancellation.** A client that goes away cancels the consumer; the pump task is cancelled once
  and left to unwind in its own task, shielded from the server's cancel scope (which would
  otherwise re-cancel every await of the bridge's teardown), so the bridge's cleanup runs to the
  end and every model connection is released.
* **Ending early.** When the server is told to stop (:func:`shut_down`, from ``deploy.serve`` on
  SIGTERM), every run gets a grace period to finish; one still going then ends with RUN_ERROR
  ``SERVER_SHUTDOWN`` (after what ``closing`` says must close first), instead of being cut off
  mid-stream with no terminal event. A run whose clients left ends the same way, at once, with the
  code its owner gives (:meth:`Pump.end_by`, from ``app.runs``).

Invariants: events leave in the order they were produced or put; nothing leaves after a terminal
event (RUN_FINISHED or RUN_ERROR); the source is closed when the pump ends, however it ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable

from ag_ui.core import BaseEvent, RunErrorEvent

from runtimes.base import TERMINAL

logger = logging.getLogger("agui.pump")

AHEAD = 64
"""How many events the run may get ahead of a slow client before it waits."""
PASS_EVENTS = 256
"""How many events the pumps of the process take in one pass of the event loop, together: a few
milliseconds of work, then the frames they made go out."""
SHUTDOWN_MESSAGE = "The server is shutting down; this run did not finish in time. Send it again."

SERVER_SHUTDOWN = "SERVER_SHUTDOWN"
CLIENT_GONE = "CLIENT_GONE"
"""The run's clients left and it may not go on without them (``app.runs``)."""

_starting: weakref.WeakSet[Starting] = weakref.WeakSet()
"""Runs whose first event is not yet on its way to their client (:func:`run_starting`)."""
_unwinding: set[asyncio.Task] = set()
"""Strong references to cancelled pumps still unwinding (the loop keeps only weak ones)."""
_running: weakref.WeakSet[Pump] = weakref.WeakSet()
"""The pumps of the runs in flight (the process's: one server per process)."""


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
    """One run's pump. Create it on the server's loop, then iterate :meth:`drain` once.

    ``closing`` gives the events that must go out before a RUN_ERROR the pump sends itself (at
    shutdown, or when the run's clients left), given that RUN_ERROR's message: what the run has
    open that a client should see closed.
    """

    grace_s: float | None = None
    """Set once the server is shutting down: how long a run may still take."""

    def __init__(self, closing: Callable[[str], list[BaseEvent]] = lambda reason: []) -> None:
        self._closing = closing
        self._deadline: float | None = None
        self._ending = RunErrorEvent(message=SHUTDOWN_MESSAGE, code=SERVER_SHUTDOWN)  # sent at the deadline
        self._ready: deque[BaseEvent] = deque()
        # The two waits are futures made per wait, not asyncio.Events (each holds a deque for as
        # long as it lives, and every open stream has a pump): None while nobody waits.
        self._wakeup: asyncio.Future[None] | None = None  # the consumer's, for an event or the deadline
        self._room: asyncio.Future[None] | None = None  # the source's, for the client to catch up
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._passes = _Passes.of(self._loop)
        self._closed = False  # a terminal event is in ``_ready``: nothing else may follow it
        self._running = False

    def put(self, event: BaseEvent) -> None:
        """Send ``event`` now, out of band. Safe from any thread; dropped after the terminal event."""
        self._append(event)

    def end_by(self, grace_s: float, code: str = SERVER_SHUTDOWN, message: str = SHUTDOWN_MESSAGE) -> None:
        """Give the run ``grace_s`` more seconds; then it ends with RUN_ERROR ``code``. The earliest
        deadline wins."""
        deadline = self._loop.time() + grace_s
        if self._deadline is None or deadline < self._deadline:
            self._deadline = deadline
            self._ending = RunErrorEvent(message=message, code=code)
        self._wake()

    def drain(self, source: AsyncIterator[BaseEvent]) -> AsyncIterator[BaseEvent]:
        """Start running ``source`` in the pump's task now, and return everything it produces or is
        put, in order: iterate it at once (its end is what stops the task). Started here, not when
        first iterated, so a run's first event is ready as soon as its consumer first looks."""
        self._running = True
        _running.add(self)
        if Pump.grace_s is not None:
            self.end_by(Pump.grace_s)
        return self._drain(self._loop.create_task(self._pull(source), context=contextvars.copy_context()))

    async def _drain(self, task: asyncio.Task) -> AsyncIterator[BaseEvent]:
        try:
            while True:
                if self._deadline is not None and self._loop.time() >= self._deadline and not self._ends_soon():
                    # What the run already produced goes first (a SUBAGENT_STARTED among it opens
                    # what the closing events close); nothing it produces afterwards goes at all.
                    self._closed = True
                    produced, self._ready = list(self._ready), deque()
                    for event in [*produced, *self._closing(self._ending.message), self._ending]:
                        yield event
                    return
                if self._ready:
                    event = self._ready.popleft()
                    if len(self._ready) < AHEAD // 2:
                        _resolve(self._room)
                    yield event
                    if event.type in TERMINAL:
                        return
                elif not self._running:
                    return
                else:
                    self._wakeup = self._loop.create_future()
                    try:
                        if self._deadline is None:  # the common wait, once per event: no timer for it
                            await self._wakeup  # (end_by wakes it, and the next wait has the deadline)
                        else:
                            async with asyncio.timeout_at(self._deadline):
                                await self._wakeup
                    except TimeoutError:
                        pass
                    finally:
                        self._wakeup = None
        finally:
            _running.discard(self)
            self._closed = True
            if not task.done():
                task.cancel()
                _unwinding.add(task)
                task.add_done_callback(_unwinding.discard)
                try:
                    # Shielded: a consumer in a cancelled anyio scope (the server's, when the client
                    # left) has every await cancelled again and again, and a Task awaited directly
                    # passes each of those cancellations on, interrupting the bridge's own cleanup
                    # (httpx then never releases the model connection).
                    await asyncio.shield(task)
                except BaseException:  # noqa: BLE001 - the client is gone; the pump's outcome no longer matters
                    pass

    async def _pull(self, source: AsyncIterator[BaseEvent]) -> None:
        iterator = source.__aiter__()
        try:
            first = True
            async for event in iterator:
                self._append(event)
                if self._closed:
                    return
                self._passes.spend(self._loop)
                if len(self._ready) >= AHEAD:
                    self._room = self._loop.create_future()
                    try:
                        await self._room
                    finally:
                        self._room = None
                elif first or _starting:
                    # Let the client see this run start, or another run start, before going on.
                    await asyncio.sleep(0)
                    first = False
                else:
                    continue  # the same step goes on
                turn = self._passes.turn(self._loop)  # a new step: in a pass with room for it
                if turn is not None:
                    await turn
        except Exception:  # noqa: BLE001 - the stages end every run with a terminal event; this is a bug
            logger.exception("the run's stream raised past its error boundary")
        finally:
            self._running = False
            self._wake()
            closer = getattr(iterator, "aclose", None)
            if closer is not None:
                try:
                    await closer()
                except Exception:  # noqa: BLE001 - the run is over; closing is best effort
                    logger.debug("the run's stream raised while closing", exc_info=True)

    def _ends_soon(self) -> bool:
        """The run's own terminal event is already waiting to go out."""
        return any(event.type in TERMINAL for event in self._ready)

    def _append(self, event: BaseEvent) -> None:
        if self._closed:
            return
        if event.type in TERMINAL:
            self._closed = True
        self._ready.append(event)
        self._wake()

    def _wake(self) -> None:
        if threading.get_ident() == self._loop_thread:
            _resolve(self._wakeup)
        else:
            self._loop.call_soon_threadsafe(lambda: _resolve(self._wakeup))


class _Passes:
    """What the pumps of one event loop take in one pass of it, together: :data:`PASS_EVENTS`
    events; a pump starting a step once the pass is spent waits for its turn in a later pass, in
    order (the module docstring says why)."""

    def __init__(self) -> None:
        # The loop is passed to each call, not kept: a value of the weak map must not hold its key.
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


def _resolve(waiter: asyncio.Future[None] | None) -> None:
    """End a wait, if one is on."""
    if waiter is not None and not waiter.done():
        waiter.set_result(None)
