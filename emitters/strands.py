"""The AWS Strands dialect of the subagent emitter (a thin layer on ``emitters.core``).

Why it exists: ag-ui-strands 0.4.1 shows a delegation to an agent used as a tool as the parent's
tool call plus, at best, the specialist's tool calls unattributed; the specialist's text is
dropped and nothing says a subagent ran. Strands itself reports the specialist's whole stream to
the parent as ``tool_stream_event`` payloads carrying the parent ``toolUseId``, and lets one
per-tool seam see them live. This module turns that dialect into core seam calls:

* :func:`delegation_behavior` is the ``ToolBehavior`` of a delegation tool. Its
  ``tool_stream_event_handler`` yields nothing in-band (registering it also switches off the
  bridge's own lossy inner forwarding); it starts the subagent in the core on the specialist's
  first event and injects the specialist's text and tool calls, attributed, into the run's sink.
* :class:`SpecialistOutcomeHook` (a Strands hook on the parent agent) sees the delegation's tool
  result before the bridge emits it and closes the subagent: SUBAGENT_FINISHED with the
  specialist's answer, or SUBAGENT_ERROR when the specialist failed.
* :func:`interrupt_owner` tells the core which delegation raised an interrupt: Strands namespaces
  a specialist's interrupts ``v1:agent_as_tool:<parentToolUseId>:...`` on the parent.

Per-delegation bookkeeping lives in a per-run :class:`contextvars.ContextVar` that
:func:`begin_run` sets before the core copies the run's context, so the handler (bridge step) and
the hook (Strands tool task) share one book per run and nothing outlives the run.

When to delete it: the day ag-ui-strands emits SUBAGENT_* itself. The core's native latch then
stands this dialect down on its own, and ``tests/test_native_probe.py`` fails so the team removes
this module, the handler and the hook on purpose.
"""

from __future__ import annotations

import contextvars
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui_strands import ToolBehavior, ToolStreamEventContext
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry

from emitters.core import SubagentRun, current_run

AGENT_AS_TOOL_PREFIX = "v1:agent_as_tool:"
"""How Strands namespaces a specialist's interrupt id on the parent (``_agent_as_tool.py``)."""
INNER_ID_SEPARATOR = "::"
"""Specialist tool call ids on the wire are ``<parent tool call id>::<inner id>``, like the bridge's."""
SPECIALIST_ERROR = "SPECIALIST_ERROR"


@dataclass
class _Delegation:
    """One delegation tool call in this run: its subagent and what of its stream is open."""

    parent_id: str
    subagent_id: str
    text_id: str | None = None
    tool_call_id: str | None = None

    def feed(self, run: SubagentRun, data: Any) -> None:
        """Translate one specialist stream event (a Strands ``stream_async`` dict)."""
        if not isinstance(data, dict):
            return
        chunk = data.get("event")
        if isinstance(chunk, dict):
            self._model_chunk(run, chunk)
            return
        message = data.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            for block in message.get("content") or []:
                if isinstance(block, dict) and isinstance(block.get("toolResult"), dict):
                    self._tool_result(run, block["toolResult"])

    def close(self, run: SubagentRun) -> None:
        """End whatever the specialist left open (a text message or a tool call)."""
        self._end_tool_call(run)
        self._end_text(run)

    def _model_chunk(self, run: SubagentRun, chunk: dict) -> None:
        tool_use = (chunk.get("contentBlockStart") or {}).get("start", {}).get("toolUse")
        delta = (chunk.get("contentBlockDelta") or {}).get("delta") or {}
        if tool_use:
            self.close(run)
            self.tool_call_id = self._wire_id(tool_use.get("toolUseId"))
            self._emit(run, ToolCallStartEvent(tool_call_id=self.tool_call_id, tool_call_name=tool_use.get("name", "")))
        elif delta.get("text"):
            self._end_tool_call(run)
            if self.text_id is None:
                self.text_id = f"{self.subagent_id}-msg-{uuid.uuid4().hex[:12]}"
                self._emit(run, TextMessageStartEvent(message_id=self.text_id, role="assistant"))
            self._emit(run, TextMessageContentEvent(message_id=self.text_id, delta=delta["text"]))
        elif (delta.get("toolUse") or {}).get("input") and self.tool_call_id is not None:
            self._emit(run, ToolCallArgsEvent(tool_call_id=self.tool_call_id, delta=delta["toolUse"]["input"]))
        elif "contentBlockStop" in chunk or "messageStop" in chunk:
            self.close(run)

    def _tool_result(self, run: SubagentRun, result: dict) -> None:
        self._emit(
            run,
            ToolCallResultEvent(
                message_id=f"{self.subagent_id}-result-{uuid.uuid4().hex[:12]}",
                tool_call_id=self._wire_id(result.get("toolUseId")),
                content=_result_text(result),
            ),
        )

    def _end_tool_call(self, run: SubagentRun) -> None:
        if self.tool_call_id is not None:
            self._emit(run, ToolCallEndEvent(tool_call_id=self.tool_call_id))
            self.tool_call_id = None

    def _end_text(self, run: SubagentRun) -> None:
        if self.text_id is not None:
            self._emit(run, TextMessageEndEvent(message_id=self.text_id))
            self.text_id = None

    def _wire_id(self, inner_id: object) -> str:
        return f"{self.parent_id}{INNER_ID_SEPARATOR}{inner_id or uuid.uuid4().hex}"

    def _emit(self, run: SubagentRun, event: BaseEvent) -> None:
        run.emit(event, self.subagent_id)


_DELEGATIONS: contextvars.ContextVar[dict[str, _Delegation] | None] = contextvars.ContextVar(
    "agui_strands_delegations", default=None
)
"""This run's delegations, by parent tool call id."""


def begin_run() -> None:
    """Give the run about to start its own delegation book.

    Call it in the bridge's ``run`` before ``emit_subagents`` copies the context: every bridge
    step and every Strands tool task of the run then sees this one book, and no other run does.
    """
    _DELEGATIONS.set({})


def _delegations() -> dict[str, _Delegation]:
    delegations = _DELEGATIONS.get()
    if delegations is None:  # begin_run() was not called: a book for this context only (hooks won't see it)
        delegations = {}
        _DELEGATIONS.set(delegations)
    return delegations


def delegation_behavior(description: str | None = None) -> ToolBehavior:
    """The ``ToolBehavior`` of a delegation tool: its specialist's stream becomes a subagent."""

    async def on_specialist_event(ctx: ToolStreamEventContext) -> AsyncIterator[BaseEvent]:
        run = current_run()
        if run is not None and not run.native:
            delegations = _delegations()
            delegation = delegations.get(ctx.tool_use_id)
            if delegation is None:
                subagent_id = run.start(ctx.tool_use_id, ctx.tool_name, description)
                delegation = delegations[ctx.tool_use_id] = _Delegation(ctx.tool_use_id, subagent_id)
            delegation.feed(run, ctx.stream_data)
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
        parent_id = event.tool_use["toolUseId"]
        delegation = _delegations().pop(parent_id, None)
        if delegation is not None:
            delegation.close(run)
        subagent_id = run.open_subagent_for(parent_id)
        if subagent_id is None:
            return
        text = _result_text(event.result)
        if event.result.get("status") == "error" or event.exception is not None:
            run.fail(subagent_id, text or str(event.exception), code=self._failure_code() or SPECIALIST_ERROR)
        else:
            run.finish(subagent_id, result=text)


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
