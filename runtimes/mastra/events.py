"""The Mastra route's fixes to what @ag-ui/mastra 1.1.2 puts on the wire, one stage each.

* :func:`expand_text_chunks`: the bridge streams text as TEXT_MESSAGE_CHUNK; the route sends the
  START / CONTENT / END it stands for (what ``@ag-ui/client`` expands it to), as every route does.
* :func:`tool_calls_on_time`: the bridge holds a backend tool call back until Mastra has it whole
  and sends its next chunk, and loses it when that chunk is a suspension (``case
  "tool-call-suspended": u = null``): a backend call's arguments never stream (no predictive
  state), a delegating call appears only once its specialist has finished, and of two calls that
  suspend at once only the first appears. The sidecar forwards each backend call's streaming
  chunks (CUSTOM :data:`STREAMED_CALL`); the stage shows the call from them as Mastra streams it
  and drops the bridge's late copy. A call still unseen when its specialist's first chunk arrives
  (or when an interrupt names it) is shown then, from what the sidecar or the interrupt recorded.
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

STREAMED_CALL = "mastra:tool-call"
"""The CUSTOM event name the sidecar forwards a backend tool call's streaming chunks under."""
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
    streaming: dict[str, bool] = {}  # calls shown from the sidecar's chunks, still open -> args streamed
    parent: str | None = None
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.CUSTOM and event.name == STREAMED_CALL:
                for shown_event in _streamed(event.value, shown, early, streaming):
                    yield shown_event
                continue
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


def _streamed(chunk: dict, shown: set[str], early: set[str], streaming: dict[str, bool]) -> list[BaseEvent]:
    """The events one forwarded streaming chunk of a backend call stands for."""
    call_id, kind = chunk["toolCallId"], chunk["type"]
    if call_id not in shown:
        shown.add(call_id)
        early.add(call_id)
        streaming[call_id] = False
        start: list[BaseEvent] = [
            ToolCallStartEvent(
                tool_call_id=call_id, tool_call_name=chunk["toolName"], parent_message_id=chunk.get("messageId")
            )
        ]
    elif call_id in streaming:
        start = []
    else:
        return []
    if kind == "tool-call-delta" and chunk.get("argsTextDelta"):
        streaming[call_id] = True
        return [*start, ToolCallArgsEvent(tool_call_id=call_id, delta=chunk["argsTextDelta"])]
    if kind == "tool-call":
        whole = (
            []
            if streaming.pop(call_id)
            else [ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(chunk.get("args") or {}))]
        )
        return [*start, *whole, ToolCallEndEvent(tool_call_id=call_id)]
    return start


async def with_messages_snapshot(
    events: AsyncIterator[BaseEvent], run_input: RunAgentInput
) -> AsyncIterator[BaseEvent]:
    messages: dict[str, Message] = {message.id: message.model_copy(deep=True) for message in run_input.messages}
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
