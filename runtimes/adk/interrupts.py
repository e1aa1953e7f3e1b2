"""ADK's tool confirmation as the protocol's standard approval, both ways, at the route boundary.

ag-ui-adk 0.7.1 reports a tool that needs the user's confirmation (ADK's own
``require_confirmation``) in ADK's terms: a long-running call ``adk_request_confirmation`` on the
wire, a placeholder result for the gated call ("This tool call requires confirmation..."), and a
RUN_FINISHED interrupt with ``reason: "confirmation"`` whose ``toolCallId`` is the confirmation
call, not the call that waits. :func:`standard_interrupts` (a stage) turns that into what every
route sends: ``reason: "tool_call"``, ``toolCallId`` = the gated call the client saw on the wire,
``responseSchema`` = :data:`runtimes.interrupts.APPROVAL_SCHEMA`; the placeholder result is not
put on the wire (the interrupt is what says the call waits, and the call runs or not on the
resume); a finished run says ``outcome: {type: "success"}``, as the other routes do.

The interrupt's id stays the bridge's (the confirmation call's id), so the bridge's own ``resume``
handling reads the answer: ``{"approved": bool}`` becomes ADK's ``ToolConfirmation``, a cancelled
entry a refusal. :func:`with_resumed_calls` fixes one thing on the way in: ag-ui-adk anchors each
answer after the message that issued its confirmation call and hands ADK every run of consecutive
answers as one turn; answers split over several messages reach ADK one turn each, and ADK's
confirmation processor reads only the last turn, so of two approvals answered together only the
second would run. One assistant message carrying every confirmation call the resume answers, last
in the history, puts every answer in one turn.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    EventType,
    FunctionCall,
    Interrupt,
    RunAgentInput,
    RunFinishedSuccessOutcome,
    ToolCall,
)
from ag_ui_adk.event_translator import REQUEST_CONFIRMATION_TOOL_NAME as REQUEST_CONFIRMATION

from runtimes.interrupts import APPROVAL_SCHEMA


def with_resumed_calls(run_input: RunAgentInput) -> RunAgentInput:
    """``run_input`` with one assistant message, last, carrying every confirmation call its resume answers."""
    if not run_input.resume:
        return run_input
    calls = [
        ToolCall(id=entry.interrupt_id, function=FunctionCall(name=REQUEST_CONFIRMATION, arguments="{}"))
        for entry in run_input.resume
    ]
    message = AssistantMessage(id=f"resume-calls-{run_input.run_id}", role="assistant", tool_calls=calls)
    return run_input.model_copy(update={"messages": [*run_input.messages, message]})


async def standard_interrupts(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """The stage: confirmation interrupts as standard approvals, without the placeholder results."""
    confirmations: dict[str, str] = {}  # confirmation call id -> the JSON arguments so far
    gated: set[str] = set()  # the calls waiting for a confirmation in this run
    answered = _gated_before(run_input)  # the calls a confirmation of an earlier run gated
    async with aclosing(events):
        async for event in events:
            kind = event.type
            if kind == EventType.TOOL_CALL_START and event.tool_call_name == REQUEST_CONFIRMATION:
                confirmations[event.tool_call_id] = ""
            elif kind == EventType.TOOL_CALL_ARGS and event.tool_call_id in confirmations:
                confirmations[event.tool_call_id] += event.delta
                gated.update(filter(None, [_gated_call(confirmations[event.tool_call_id]).get("id")]))
            elif kind == EventType.TOOL_CALL_RESULT and event.tool_call_id in gated:
                continue
            elif kind == EventType.MESSAGES_SNAPSHOT and (gated or answered):
                event = event.model_copy(update={"messages": _without_placeholders(event.messages, gated, answered)})
            elif kind == EventType.RUN_FINISHED:
                event = _standard_finish(event)
            yield event


def _gated_before(run_input: RunAgentInput) -> set[str]:
    """The calls gated by the confirmation calls the client's history holds."""
    calls = [call for message in run_input.messages for call in getattr(message, "tool_calls", None) or []]
    confirmations = [call.function.arguments for call in calls if call.function.name == REQUEST_CONFIRMATION]
    return {call_id for call_id in (_gated_call(arguments).get("id") for arguments in confirmations) if call_id}


def _without_placeholders(messages: list[Any], waiting: set[str], answered: set[str]) -> list[Any]:
    """A snapshot's history without the placeholder results: a call still waiting has no result, an
    answered one only its last (the one it got when it ran, or was refused, on the resume)."""
    last = {m.tool_call_id: index for index, m in enumerate(messages) if m.role == "tool"}

    def kept(index: int, message: Any) -> bool:
        if message.role != "tool":
            return True
        call_id = message.tool_call_id
        return call_id not in waiting and (call_id not in answered or last[call_id] == index)

    return [message for index, message in enumerate(messages) if kept(index, message)]


def _standard_finish(event: Any) -> Any:
    interrupts = getattr(event.outcome, "interrupts", None)
    if not interrupts:
        return event.model_copy(update={"outcome": RunFinishedSuccessOutcome()})
    outcome = event.outcome.model_copy(update={"interrupts": [_approval(i) for i in interrupts]})
    return event.model_copy(update={"outcome": outcome})


def _approval(interrupt: Interrupt) -> Interrupt:
    """A ``confirmation`` interrupt as the standard approval of the call it gates."""
    original = ((interrupt.metadata or {}).get("adk") or {}).get("originalFunctionCall") or {}
    if interrupt.reason != "confirmation" or not original.get("id"):
        return interrupt
    name = original.get("name") or "a tool"
    return interrupt.model_copy(
        update={
            "reason": "tool_call",
            "tool_call_id": original["id"],
            "message": f"Approve call to {name}?",
            "response_schema": APPROVAL_SCHEMA,
            "metadata": {"tool_name": name, "tool_input": original.get("args") or {}},
        }
    )


def _gated_call(arguments: str) -> dict[str, Any]:
    """The ``originalFunctionCall`` of a confirmation call's arguments, once they are complete JSON."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return {}
    original = parsed.get("originalFunctionCall") if isinstance(parsed, dict) else None
    return original if isinstance(original, dict) else {}
