"""The Mastra route's fixes to what @ag-ui/mastra 1.1.2 puts on the wire, one stage each.

* :func:`expand_text_chunks`: the bridge streams text as TEXT_MESSAGE_CHUNK; the route sends the
  START / CONTENT / END it stands for (what ``@ag-ui/client`` expands it to), as every route does.
* :func:`tool_calls_on_time`: the bridge holds a backend tool call back until Mastra's next chunk,
  and loses it when that chunk is a suspension (``case "tool-call-suspended": u = null``); a
  delegating call is therefore shown only once the specialist has finished, and of two calls that
  suspend at once only the first is shown. The stage shows a delegating call when its specialist's
  first forwarded chunk arrives (and drops the bridge's late copy), and every call an interrupt
  names that never appeared, from the interrupt's own record of it.
* :func:`with_messages_snapshot`: the bridge sends no MESSAGES_SNAPSHOT; a client that keeps its
  history from snapshots (the frontend-tool round trip, a resume) needs one, so the route folds
  the run's messages into one before RUN_FINISHED, as a client folding the events would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    EventType,
    FunctionCall,
    Message,
    MessagesSnapshotEvent,
    RunAgentInput,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolMessage,
)

from emitters.mastra import FORWARDED

TOOL_CALL_EVENTS = frozenset({EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END})


def interrupt_call(interrupt_id: str) -> str:
    """The tool call id in @ag-ui/mastra's interrupt id ``<runId>::<toolCallId>``."""
    return interrupt_id.split("::", 1)[-1]


async def expand_text_chunks(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    open_id: str | None = None
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.TEXT_MESSAGE_CHUNK:
                if event.message_id != open_id:
                    if open_id is not None:
                        yield TextMessageEndEvent(message_id=open_id)
                    open_id = event.message_id or f"msg-{uuid.uuid4().hex}"
                    yield TextMessageStartEvent(message_id=open_id, role="assistant")
                if event.delta:
                    yield TextMessageContentEvent(message_id=open_id, delta=event.delta)
                continue
            if open_id is not None:
                yield TextMessageEndEvent(message_id=open_id)
                open_id = None
            yield event


def _call(call_id: str, name: str, args: object, parent: str | None) -> list[BaseEvent]:
    return [
        ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=parent),
        ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(args if args is not None else {})),
        ToolCallEndEvent(tool_call_id=call_id),
    ]


async def tool_calls_on_time(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    shown = {interrupt_call(entry.interrupt_id) for entry in run_input.resume or []}  # shown by the run it resumes
    early: set[str] = set()
    parent: str | None = None
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.CUSTOM and event.name == FORWARDED:
                call_id = event.value["toolCallId"]
                if call_id not in shown:
                    shown.add(call_id)
                    early.add(call_id)
                    for call in _call(call_id, event.value["toolName"], event.value.get("args"), None):
                        yield call
            elif event.type in TOOL_CALL_EVENTS and event.tool_call_id in early:
                continue  # the bridge's late copy of a call already shown
            elif event.type == EventType.TOOL_CALL_START:
                shown.add(event.tool_call_id)
                parent = event.parent_message_id
            elif event.type == EventType.RUN_FINISHED:
                for interrupt in getattr(event.outcome, "interrupts", None) or []:
                    mastra = (interrupt.metadata or {}).get("mastra") or {}
                    if interrupt.tool_call_id and interrupt.tool_call_id not in shown and mastra.get("toolName"):
                        shown.add(interrupt.tool_call_id)
                        for call in _call(interrupt.tool_call_id, mastra["toolName"], mastra.get("args"), parent):
                            yield call
            yield event


async def with_messages_snapshot(
    events: AsyncIterator[BaseEvent], run_input: RunAgentInput
) -> AsyncIterator[BaseEvent]:
    messages: dict[str, Message] = {message.id: message for message in run_input.messages}
    calls: dict[str, ToolCall] = {}
    async with aclosing(events):
        async for event in events:
            kind = event.type
            if kind == EventType.TEXT_MESSAGE_START:
                messages[event.message_id] = AssistantMessage(id=event.message_id, role="assistant", content="")
            elif kind == EventType.TEXT_MESSAGE_CONTENT and event.message_id in messages:
                message = messages[event.message_id]
                message.content = (message.content or "") + event.delta
            elif kind == EventType.TOOL_CALL_START:
                owner_id = event.parent_message_id or f"assistant-{event.tool_call_id}"
                owner = messages.get(owner_id)
                if not isinstance(owner, AssistantMessage):
                    owner = messages[owner_id] = AssistantMessage(id=owner_id, role="assistant")
                call = calls[event.tool_call_id] = ToolCall(
                    id=event.tool_call_id,
                    type="function",
                    function=FunctionCall(name=event.tool_call_name, arguments=""),
                )
                owner.tool_calls = [*(owner.tool_calls or []), call]
            elif kind == EventType.TOOL_CALL_ARGS and event.tool_call_id in calls:
                calls[event.tool_call_id].function.arguments += event.delta
            elif kind == EventType.TOOL_CALL_RESULT:
                messages[event.message_id] = ToolMessage(
                    id=event.message_id, role="tool", tool_call_id=event.tool_call_id, content=event.content
                )
            elif kind == EventType.RUN_FINISHED:
                yield MessagesSnapshotEvent(messages=list(messages.values()))
            yield event
