"""ag-ui-langgraph's native SUBAGENT_* events, held to the rules the subagent emitter keeps.

ag-ui-langgraph 0.0.47 emits the protocol's subagent surface itself (``subagent_visibility=
"attributed"``): a run of another ``create_agent`` graph nested under a tool call is a subagent,
its events carry ``subagentRunId``, and SUBAGENT_STARTED / FINISHED / ERROR frame it. That lifecycle
is written for deepagents' ``task`` tool (a tool call whose input has ``subagent_type``); for any
other delegation tool, such as this route's ``research_specialist``, the bridge gets these rules
wrong (upstream), and this stage puts them right at the boundary:

* ids: the bridge names a subagent after its checkpoint namespace (``tools:<task id>``) and links no
  parent tool call. Here it is ``<parentToolCallId>-sub`` (the emitter core's scheme, so a subagent
  suspended by an approval continues under the same id on the resume), with ``parentToolCallId``
  and a description, and every attributed event and snapshot message says so. The delegation tool
  tells this stage which namespace belongs to which tool call (:func:`record_delegation`).
* closing: the bridge finishes such a subagent only when the run ends, after the parent's
  TOOL_CALL_RESULT, and without an outcome. Here SUBAGENT_FINISHED ``{type: "success"}`` comes right
  before the parent call's TOOL_CALL_RESULT (the subagent's open step closed first), and the
  bridge's late close is dropped.
* suspension: an approval inside the specialist ends the run with the bridge's plain
  SUBAGENT_FINISHED and an interrupt that names no subagent. Here the subagent ends
  ``{type: "suspended", interruptIds}`` and the interrupt carries its ``subagentRunId``.

What comes out is still the bridge's native surface, so the app's subagent emitter stands down on
it by itself (``emitters.core.NativeLatch``) and only applies what every route gets (for example,
``AGUI_SUBAGENT_EVENTS=off`` strips it).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import (
    BaseEvent,
    EventType,
    Message,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunFinishedEvent,
    StepFinishedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
)

from emitters.core import PARENT_RUN_ERROR, subagent_run_id_for
from runtimes.base import TERMINAL
from runtimes.langgraph.shared import PAUSED_TTL_S
from store import Store

SUBAGENT_DESCRIPTION = "Looks one fact up with lookup_fact and reports back in a sentence or two."
"""What a client reads about the subagent (SUBAGENT_STARTED.description)."""

_DELEGATIONS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "agui_langgraph_delegations", default=None
)
_STEPS = frozenset({EventType.STEP_STARTED, EventType.STEP_FINISHED})


def record_delegation(config: Any, tool_call_id: str | None) -> None:
    """Called by the delegation tool as it starts: its checkpoint namespace (the bridge's id for
    the subagent it runs) belongs to ``tool_call_id``. A no-op outside a route's run."""
    delegations = _DELEGATIONS.get()
    namespace = ((config or {}).get("configurable") or {}).get("checkpoint_ns")
    if delegations is not None and namespace and tool_call_id:
        delegations[namespace] = tool_call_id


