"""The Mastra dialect of the subagent emitter (a thin layer on emitters.core).

Why it exists: a Mastra tool that delegates to another agent writes the specialist's stream to
its tool writer, and the parent's stream carries each chunk as a ``tool-output`` chunk with the
delegating call's id; @ag-ui/mastra 1.1.2 drops those chunks (``case "tool-output": break``). The
route's sidecar forwards them instead, as CUSTOM events named :data:`FORWARDED` whose value is
``{toolCallId, toolName, args, chunk}``, and this stage turns them into the specialist's
attributed text and tool calls through the shared translator (``emitters.delegation``), live,
removing them from the wire. The forwarded events are the sidecar's private channel: they are
removed even when the emitter stands down.

The specialist's chunks it maps (Mastra's chunk types): ``text-delta``, the streamed tool call
(``tool-call-input-streaming-start``, ``tool-call-delta``, ``tool-call``), ``tool-result`` and
``tool-error``. The delegation ends with the parent call's TOOL_CALL_RESULT (success), with the
run's RUN_ERROR (SUBAGENT_ERROR with the run's code: the sidecar fails the run when a specialist's
model fails), or open at an interrupt (the core closes it as suspended).

When to delete it: the day @ag-ui/mastra emits SUBAGENT_* itself; the core's native latch then
stands it down on its own, and ``tests/test_native_probe.py`` fails so the team removes it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType, RunAgentInput

from emitters.core import SubagentRun, current_run
from emitters.delegation import Delegation

FORWARDED = "mastra:tool-output"
"""The CUSTOM event name the sidecar forwards a specialist's chunks under (``runtimes/mastra/sidecar/server.mjs``)."""


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


class _Specialist:
    """One delegation of this run: its translator and which of its calls streamed their arguments."""

    def __init__(self, delegation: Delegation) -> None:
        self.delegation = delegation
        self.streamed: set[str] = set()

    def forward(self, chunk: dict) -> None:
        kind, payload = chunk.get("type"), chunk.get("payload") or {}
        call_id = payload.get("toolCallId")
        delegation = self.delegation
        if kind == "text-delta":
            delegation.text(payload.get("text") or "", source=payload.get("id"))
        elif kind == "tool-call-input-streaming-start" and call_id:
            delegation.tool_call(call_id, payload.get("toolName") or "tool")
        elif kind == "tool-call-delta" and call_id:
            self.streamed.add(call_id)
            delegation.tool_args(payload.get("argsTextDelta") or "", call_id)
        elif kind == "tool-call" and call_id:
            delegation.tool_call(call_id, payload.get("toolName") or "tool")
            if call_id not in self.streamed:
                delegation.tool_args(json.dumps(payload.get("args") or {}), call_id)
            delegation.end_tool_call(call_id)
        elif kind == "tool-result" and call_id:
            delegation.tool_result(call_id, _text(payload.get("result")))
        elif kind == "tool-error" and call_id:
            delegation.tool_result(call_id, f"Error: {_text(payload.get('error'))}")


async def translate_delegations(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """The stage: forwarded specialist chunks become attributed events; the rest passes through."""
    specialists: dict[str, _Specialist] = {}
    async with aclosing(events):
        async for event in events:
            run = current_run()
            live = run is not None and not run.native
            if event.type == EventType.CUSTOM and event.name == FORWARDED:
                if live:
                    _specialist(run, specialists, event.value).forward(event.value.get("chunk") or {})
                continue
            if live and event.type == EventType.TOOL_CALL_RESULT and event.tool_call_id in specialists:
                specialists.pop(event.tool_call_id).delegation.finish(result=event.content)
            elif live and event.type == EventType.RUN_FINISHED:
                for specialist in specialists.values():
                    specialist.delegation.close()  # the core ends it as suspended
            elif live and event.type == EventType.RUN_ERROR:
                for specialist in specialists.values():
                    specialist.delegation.fail(event.message, code=event.code)
                specialists.clear()
            yield event


def _specialist(run: SubagentRun, specialists: dict[str, _Specialist], value: dict) -> _Specialist:
    parent = value["toolCallId"]
    if parent not in specialists:
        specialists[parent] = _Specialist(Delegation.of(run, parent, value.get("toolName") or "specialist"))
    return specialists[parent]
