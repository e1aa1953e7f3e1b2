"""The subagent emitter core: a pure stream transformer that puts SUBAGENT_* on the wire.

Why it exists: AG-UI has SUBAGENT_STARTED / FINISHED / ERROR events and a ``subagentRunId``
attribution field, but no upstream Python bridge emits them (ag-ui-strands 0.4.1 and
agent-framework-ag-ui 1.7.0 both report delegation only in their own dialect, or not at all).
Each runtime contributes a thin *dialect* module (``emitters/strands.py``, ``emitters/msaf.py``)
that hooks the runtime's delegation seam and calls the :class:`SubagentRun` methods below; this
module owns all the bookkeeping, once.

When to delete it: the day the installed bridges emit SUBAGENT_* themselves. Until then the
latch in :class:`NativeLatch` makes that upgrade safe: the first SUBAGENT_* event (or an
attribution id we did not mint) coming out of a bridge switches the route to pass-through, and a
test (``tests/test_native_probe.py``) fails loudly so the team deletes this on purpose.

How it works, per run:

* The bridge's event stream is pulled by one task per run, in one ``contextvars`` context in
  which :data:`CURRENT_RUN` is this run's :class:`SubagentRun`. Tools, hooks and middleware that
  the bridge runs find the run there and *inject* events into its sink (a deque) while the
  bridge generator is suspended inside the tool.
* Injected events are forwarded live, while the bridge is inside the tool; before each bridge
  event is forwarded, everything injected so far goes out first. Nothing goes out after
  RUN_FINISHED or RUN_ERROR.
* Lifecycle rules are enforced here, not in dialects: deterministic ids from the parent tool
  call id, no id started twice in a run, every open subagent closed before its parent's
  TOOL_CALL_RESULT and before the terminal event (``suspended`` with its interrupt ids when the
  run ends in an interrupt, SUBAGENT_ERROR when it errors), continuation of a suspended id on
  the resuming run, and never ``null`` on an optional field.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from ag_ui.core import (
    BaseEvent,
    EventType,
    Interrupt,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    ToolCallEndEvent,
)

logger = logging.getLogger("agui.emitter")

SUBAGENT_TYPES = frozenset(
    {EventType.SUBAGENT_STARTED, EventType.SUBAGENT_FINISHED, EventType.SUBAGENT_ERROR}
)
TERMINAL_TYPES = frozenset({EventType.RUN_FINISHED, EventType.RUN_ERROR})

CURRENT_RUN: contextvars.ContextVar[SubagentRun | None] = contextvars.ContextVar(
    "agui_current_subagent_run", default=None
)
"""The run whose bridge step is executing; set for every step of :func:`emit_subagents`."""


def current_run() -> SubagentRun | None:
    """The run a tool or middleware is executing in, or None outside a route (e.g. a unit test)."""
    return CURRENT_RUN.get()


def subagent_run_id_for(parent_tool_call_id: str) -> str:
    """Deterministic id of the subagent a delegation tool call starts.

    Derived, not random, so that a suspended subagent's id is the same on the resuming run
    without storing anything but the fact that it was suspended.
    """
    return f"{parent_tool_call_id}-sub"


class NativeLatch:
    """Process-wide, per-route memory that the bridge now emits SUBAGENT_* itself.

    A per-run flag would re-learn on every run and duplicate the first delegation of each one,
    so one latch is created per mounted route and shared by all of its runs.
    """

    def __init__(self, route: str) -> None:
        self.route = route
        self.tripped = False

    def trip(self, event: BaseEvent) -> None:
        if not self.tripped:
            self.tripped = True
            logger.warning(
                "bridge on %s emitted %s natively: the subagent emitter stands down for this route; "
                "delete the emitter dialect once this is confirmed",
                self.route,
                event.type,
            )


InterruptOwner = Callable[[Interrupt], "str | None"]
"""Dialect hook: the parent tool call id of the delegation that raised this interrupt, if any."""


class SubagentRun:
    """One run's emitter state and the seam API the dialects call.

    All methods are synchronous and cheap: they only append to the run's sink. They may be
    called from the event loop thread or from a worker thread (some runtimes run sync tools in
    threads).
    """

    def __init__(
        self,
        latch: NativeLatch,
        *,
        thread_id: str,
        interrupt_owner: InterruptOwner | None = None,
    ) -> None:
        self._latch = latch
        self.thread_id = thread_id  # whose run this is, for logs and observers
        self._interrupt_owner = interrupt_owner
        self._sink: deque[BaseEvent] = deque()
        self._wakeup = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._open: dict[str, None] = {}  # open subagent ids, in start order (an ordered set)
        self._finished: set[str] = set()
        self._minted: set[str] = set()
        self._tool_calls_open_on_wire: set[str] = set()
        self._tool_call_ends_sent_early: set[str] = set()
        self.ended = False

    # --- seam API (dialects call these from inside the bridge step) ---------------------

    @property
    def native(self) -> bool:
        """True once the bridge emits SUBAGENT_* itself: dialects may skip their work."""
        return self._latch.tripped

    def start(self, parent_tool_call_id: str, name: str, description: str | None = None) -> str:
        """Announce the subagent a delegation tool call starts; returns its ``subagentRunId``.

        Idempotent while the subagent is open. If the parent tool call is still open on the wire
        (a bridge that holds TOOL_CALL_END back until the result), its END goes out first and the
        bridge's later duplicate is dropped, so the subagent never nests inside an open call.
        """
        subagent_id = subagent_run_id_for(parent_tool_call_id)
        if self.native or subagent_id in self._open:
            return subagent_id
        if subagent_id in self._finished:
            logger.warning("subagent %s already finished in this run; not starting it again", subagent_id)
            return subagent_id
        if parent_tool_call_id in self._tool_calls_open_on_wire:
            self._put(ToolCallEndEvent(tool_call_id=parent_tool_call_id))
            self._tool_call_ends_sent_early.add(parent_tool_call_id)
            self._tool_calls_open_on_wire.discard(parent_tool_call_id)
        self._open[subagent_id] = None
        self._minted.add(subagent_id)
        self._put(
            SubagentStartedEvent(
                subagent_run_id=subagent_id,
                name=name,
                description=description,
                parent_tool_call_id=parent_tool_call_id,
            )
        )
        return subagent_id

    def emit(self, event: BaseEvent, subagent_id: str) -> None:
        """Inject one of the specialist's content events, attributed to ``subagent_id``."""
        if self.native:
            return
        self._put(_attributed(event, subagent_id))

    def finish(self, subagent_id: str, result: object | None = None) -> None:
        """Close a subagent that completed (no-op if it is not open)."""
        if subagent_id not in self._open:
            return
        del self._open[subagent_id]
        self._finished.add(subagent_id)
        self._put(
            SubagentFinishedEvent(
                subagent_run_id=subagent_id, result=result, outcome=SubagentFinishedSuccessOutcome()
            )
        )

    def fail(self, subagent_id: str, message: str, code: str | None = None) -> None:
        """Close a subagent whose specialist failed (no-op if it is not open)."""
        if subagent_id not in self._open:
            return
        del self._open[subagent_id]
        self._finished.add(subagent_id)
        self._put(SubagentErrorEvent(subagent_run_id=subagent_id, message=message or "subagent failed", code=code))

    def open_subagent_for(self, parent_tool_call_id: str) -> str | None:
        subagent_id = subagent_run_id_for(parent_tool_call_id)
        return subagent_id if subagent_id in self._open else None

    # --- sink ---------------------------------------------------------------------------------

    def _put(self, event: BaseEvent) -> None:
        if self.ended:
            return
        self._sink.append(event)
        if threading.get_ident() == self._loop_thread:
            self._wakeup.set()
        else:
            self._loop.call_soon_threadsafe(self._wakeup.set)

    def _drain(self) -> list[BaseEvent]:
        events = list(self._sink)
        self._sink.clear()
        return events

    # --- the bridge side (called by emit_subagents) -----------------------------------------

    def _on_bridge_event(self, event: BaseEvent) -> list[BaseEvent]:
        """What goes on the wire for one bridge event: closes first, then the event itself."""
        if self._comes_from_native_bridge(event):
            return [*self._stand_down(event), event]
        kind = event.type
        if kind == EventType.TOOL_CALL_START:
            self._tool_calls_open_on_wire.add(event.tool_call_id)
        elif kind == EventType.TOOL_CALL_END:
            if event.tool_call_id in self._tool_call_ends_sent_early:
                self._tool_call_ends_sent_early.discard(event.tool_call_id)
                return []
            self._tool_calls_open_on_wire.discard(event.tool_call_id)
        elif kind == EventType.TOOL_CALL_RESULT:
            subagent_id = self.open_subagent_for(event.tool_call_id)
            if subagent_id is not None:
                self.finish(subagent_id)
                return [*self._drain(), event]
        elif kind in TERMINAL_TYPES:
            closed = self._close_for_finish(event) if kind == EventType.RUN_FINISHED else self._close_for_error(event)
            self.ended = True  # only now: the closes above go through the sink
            return closed
        return [event]

    def _comes_from_native_bridge(self, event: BaseEvent) -> bool:
        if event.type in SUBAGENT_TYPES:
            return True
        attributed = getattr(event, "subagent_run_id", None)
        return attributed is not None and attributed not in self._minted

    def _stand_down(self, event: BaseEvent) -> list[BaseEvent]:
        """Latch native mode; close what we announced, neutrally (no outcome)."""
        self._latch.trip(event)
        self._drain()  # injected content not yet sent is dropped: the bridge now speaks for it
        closes: list[BaseEvent] = [SubagentFinishedEvent(subagent_run_id=sid) for sid in self._open]
        self._finished.update(self._open)
        self._open.clear()
        return closes

    def _close_for_finish(self, event: RunFinishedEvent) -> list[BaseEvent]:
        out = self._drain()
        outcome = event.outcome
        interrupts = list(getattr(outcome, "interrupts", None) or [])
        if not interrupts:
            for subagent_id in list(self._open):
                self.finish(subagent_id)
            return [*out, *self._drain(), event]
        owned: dict[str, list[str]] = {}
        rewritten: list[Interrupt] = []
        for interrupt in interrupts:
            parent = self._interrupt_owner(interrupt) if self._interrupt_owner else None
            subagent_id = subagent_run_id_for(parent) if parent else None
            if subagent_id is not None and (subagent_id in self._open or subagent_id in self._minted):
                owned.setdefault(subagent_id, []).append(interrupt.id)
                interrupt = interrupt.model_copy(update={"subagent_run_id": subagent_id})
            rewritten.append(interrupt)
        for subagent_id in list(self._open):
            out.append(
                SubagentFinishedEvent(
                    subagent_run_id=subagent_id,
                    outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=owned.get(subagent_id) or None),
                )
            )
        self._open.clear()
        new_outcome = outcome.model_copy(update={"interrupts": rewritten})
        return [*out, event.model_copy(update={"outcome": new_outcome})]

    def _close_for_error(self, event: RunErrorEvent) -> list[BaseEvent]:
        out = self._drain()
        for subagent_id in list(self._open):
            self.fail(subagent_id, f"the run ended with an error: {event.message}", code="PARENT_RUN_ERROR")
        return [*out, *self._drain(), event]