class _Subagents:
    """One run's native subagents: their ids on the wire, what of them is open, what they asked."""

    def __init__(self, delegations: dict[str, str], suspended: dict[str, str]) -> None:
        self._delegations = delegations  # native id (checkpoint namespace) -> parent tool call id
        self._ids: dict[str, str] = {native: wire for wire, native in suspended.items()}  # native id -> id on the wire
        self._parents: dict[str, str] = {}  # parent tool call id -> id on the wire
        self._open: dict[str, list[str]] = {}  # id on the wire -> its open steps, in order
        self._closed: set[str] = set()
        self._calls: dict[str, str] = {}  # a subagent's own tool call id -> the subagent's id
        self.suspended: dict[str, str] = {}
        """The subagents the run suspended: id on the wire -> the bridge's id."""

    def on(self, event: BaseEvent) -> list[BaseEvent]:
        """What goes on for one bridge event: the closes it implies, then the event (or nothing)."""
        kind = event.type
        if kind == EventType.SUBAGENT_STARTED:
            return self._started(event)
        if kind == EventType.SUBAGENT_FINISHED:
            return []  # the bridge closes too late and without an outcome: this stage closes
        if kind == EventType.SUBAGENT_ERROR:
            subagent_id = self._ids.get(event.subagent_run_id, event.subagent_run_id)
            if subagent_id not in self._open:
                return []
            del self._open[subagent_id]
            self._closed.add(subagent_id)
            return [event.model_copy(update={"subagent_run_id": subagent_id})]
        if getattr(event, "subagent_run_id", None) is not None:
            return self._attributed(event)
        if kind == EventType.TOOL_CALL_RESULT and event.tool_call_id in self._parents:
            subagent_id = self._parents[event.tool_call_id]
            return [*self._close(subagent_id, _success()), event]
        if kind == EventType.MESSAGES_SNAPSHOT:
            return [self._snapshot(event)]
        if kind == EventType.RUN_FINISHED:
            return self._finished(event)
        if kind == EventType.RUN_ERROR:
            return [*self.close_all("The run failed before the subagent finished."), event]
        return [event]

    def close_all(self, message: str) -> list[BaseEvent]:
        """SUBAGENT_ERROR for every subagent still open: the run failed or stopped under it."""
        error = SubagentErrorEvent(subagent_run_id="", message=message, code=PARENT_RUN_ERROR)
        return [
            closing
            for subagent_id in list(self._open)
            for closing in self._close(subagent_id, error.model_copy(update={"subagent_run_id": subagent_id}))
        ]

    def _started(self, event: SubagentStartedEvent) -> list[BaseEvent]:
        native = event.subagent_run_id
        parent = self._delegations.get(native)
        if parent is not None:  # one of this route's delegations (otherwise: the bridge's own account)
            self._parents[parent] = subagent_run_id_for(parent)
            event = event.model_copy(
                update={
                    "subagent_run_id": self._parents[parent],
                    "parent_tool_call_id": parent,
                    "description": event.description or SUBAGENT_DESCRIPTION,
                }
            )
        self._ids[native] = event.subagent_run_id
        self._open[event.subagent_run_id] = []
        return [event]

    def _attributed(self, event: BaseEvent) -> list[BaseEvent]:
        subagent_id = self._ids.get(event.subagent_run_id, event.subagent_run_id)
        if subagent_id in self._closed and event.type in _STEPS:
            return []  # the subagent's steps were closed with it
        event = event.model_copy(update={"subagent_run_id": subagent_id})
        steps = self._open.get(subagent_id)
        if event.type == EventType.STEP_STARTED and steps is not None:
            steps.append(event.step_name)
        elif event.type == EventType.STEP_FINISHED and steps is not None and event.step_name in steps:
            steps.remove(event.step_name)
        elif event.type == EventType.TOOL_CALL_START:
            self._calls[event.tool_call_id] = subagent_id
        return [event]

    def _close(self, subagent_id: str, closing: BaseEvent) -> list[BaseEvent]:
        """The subagent's open steps closed, then ``closing`` (nothing if it is not open)."""
        steps = self._open.pop(subagent_id, None)
        if steps is None:
            return []
        self._closed.add(subagent_id)
        ends = [StepFinishedEvent(step_name=name, subagent_run_id=subagent_id) for name in reversed(steps)]
        return [*ends, closing.model_copy(update={"subagent_run_id": subagent_id})]

    def _snapshot(self, event: MessagesSnapshotEvent) -> MessagesSnapshotEvent:
        messages = [
            message.model_copy(update={"subagent_run_id": self._ids[owner]})
            if (owner := getattr(message, "subagent_run_id", None)) in self._ids
            else message
            for message in event.messages
        ]
        return event.model_copy(update={"messages": messages})

    def _finished(self, event: RunFinishedEvent) -> list[BaseEvent]:
        """Close what is open before RUN_FINISHED: ``suspended`` with the interrupts each subagent
        raised when the run ends in an interrupt, success otherwise."""
        interrupts = list(getattr(event.outcome, "interrupts", None) or [])
        owned: dict[str, list[str]] = {}
        for index, interrupt in enumerate(interrupts):
            owner = self._calls.get(interrupt.tool_call_id or "")
            if owner is not None:
                owned.setdefault(owner, []).append(interrupt.id)
                interrupts[index] = interrupt.model_copy(update={"subagent_run_id": owner})
        closes = [
            closing
            for subagent_id in list(self._open)
            for closing in self._close(
                subagent_id,
                SubagentFinishedEvent(
                    subagent_run_id=subagent_id,
                    outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=owned.get(subagent_id) or None),
                )
                if interrupts
                else _success(),
            )
        ]
        if interrupts:
            event = event.model_copy(update={"outcome": event.outcome.model_copy(update={"interrupts": interrupts})})
            self.suspended = {wire: native for native, wire in self._ids.items() if wire in owned}
        return [*closes, event]


