"""The Google ADK dialect of the subagent emitter (a thin layer on ``emitters.core``).

Why it exists: ag-ui-adk 0.7.1 shows a delegation to an agent used as a tool (``AgentTool``) as
one parent tool call and its result; ``AgentTool`` runs the specialist in a nested ``Runner`` whose
events never reach the bridge, so the specialist's own text and tool calls never reach the client.
ADK offers one seam that sees both sides: a runner *plugin*. ``AgentTool`` hands the parent
runner's plugins to the nested runner (``include_plugins=True``, its default), so one
:class:`DelegationPlugin` on the app sees

* the parent's delegation call, with its id (``before_tool_callback``: ``tool_context.function_call_id``),
  where it starts the subagent in the core and publishes the delegation in a ContextVar;
* every event of the specialist's nested run, live (``on_event_callback``, called in the
  delegation's own task, so the ContextVar says which delegation it belongs to), mapped onto the
  shared translator (``emitters.delegation``), which puts the specialist's text and tool calls on
  the wire, attributed;
* the delegation's end (``after_tool_callback`` / ``on_tool_error_callback``): SUBAGENT_FINISHED
  with the specialist's answer, or SUBAGENT_ERROR.

ADK runs each tool call in its own task with a copy of the context, so parallel delegations never
mix; the parent's own events (in the runner's task) never see a delegation.

One ordering rule needs a stage: ag-ui-adk queues the parent's TOOL_CALL_START/ARGS/END in a
background task and ADK goes on to run the tool at once, so SUBAGENT_STARTED (put on the wire out
of band) could overtake the parent call's own ARGS and END still in the bridge's queue.
:func:`parent_calls_on_wire` (the runtime's outermost stage) notes each TOOL_CALL_END once it is
on the wire, and the plugin starts a delegation only after its parent call's END.

A specialist's approval (``adk_request_confirmation``) cannot reach the parent: ``AgentTool``
discards the nested session, so the paused call can never be resumed (google-adk 2.13 says so
itself and answers the parent with an error text). The subagent then ends with SUBAGENT_ERROR
``SUBAGENT_APPROVAL_UNSUPPORTED``.

When to delete it: the day ag-ui-adk emits SUBAGENT_* itself. The core's native latch then stands
this dialect down on its own, and ``tests/test_native_probe.py`` fails so the team removes this
module and the plugin on purpose.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import BaseEvent, EventType, RunAgentInput
from ag_ui_adk.event_translator import REQUEST_CONFIRMATION_TOOL_NAME as REQUEST_CONFIRMATION
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.plugins import BasePlugin
from google.adk.tools import BaseTool, ToolContext

from emitters.core import current_run
from emitters.delegation import Delegation

APPROVAL_NOT_PROPAGATED = "SUBAGENT_APPROVAL_UNSUPPORTED"
"""SUBAGENT_ERROR code when a specialist asks for an approval ``AgentTool`` cannot carry to the parent."""
SPECIALIST_ERROR = "SPECIALIST_ERROR"
"""SUBAGENT_ERROR code of any other failure of the specialist."""
WIRE_WAIT_S = 10.0
"""The longest a delegation waits for its parent call's TOOL_CALL_END before it starts anyway."""

logger = logging.getLogger("agui.emitter.adk")


class _Wire:
    """Which of a run's tool calls have had their TOOL_CALL_END put on the wire."""

    def __init__(self) -> None:
        self._ended: dict[str, asyncio.Event] = {}

    def ended(self, call_id: str) -> None:
        self._ended.setdefault(call_id, asyncio.Event()).set()

    async def wait_ended(self, call_id: str) -> None:
        try:
            async with asyncio.timeout(WIRE_WAIT_S):
                await self._ended.setdefault(call_id, asyncio.Event()).wait()
        except TimeoutError:
            logger.warning("call=%s | the parent call never ended on the wire; starting its subagent anyway", call_id)


_WIRE: contextvars.ContextVar[_Wire | None] = contextvars.ContextVar("agui_adk_wire", default=None)


