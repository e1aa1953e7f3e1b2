"""The subagent emitter core: puts the protocol's SUBAGENT_* events on the wire, and nothing else.

Why it exists: AG-UI has SUBAGENT_STARTED / FINISHED / ERROR events and a ``subagentRunId``
attribution field, but the upstream bridges report a delegation to a specialist agent only in
their own dialect, or not at all. Each runtime contributes a thin *dialect* (``emitters/<runtime>.py``)
that hooks the runtime's delegation seam and drives a :class:`~emitters.delegation.Delegation`;
this module owns the lifecycle rules, once.

It is one stage of the app's per-run pipeline (``app.pipeline``), which runs it in the run's own
task and context and gives it ``out``: a way to put events on the wire *live*, while the bridge
sits inside a delegation tool and emits nothing. Removing a dialect, or the latch standing the
emitter down, changes nothing on the wire but SUBAGENT_* events, attribution and the one rule
below about a held-back parent TOOL_CALL_END (``tests/test_emitter_stand_down.py``).

The rules, per run:

* ids are derived from the parent tool call (``<toolCallId>-sub``), so a subagent suspended by an
  approval continues under the same id on the resuming run with nothing stored in between;
* no id is started twice in a run; every content event of a subagent carries its id;
* a subagent never nests inside an open parent tool call: a bridge that holds the parent's
  TOOL_CALL_END back until the result gets it sent first, and its late duplicate is dropped;
* every open subagent is closed before its parent's TOOL_CALL_RESULT and before the terminal
  event (``suspended`` with its interrupt ids when the run ends in an interrupt, SUBAGENT_ERROR
  when it fails or stops early); nothing goes out after the terminal event;
* a specialist's tool call id in an interrupt is the id the client saw on the wire;
* ``null`` is never sent on an optional field.

When to delete it: the day the installed bridges emit SUBAGENT_* themselves. Until then
:class:`NativeLatch` makes that upgrade safe: the first SUBAGENT_* event (or an attribution id we
did not mint) coming out of a bridge switches the route to pass-through, and
``tests/test_native_probe.py`` fails loudly so the team deletes the dialect on purpose.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import aclosing
from typing import Any

from ag_ui.core import (
    BaseEvent,
    EventType,
    Interrupt,
    RunFinishedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    ToolCallEndEvent,
)

logger = logging.getLogger("agui.emitter")

SUBAGENT_TYPES = frozenset({EventType.SUBAGENT_STARTED, EventType.SUBAGENT_FINISHED, EventType.SUBAGENT_ERROR})
TERMINAL_TYPES = frozenset({EventType.RUN_FINISHED, EventType.RUN_ERROR})
STEP_TYPES = frozenset({EventType.STEP_STARTED, EventType.STEP_FINISHED})
PARENT_RUN_ERROR = "PARENT_RUN_ERROR"
"""SUBAGENT_ERROR code of a subagent still open when its run failed or stopped."""

CURRENT_RUN: contextvars.ContextVar[SubagentRun | None] = contextvars.ContextVar(
    "agui_current_subagent_run", default=None
)
"""The run whose bridge is executing; set by :func:`emit_subagents` in the run's own context."""

InterruptOwner = Callable[[Interrupt], "str | None"]
"""Dialect hook: the parent tool call id of the delegation that raised this interrupt, if any."""


def current_run() -> SubagentRun | None:
    """The run a tool or middleware is executing in, or None outside a route (e.g. a unit test)."""
    return CURRENT_RUN.get()


def subagent_run_id_for(parent_tool_call_id: str) -> str:
    """Deterministic id of the subagent a delegation tool call starts."""
    return f"{parent_tool_call_id}-sub"


def specialist_tool_call_id(parent_tool_call_id: str, inner_id: str) -> str:
    """The id on the wire of a specialist's own tool call: namespaced under the delegation's call,
    since two specialists may mint the same ids (the scheme ag-ui-strands uses for its own forwarding)."""
    return f"{parent_tool_call_id}::{inner_id}"


class NativeLatch:
    """Process-wide, per-route memory that the bridge now emits SUBAGENT_* itself.

    A per-run flag would re-learn on every run and duplicate the first delegation of each one,
    so one latch is created per mounted route and shared by all of its runs. ``expected``: the
    runtime declares that its bridge does so (``Runtime.native_subagents``), so standing down is
    news only when it is not (a warning then: an upgraded bridge, whose dialect can go).
    """

    def __init__(self, route: str, *, expected: bool = False) -> None:
        self.route = route
        self.expected = expected
        self.tripped = False

    def trip(self, event: BaseEvent) -> None:
        if self.tripped:
            return
        self.tripped = True
        if self.expected:
            logger.info(
                "route=%s event=%s | the bridge emits subagent events natively, as its runtime declares: the "
                "subagent emitter stands down for this route",
                self.route,
                event.type.value,
            )
            return
        logger.warning(
            "route=%s event=%s | the bridge emits subagent events natively: the subagent emitter stands "
            "down for this route; delete its dialect once this is confirmed",
            self.route,
            event.type.value,
        )


