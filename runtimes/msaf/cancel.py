"""A cancelled approval still leaves the client a coherent transcript.

agent-framework-ag-ui 1.7.0 answers a resume whose every entry is ``cancelled`` with
RUN_STARTED, RUN_FINISHED and nothing else: the gated tool call keeps no result and the user
gets no reply. This transform adds, before RUN_FINISHED, a TOOL_CALL_RESULT saying the call was
not run and, when the bridge said nothing, a short assistant message.

The resume names interrupt ids, not tool calls, so the route remembers (per thread, bounded) which
tool call each pending approval interrupt stands for, from the bridge's own
``function_approval_request`` events.
"""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    BaseEvent,
    EventType,
    RunAgentInput,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallResultEvent,
)


@dataclass(frozen=True)
class GatedCall:
    """The tool call an approval interrupt stands for."""

    tool_call_id: str
    name: str
    arguments: Any


class PendingApprovals:
    """Which tool call each pending approval interrupt of a thread gates; least recently used
    threads are forgotten so memory stays bounded."""

    def __init__(self, max_threads: int = 1024) -> None:
        self._by_thread: OrderedDict[str, dict[str, GatedCall]] = OrderedDict()
        self._max_threads = max_threads

    def get(self, thread_id: str) -> dict[str, GatedCall]:
        return dict(self._by_thread.get(thread_id, {}))

    def put(self, thread_id: str, calls: dict[str, GatedCall]) -> None:
        self._by_thread.pop(thread_id, None)
        if calls:
            self._by_thread[thread_id] = dict(calls)
            while len(self._by_thread) > self._max_threads:
                self._by_thread.popitem(last=False)

    def threads(self) -> list[str]:
        """The threads with an approval pending, least recently asked first."""
        return list(self._by_thread)


async def complete_cancelled_approvals(
    events: AsyncIterator[BaseEvent], run_input: RunAgentInput, pending_of: Callable[[RunAgentInput], PendingApprovals]
) -> AsyncIterator[BaseEvent]:
    """Pass the bridge's events through; answer cancelled approvals the bridge left open. The
    registry is ``pending_of(run_input)``, asked when the run starts (a stage outside may load it)."""
    thread_id = run_input.thread_id
    pending = pending_of(run_input)
    cancelled_ids = {entry.interrupt_id for entry in run_input.resume or [] if entry.status == "cancelled"}
    cancelled = [call for key, call in pending.get(thread_id).items() if key in cancelled_ids]
    requested: dict[str, GatedCall] = {}
    answered: set[str] = set()
    replied = False
    async with aclosing(events):
        async for event in events:
            kind = event.type
            if kind == EventType.CUSTOM and event.name == "function_approval_request":
                _remember(requested, event.value)
            elif kind == EventType.TOOL_CALL_RESULT:
                answered.add(event.tool_call_id)
            elif kind == EventType.TEXT_MESSAGE_CONTENT:
                replied = True
            elif kind == EventType.RUN_FINISHED:
                interrupts = getattr(event.outcome, "interrupts", None) or []
                pending.put(thread_id, {i.id: requested[i.id] for i in interrupts if i.id in requested})
                if not interrupts:
                    for extra in _not_run([call for call in cancelled if call.tool_call_id not in answered], replied):
                        yield extra
            yield event


def _remember(requested: dict[str, GatedCall], value: object) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("function_call"), dict):
        return
    call = value["function_call"]
    if value.get("id") and call.get("call_id"):
        requested[str(value["id"])] = GatedCall(
            str(call["call_id"]), str(call.get("name") or "the tool"), call.get("arguments")
        )


def _not_run(calls: list[GatedCall], replied: bool) -> list[BaseEvent]:
    events: list[BaseEvent] = [
        ToolCallResultEvent(
            message_id=f"cancelled-{uuid.uuid4().hex[:12]}",
            tool_call_id=call.tool_call_id,
            content=f"Not run: the approval for {call.name} was cancelled.",
            role="tool",
        )
        for call in calls
    ]
    if calls and not replied:
        message_id = f"cancelled-{uuid.uuid4().hex[:12]}"
        text = " ".join(
            f"I did not run {call.name}({json.dumps(call.arguments)}): the approval was cancelled." for call in calls
        )
        events += [
            TextMessageStartEvent(message_id=message_id, role="assistant"),
            TextMessageContentEvent(message_id=message_id, delta=text),
            TextMessageEndEvent(message_id=message_id),
        ]
    return events