async def parent_calls_on_wire(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """A stage: note each TOOL_CALL_END once the stream downstream has taken it (it is then on the
    wire, before anything a delegation puts out of band afterwards)."""
    wire = _Wire()
    _WIRE.set(wire)
    async with aclosing(events):
        async for event in events:
            yield event
            if event.type == EventType.TOOL_CALL_END:
                wire.ended(event.tool_call_id)


@dataclass
class _Specialist:
    """One running delegation, as this dialect follows it: the translator, and the tools its
    specialist asked approval for."""

    delegation: Delegation
    approvals_requested: set[str] = field(default_factory=set)

    def forward(self, event: Event) -> None:
        """One event of the specialist's nested run (ADK runs an ``AgentTool`` unary: each event is whole)."""
        if event.partial or event.content is None:
            return
        for part in event.content.parts or []:
            call, response = part.function_call, part.function_response
            if call is not None and call.name == REQUEST_CONFIRMATION:
                original = (call.args or {}).get("originalFunctionCall") or {}
                self.approvals_requested.add(str(original.get("name") or "a tool"))
            elif call is not None and call.name:
                self.delegation.tool_call(call.id, call.name)
                self.delegation.tool_args(json.dumps(call.args or {}), call.id)
                self.delegation.end_tool_call(call.id)
            elif response is not None and response.name != REQUEST_CONFIRMATION:
                self.delegation.tool_result(response.id, result_text(response.response))
            elif part.text and not part.thought:
                self.delegation.text(part.text, source=event.id)


_CURRENT: contextvars.ContextVar[_Specialist | None] = contextvars.ContextVar("agui_adk_delegation", default=None)


class DelegationPlugin(BasePlugin):
    """Brackets every call of a delegation tool with SUBAGENT_STARTED and FINISHED/ERROR, and puts
    the specialist's nested run on the wire in between.

    Only the wire: what a failure then means for the parent is the runtime's policy, in a plugin
    registered after this one. ``delegations`` maps each delegation tool to the description the
    client reads in SUBAGENT_STARTED; ``failure_code`` names a failure (the runtime's model failures).
    """

    def __init__(
        self,
        delegations: Mapping[str, str | None],
        *,
        failure_code: Callable[[BaseException], str | None] = lambda exc: None,
    ) -> None:
        super().__init__(name="agui_subagent_emitter")
        self._delegations = dict(delegations)
        self._failure_code = failure_code

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        run = current_run()
        call_id = tool_context.function_call_id
        if run is not None and not run.native and tool.name in self._delegations and call_id:
            wire = _WIRE.get()
            if wire is not None:
                await wire.wait_ended(call_id)
            delegation = Delegation.of(run, call_id, tool.name, self._delegations[tool.name])
            _CURRENT.set(_Specialist(delegation))
        return None

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Event) -> Event | None:
        specialist = _CURRENT.get()
        if specialist is not None:
            specialist.forward(event)
        return None

    async def after_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        specialist = self._ending(tool)
        if specialist is None:
            return None
        if specialist.approvals_requested:
            tools = ", ".join(sorted(specialist.approvals_requested))
            specialist.delegation.fail(
                f"{tool.name} asked for approval to run {tools}, and ADK's AgentTool cannot carry an approval "
                "out of the agent it wraps; nothing was run.",
                APPROVAL_NOT_PROPAGATED,
            )
        else:
            specialist.delegation.finish(result=result_text(result))
        return None

    async def on_tool_error_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, error: BaseException
    ) -> dict[str, Any] | None:
        specialist = self._ending(tool)
        if specialist is not None:
            message = f"{tool.name} could not finish: {str(error) or type(error).__name__}"
            specialist.delegation.fail(message, self._failure_code(error) or SPECIALIST_ERROR)
        return None

    def _ending(self, tool: BaseTool) -> _Specialist | None:
        """The delegation this task ran, if ``tool`` is its delegation tool (it ends now)."""
        specialist = _CURRENT.get()
        if specialist is None or tool.name not in self._delegations:
            return None
        _CURRENT.set(None)
        return specialist


def result_text(result: object) -> str:
    """A tool result as text, as ag-ui-adk serializes the parent's (a string stays as it is)."""
    return result if isinstance(result, str) else json.dumps(result, default=str)