class SubagentRun:
    """One run's emitter state and the seam API the dialects call.

    Seam methods are synchronous and cheap. They may be called from the event loop or from a
    worker thread (some runtimes run tools in threads); what they emit goes to ``out`` at once.
    """

    def __init__(
        self,
        latch: NativeLatch,
        *,
        thread_id: str,
        out: Callable[[BaseEvent], None],
        enabled: bool = True,
        interrupt_owner: InterruptOwner | None = None,
    ) -> None:
        self._latch = latch
        self.thread_id = thread_id  # whose run this is, for logs and observers
        self._out = out
        self._enabled = enabled
        self._interrupt_owner = interrupt_owner
        self._open: dict[str, None] = {}  # open subagent ids, in start order (an ordered set)
        self._finished: set[str] = set()
        self._minted: set[str] = set()
        self._tool_calls_open_on_wire: set[str] = set()
        self._tool_call_ends_sent_early: set[str] = set()
        self.delegations: dict[str, Any] = {}
        """The dialects' open delegations of this run (``emitters.delegation.Delegation``), by parent
        tool call id: kept here so they end with the run."""
        self.ended = False

    # --- seam API (dialects call these while the bridge runs a delegation) -------------------

    @property
    def native(self) -> bool:
        """True once the bridge emits SUBAGENT_* itself: dialects skip their work."""
        return self._latch.tripped

    def start(self, parent_tool_call_id: str, name: str, description: str | None = None) -> str:
        """Announce the subagent a delegation tool call starts; returns its ``subagentRunId``.
        Idempotent while the subagent is open."""
        subagent_id = subagent_run_id_for(parent_tool_call_id)
        if self.native or subagent_id in self._open:
            return subagent_id
        if subagent_id in self._finished:
            logger.warning("subagent=%s | already finished in this run; not starting it again", subagent_id)
            return subagent_id
        if parent_tool_call_id in self._tool_calls_open_on_wire:
            self._send(ToolCallEndEvent(tool_call_id=parent_tool_call_id))
            self._tool_call_ends_sent_early.add(parent_tool_call_id)
            self._tool_calls_open_on_wire.discard(parent_tool_call_id)
        self._open[subagent_id] = None
        self._minted.add(subagent_id)
        self._send(
            SubagentStartedEvent(
                subagent_run_id=subagent_id,
                name=name,
                description=description,
                parent_tool_call_id=parent_tool_call_id,
            )
        )
        return subagent_id

    def emit(self, event: BaseEvent, subagent_id: str) -> None:
        """Put one of the specialist's content events on the wire, attributed to ``subagent_id``."""
        if not self.native:
            self._send(_attributed(event, subagent_id))

    def finish(self, subagent_id: str, result: object | None = None) -> None:
        """Close a subagent that completed (no-op if it is not open)."""
        for event in self._close(subagent_id, _success(subagent_id, result)):
            self._send(event)

    def fail(self, subagent_id: str, message: str, code: str | None = None) -> None:
        """Close a subagent whose specialist failed (no-op if it is not open)."""
        error = SubagentErrorEvent(subagent_run_id=subagent_id, message=message or "subagent failed", code=code)
        for event in self._close(subagent_id, error):
            self._send(event)

    def open_subagent_for(self, parent_tool_call_id: str) -> str | None:
        subagent_id = subagent_run_id_for(parent_tool_call_id)
        return subagent_id if subagent_id in self._open else None

    # --- the bridge side (called by emit_subagents, in order) ---------------------------------

    def on_bridge_event(self, event: BaseEvent) -> list[BaseEvent]:
        """What goes on the wire for one bridge event: the closes it implies, then the event."""
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
                return [*self._close(subagent_id, _success(subagent_id, None)), event]
        elif kind == EventType.RUN_FINISHED:
            closes = self._suspend_open(event)
            self.ended = True
            return closes
        elif kind == EventType.RUN_ERROR:
            return [*self.close_all("The run failed before the subagent finished."), event]
        return [event]

    def close_all(self, message: str) -> list[BaseEvent]:
        """SUBAGENT_ERROR for every open subagent: the run failed or stopped under them. The run
        is over for the emitter afterwards (what a dialect puts later is dropped)."""
        closes = [
            event
            for subagent_id in list(self._open)
            for event in self._close(
                subagent_id, SubagentErrorEvent(subagent_run_id=subagent_id, message=message, code=PARENT_RUN_ERROR)
            )
        ]
        self.ended = True
        return closes

    def visible(self, events: Iterable[BaseEvent]) -> list[BaseEvent]:
        """``events`` as this run's client may see them (without lifecycle and attribution when off)."""
        return list(events) if self._enabled else without_subagents(events)

    # --- internals ------------------------------------------------------------------------------

    def _send(self, event: BaseEvent) -> None:
        if not self.ended:
            for visible in self.visible((event,)):
                self._out(visible)

    def _close(self, subagent_id: str, closing: BaseEvent) -> list[BaseEvent]:
        if subagent_id not in self._open:
            return []
        del self._open[subagent_id]
        self._finished.add(subagent_id)
        return [closing]

    def _comes_from_native_bridge(self, event: BaseEvent) -> bool:
        if event.type in SUBAGENT_TYPES:
            return True
        attributed = getattr(event, "subagent_run_id", None)
        return attributed is not None and attributed not in self._minted

    def _stand_down(self, event: BaseEvent) -> list[BaseEvent]:
        """Latch native mode; close what we announced, neutrally (no outcome)."""
        self._latch.trip(event)
        closes: list[BaseEvent] = [SubagentFinishedEvent(subagent_run_id=sid) for sid in self._open]
        self._finished.update(self._open)
        self._open.clear()
        return closes

    def _suspend_open(self, event: RunFinishedEvent) -> list[BaseEvent]:
        """Closes before RUN_FINISHED: success, or ``suspended`` when the run ends in an interrupt
        (each interrupt a specialist raised names its subagent and the tool call id on the wire)."""
        outcome = event.outcome
        interrupts = list(getattr(outcome, "interrupts", None) or [])
        if not interrupts:
            closes = [e for sid in list(self._open) for e in self._close(sid, _success(sid, None))]
            return [*closes, event]
        owned: dict[str, list[str]] = {}
        rewritten: list[Interrupt] = []
        for interrupt in interrupts:
            parent = self._interrupt_owner(interrupt) if self._interrupt_owner else None
            subagent_id = subagent_run_id_for(parent) if parent else None
            if parent is not None and subagent_id in self._minted:
                owned.setdefault(subagent_id, []).append(interrupt.id)
                update: dict[str, object] = {"subagent_run_id": subagent_id}
                if interrupt.tool_call_id:
                    update["tool_call_id"] = specialist_tool_call_id(parent, interrupt.tool_call_id)
                interrupt = interrupt.model_copy(update=update)
            rewritten.append(interrupt)
        closes = [
            SubagentFinishedEvent(
                subagent_run_id=subagent_id,
                outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=owned.get(subagent_id) or None),
            )
            for subagent_id in self._open
        ]
        self._finished.update(self._open)
        self._open.clear()
        return [*closes, event.model_copy(update={"outcome": outcome.model_copy(update={"interrupts": rewritten})})]