def _success() -> SubagentFinishedEvent:
    return SubagentFinishedEvent(subagent_run_id="", outcome=SubagentFinishedSuccessOutcome())


class NativeSubagents:
    """The route's stage, and the little it keeps between runs: which subagents wait on an approval.

    Why keep anything: the client sends the suspended subagent's messages back with the resume,
    tagged with the id it saw, and ag-ui-langgraph reserves a tagged message's tool call ids for
    the subagent of that (its own) id. Tagged with ours, the resumed specialist's tool call would
    come back under a new, minted id instead of the one its interrupt named. So those messages
    reach the bridge tagged with its id again (:meth:`bridge_messages`). Only a thread waiting
    for an approval has an entry (its next run replaces it), so the app's approval ledger bounds
    them, and lets one go through :meth:`forget`.
    """

    def __init__(self, engine: Store | None = None) -> None:
        self._suspended: dict[str, dict[str, str]] = {}  # thread -> wire id -> bridge id
        self._engine = engine
        """With shared state, the store that keeps each thread's entry between its runs (one JSON
        record, ``agui:langgraph:suspended:<thread>``, expiring as a paused thread's checkpoints do);
        this process then holds a thread's entry only while a run of it goes."""

    def bridge_messages(self, run_input: RunAgentInput) -> list[Message]:
        """The request's messages with a suspended subagent's messages tagged with the bridge's id."""
        suspended = self._suspended.get(run_input.thread_id) or {}
        return [
            message.model_copy(update={"subagent_run_id": suspended[owner]})
            if (owner := getattr(message, "subagent_run_id", None)) in suspended
            else message
            for message in run_input.messages
        ]

    async def stage(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The bridge's subagent surface with the rules above applied, in order. Opens the run's
        delegation record before the bridge starts (in the run's own context, which the graph's
        tasks inherit), and closes every subagent still open however the stream ends."""
        delegations: dict[str, str] = {}
        _DELEGATIONS.set(delegations)
        engine = self._engine
        if engine is not None:
            self._remember(run_input.thread_id, await _load(engine, run_input.thread_id))
        subagents = _Subagents(delegations, self._suspended.get(run_input.thread_id) or {})
        try:
            async with aclosing(events):
                async for event in events:
                    for out in subagents.on(event):
                        if engine is not None and out.type in TERMINAL:  # saved before a client sees the end
                            await _save(engine, run_input.thread_id, subagents.suspended)
                        yield out
        except Exception:
            for out in subagents.close_all("The run failed before the subagent finished."):
                yield out
            raise
        else:
            for out in subagents.close_all("The run ended before the subagent finished."):
                yield out
        finally:
            self._remember(run_input.thread_id, subagents.suspended)
            if engine is not None:
                self._suspended.pop(run_input.thread_id, None)

    async def forget(self, thread_id: str) -> None:
        """Drop the thread's suspended subagents (its run, if any, is over)."""
        self._suspended.pop(thread_id, None)
        if self._engine is not None:
            await self._engine.delete(_key(thread_id))

    def _remember(self, thread_id: str, suspended: dict[str, str]) -> None:
        self._suspended.pop(thread_id, None)
        if suspended:
            self._suspended[thread_id] = suspended


def _key(thread_id: str) -> str:
    return f"agui:langgraph:suspended:{thread_id}"


async def _load(engine: Store, thread_id: str) -> dict[str, str]:
    record = await engine.get(_key(thread_id))
    return json.loads(record) if record else {}


async def _save(engine: Store, thread_id: str, suspended: dict[str, str]) -> None:
    if suspended:
        await engine.put(_key(thread_id), json.dumps(suspended).encode(), ttl_s=PAUSED_TTL_S)
    else:
        await engine.delete(_key(thread_id))
