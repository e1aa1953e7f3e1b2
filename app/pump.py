"""The pump: one task per run that pulls the run's event stream, so the client's side never does.

Why a task of its own:

* **Live events from inside a tool.** While a bridge runs a delegation tool it emits nothing, yet
  the specialist is talking. Code running inside the run (the subagent emitter's dialects) puts
  those events *out of band* with :meth:`Pump.put`; the client receives them at once, in the
  order they were put, between the bridge's own events.
* **One context per run.** Every step of the run executes in this task, in one copy of the
  request's ``contextvars`` context: what a stage sets before the bridge starts (the emitter's
  current run, a runtime's per-run record) is what the bridge's tools see, no other run sees it,
  and libraries that attach and detach context tokens (OpenTelemetry in Strands) do so in the
  context they attached in.
* **Backpressure.** The pump runs at most :data:`AHEAD` events ahead of a slow client, then waits.
* **Cancellation.** A client that goes away cancels the consumer; the pump task is cancelled once
  and left to unwind in its own task (the server's cancel scope would otherwise re-cancel every
  await of the bridge's teardown), so the bridge's cleanup runs to the end.

Invariants: events leave in the order they were produced or put; nothing leaves after a terminal
event (RUN_FINISHED or RUN_ERROR); the source is closed when the pump ends, however it ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator

from ag_ui.core import BaseEvent, EventType

logger = logging.getLogger("agui.pump")

AHEAD = 64
"""How many events the run may get ahead of a slow client before it waits."""
TERMINAL = frozenset({EventType.RUN_FINISHED, EventType.RUN_ERROR})

_unwinding: set[asyncio.Task] = set()
"""Strong references to cancelled pumps still unwinding (the loop keeps only weak ones)."""


class Pump:
    """One run's pump. Create it on the server's loop, then iterate :meth:`drain` once."""

    def __init__(self) -> None:
        self._ready: deque[BaseEvent] = deque()
        self._wakeup = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._closed = False  # a terminal event is in ``_ready``: nothing else may follow it
        self._running = False

    def put(self, event: BaseEvent) -> None:
        """Send ``event`` now, out of band. Safe from any thread; dropped after the terminal event."""
        self._append(event)

    async def drain(self, source: AsyncIterator[BaseEvent]) -> AsyncIterator[BaseEvent]:
        """Run ``source`` in the pump's task and yield everything it produces or is put, in order."""
        self._running = True
        task = self._loop.create_task(self._pull(source), context=contextvars.copy_context())
        try:
            while True:
                if self._ready:
                    event = self._ready.popleft()
                    if len(self._ready) < AHEAD // 2:
                        self._room.set()
                    yield event
                    if event.type in TERMINAL:
                        return
                elif not self._running:
                    return
                else:
                    self._wakeup.clear()
                    await self._wakeup.wait()
        finally:
            self._closed = True
            if not task.done():
                task.cancel()
                _unwinding.add(task)
                task.add_done_callback(_unwinding.discard)
                try:
                    await task
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
                if first:
                    first = False
                    await asyncio.sleep(0)  # let the client see the run start before the bridge goes on
                if len(self._ready) >= AHEAD:
                    self._room.clear()
                    await self._room.wait()
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

    def _append(self, event: BaseEvent) -> None:
        if self._closed:
            return
        if event.type in TERMINAL:
            self._closed = True
        self._ready.append(event)
        self._wake()

    def _wake(self) -> None:
        if threading.get_ident() == self._loop_thread:
            self._wakeup.set()
        else:
            self._loop.call_soon_threadsafe(self._wakeup.set)