def _success(subagent_id: str, result: object | None) -> SubagentFinishedEvent:
    return SubagentFinishedEvent(subagent_run_id=subagent_id, result=result, outcome=SubagentFinishedSuccessOutcome())


def _attributed(event: BaseEvent, subagent_id: str) -> BaseEvent:
    if "subagent_run_id" not in type(event).model_fields:
        return event
    return event.model_copy(update={"subagent_run_id": subagent_id})


def without_subagents(events: Iterable[BaseEvent]) -> list[BaseEvent]:
    """The stream an older client can decode: no SUBAGENT_* events and no attribution. A subagent's
    own steps go too (a bridge that emits SUBAGENT_* itself attributes them): unattributed, they
    would open and close as the parent's, colliding with its steps and each other's."""
    out: list[BaseEvent] = []
    for event in events:
        if event.type in SUBAGENT_TYPES:
            continue
        if event.type in STEP_TYPES and getattr(event, "subagent_run_id", None) is not None:
            continue
        if getattr(event, "subagent_run_id", None) is not None:
            event = event.model_copy(update={"subagent_run_id": None})
        if event.type == EventType.RUN_FINISHED and getattr(event.outcome, "interrupts", None):
            interrupts = [i.model_copy(update={"subagent_run_id": None}) for i in event.outcome.interrupts]
            event = event.model_copy(update={"outcome": event.outcome.model_copy(update={"interrupts": interrupts})})
        out.append(event)
    return out


async def emit_subagents(events: AsyncIterator[BaseEvent], run: SubagentRun) -> AsyncIterator[BaseEvent]:
    """The emitter stage: ``events`` with the lifecycle rules applied, in order.

    Must run in the run's own context (the pipeline's pump task): it publishes ``run`` there as
    :data:`CURRENT_RUN` before the bridge starts, so the dialect's hooks inside the bridge find it.
    Whatever way ``events`` ends (terminal event, exception, or early stop) every open subagent is
    closed first.
    """
    CURRENT_RUN.set(run)
    try:
        async with aclosing(events):
            async for event in events:
                for out in run.visible(run.on_bridge_event(event)):
                    yield out
                if run.ended:
                    return
    except Exception:
        for out in run.visible(run.close_all("The run failed before the subagent finished.")):
            yield out
        raise
    for out in run.visible(run.close_all("The run ended before the subagent finished.")):
        yield out


def subagent_events_enabled(forwarded_props: object, default: bool) -> bool:
    """The per-request override: ``forwardedProps.subagentEvents`` (true/false or "on"/"off")."""
    if isinstance(forwarded_props, dict):
        value = forwarded_props.get("subagentEvents")
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"on", "off", "true", "false"}:
            return value.lower() in {"on", "true"}
    return default
