"""The AWS Strands dialect of the subagent emitter (a thin layer on ``emitters.core``).

Why it exists: ag-ui-strands 0.4.1 shows a delegation to an agent used as a tool as the parent's
tool call plus, at best, the specialist's tool calls unattributed; the specialist's text is
dropped and nothing says a subagent ran. Strands itself reports the specialist's whole stream to
the parent as ``tool_stream_event`` payloads carrying the parent ``toolUseId``, and lets one
per-tool seam see them live. This module turns that dialect into core seam calls:

* :func:`delegation_behavior` is the ``ToolBehavior`` of a delegation tool. Its
  ``tool_stream_event_handler`` yields nothing in-band (registering it also switches off the
  bridge's own lossy inner forwarding); it starts the delegation on the specialist's first event
  and maps the specialist's text and tool calls onto the shared translator
  (``emitters.delegation``), which puts them on the wire live, attributed.
* :class:`SpecialistOutcomeHook` (a Strands hook on the parent agent) sees the delegation's tool
  result before the bridge emits it and closes the subagent: SUBAGENT_FINISHED with the
  specialist's answer, or SUBAGENT_ERROR when the specialist failed.
* :func:`interrupt_owner` tells the core which delegation raised an interrupt: Strands namespaces
  a specialist's interrupts ``v1:agent_as_tool:<parentToolUseId>:...`` on the parent.

The handler (a bridge step) and the hook (a Strands tool task) find the delegation in the run's
own book (``run.delegations``), so nothing outlives the run.

When to delete it: the day ag-ui-strands emits SUBAGENT_* itself. The core's native latch then
stands this dialect down on its own, and ``tests/test_native_probe.py`` fails so the team removes
this module, the handler and the hook on purpose.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import unquote

from ag_ui.core import BaseEvent, Interrupt
from ag_ui_strands import ToolBehavior, ToolStreamEventContext
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry

from emitters.core import current_run
from emitters.delegation import Delegation

AGENT_AS_TOOL_PREFIX = "v1:agent_as_tool:"
"""How Strands namespaces a specialist's interrupt id on the parent (``_agent_as_tool.py``)."""
SPECIALIST_ERROR = "SPECIALIST_ERROR"


def feed(delegation: Delegation, data: Any) -> None:
    """Translate one specialist stream event (a Strands ``stream_async`` dict)."""
    if not isinstance(data, dict):
        return
    chunk = data.get("event")
    if isinstance(chunk, dict):
        _model_chunk(delegation, chunk)
        return
    message = data.get("message")
    if isinstance(message, dict) and message.get("role") == "user":
        for block in message.get("content") or []:
            if isinstance(block, dict) and isinstance(block.get("toolResult"), dict):
                result = block["toolResult"]
                delegation.tool_result(result.get("toolUseId"), _result_text(result))


def _model_chunk(delegation: Delegation, chunk: dict) -> None:
    """One Bedrock-shaped model chunk: a content block starts, streams a delta, or stops."""
    tool_use = (chunk.get("contentBlockStart") or {}).get("start", {}).get("toolUse")
    delta = (chunk.get("contentBlockDelta") or {}).get("delta") or {}
    if tool_use:
        delegation.close()
        delegation.tool_call(tool_use.get("toolUseId"), tool_use.get("name", ""))
    elif delta.get("text"):
        delegation.end_tool_calls()
        delegation.text(delta["text"])
    elif (delta.get("toolUse") or {}).get("input"):
        delegation.tool_args(delta["toolUse"]["input"])
    elif "contentBlockStop" in chunk or "messageStop" in chunk:
        delegation.close()


def delegation_behavior(description: str | None = None) -> ToolBehavior:
    """The ``ToolBehavior`` of a delegation tool: its specialist's stream becomes a subagent."""

    async def on_specialist_event(ctx: ToolStreamEventContext) -> AsyncIterator[BaseEvent]:
        run = current_run()
        if run is not None and not run.native:
            feed(Delegation.of(run, ctx.tool_use_id, ctx.tool_name, description), ctx.stream_data)
        return
        yield  # an async generator (the bridge requires one) that puts nothing in-band

    return ToolBehavior(tool_stream_event_handler=on_specialist_event)


class SpecialistOutcomeHook(HookProvider):
    """Closes a delegation's subagent from its tool result, before the bridge emits that result.

    Strands reports every event of the tool's stream to the bridge before the tool's
    ``AfterToolCallEvent`` fires, so the subagent closes after all of its content. A delegation
    that paused for an approval fires no such event; the core closes it as ``suspended``.
    Stateless: one instance serves every thread. ``failure_code`` may name why a specialist
    failed when its error result does not (the runtime's record of a failed model call); the
    SUBAGENT_ERROR code is ``SPECIALIST_ERROR`` otherwise.
    """

    def __init__(
        self, delegation_tools: frozenset[str], *, failure_code: Callable[[], str | None] = lambda: None
    ) -> None:
        self._tools = delegation_tools
        self._failure_code = failure_code

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self._after_tool_call)

    def _after_tool_call(self, event: AfterToolCallEvent) -> None:
        run = current_run()
        if run is None or event.tool_use.get("name") not in self._tools:
            return
        delegation = run.delegations.get(event.tool_use["toolUseId"])
        if delegation is None:
            return
        text = _result_text(event.result)
        if event.result.get("status") == "error" or event.exception is not None:
            delegation.fail(text or str(event.exception), code=self._failure_code() or SPECIALIST_ERROR)
        else:
            delegation.finish(result=text)


def interrupt_owner(interrupt: Interrupt) -> str | None:
    """The delegation tool call that raised ``interrupt``, from Strands' agent-as-tool id prefix."""
    if not interrupt.id.startswith(AGENT_AS_TOOL_PREFIX):
        return None
    quoted, _, _ = interrupt.id[len(AGENT_AS_TOOL_PREFIX) :].partition(":")
    return unquote(quoted) or None


def _result_text(result: dict) -> str:
    parts = []
    for block in result.get("content") or []:
        if isinstance(block, dict) and "text" in block:
            parts.append(str(block["text"]))
        elif isinstance(block, dict) and "json" in block:
            parts.append(json.dumps(block["json"]))
    return "".join(parts).strip()