def _attributed(event: BaseEvent, subagent_id: str) -> BaseEvent:
    if "subagent_run_id" not in type(event).model_fields:
        return event
    return event.model_copy(update={"subagent_run_id": subagent_id})


def without_subagents(events: Iterable[BaseEvent]) -> list[BaseEvent]:
    """The stream an older client can decode: no SUBAGENT_* events and no attribution."""
    out: list[BaseEvent] = []
    for event in events:
        if event.type in SUBAGENT_TYPES:
            continue
        if getattr(event, "subagent_run_id", None) is not None:
            event = event.model_copy(update={"subagent_run_id": None})
        if event.type == EventType.RUN_FINISHED and getattr(event.outcome, "interrupts", None):
            interrupts = [i.model_copy(update={"subagent_run_id": None}) for i in event.outcome.interrupts]
            event = event.model_copy(update={"outcome": event.outcome.model_copy(update={"interrupts": interrupts})})
        out.append(event)
    return out


PUMP_AHEAD = 64
"""How many wire events the bridge may run ahead of a slow client before it waits (backpressure)."""

_closing_pumps: set[asyncio.Task] = set()
"""Strong references to cancelled pumps still unwinding (the loop only keeps weak ones)."""


async def emit_subagents(
    bridge_events: AsyncIterator[BaseEvent],
    latch: NativeLatch,
    *,
    thread_id: str,
    run_id: str,
    enabled: bool = True,
    interrupt_owner: InterruptOwner | None = None,
    error_code: Callable[[BaseException], str] = lambda exc: type(exc).__name__,
) -> AsyncIterator[BaseEvent]:
    """Wrap one bridge run: merge injected subagent events in, live and in order.

    One *pump* task per run pulls the bridge, in the run's own context, and turns each bridge
    event into its wire events the moment the bridge emits it (what was injected before it, then
    the closes it implies, then the event), appending to ``ready``. This generator yields from
    ``ready``; when ``ready`` is empty and the bridge sits inside a tool, it forwards what the
    tool injects, live. Everything earlier is already out by then, so the order is the bridge's.

    ``enabled=False`` (the setting or a per-request override) still runs the dialect so the
    specialist's content reaches the client, but strips lifecycle events and attribution.
    A bridge that raises, or stops mid-run, still ends the stream with RUN_ERROR (with
    ``error_code(exc)``, or ``INCOMPLETE_RUN``) after every open subagent is closed.
    """
    run = SubagentRun(latch, thread_id=thread_id, interrupt_owner=interrupt_owner)
    context = contextvars.copy_context()
    context.run(CURRENT_RUN.set, run)
    ready: deque[BaseEvent] = deque()
    has_room = asyncio.Event()
    has_room.set()
    started = False
    pumping = True

    def send(events: list[BaseEvent]) -> None:
        ready.extend(events if enabled else without_subagents(events))
        run._wakeup.set()

    async def pump() -> None:
        nonlocal started, pumping
        iterator = bridge_events.__aiter__()
        try:
            async for event in iterator:
                if not started:
                    started = event.type == EventType.RUN_STARTED
                    send([event])
                    await asyncio.sleep(0)  # let the client see the run start at once
                    continue
                send([*run._drain(), *run._on_bridge_event(event)])
                if run.ended:
                    return
                if len(ready) >= PUMP_AHEAD:
                    has_room.clear()
                    await has_room.wait()
            if started:  # a bridge that stops mid-run must not leave the client a cut stream
                send(run._on_bridge_event(RunErrorEvent(message="The run ended early.", code="INCOMPLETE_RUN")))
        except Exception as exc:  # the bridge escaped its own error handling
            logger.exception("bridge run failed on thread %s", thread_id)
            opening: list[BaseEvent] = [] if started else [RunStartedEvent(thread_id=thread_id, run_id=run_id)]
            started = True
            error = RunErrorEvent(message=str(exc) or type(exc).__name__, code=error_code(exc))
            send([*opening, *run._on_bridge_event(error)])
        finally:
            pumping = False
            run._wakeup.set()
            closer = getattr(iterator, "aclose", None)
            if closer is not None:
                try:
                    await closer()
                except Exception:  # noqa: BLE001 - the run is over; closing is best effort
                    logger.debug("bridge iterator raised while closing", exc_info=True)

    pump_task = asyncio.get_running_loop().create_task(pump(), context=context)
    try:
        while True:
            if ready:
                yield ready.popleft()
                if len(ready) < PUMP_AHEAD // 2:
                    has_room.set()
            elif started and run._sink and not run.ended:
                send(run._drain())  # live: injected while the bridge is inside a tool
            elif not pumping:
                return
            else:
                run._wakeup.clear()
                await run._wakeup.wait()
    finally:
        run.ended = True
        if not pump_task.done():
            pump_task.cancel()
            _closing_pumps.add(pump_task)
            pump_task.add_done_callback(_closing_pumps.discard)
            try:
                await pump_task
            except BaseException:  # noqa: BLE001 - the pump's own outcome no longer matters
                pass


def subagent_events_enabled(forwarded_props: object, default: bool) -> bool:
    """The per-request override: ``forwardedProps.subagentEvents`` (true/false or "on"/"off")."""
    if isinstance(forwarded_props, dict):
        value = forwarded_props.get("subagentEvents")
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"on", "off", "true", "false"}:
            return value.lower() in {"on", "true"}
    return default
