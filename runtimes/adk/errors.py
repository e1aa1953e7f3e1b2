"""Model failures on the ADK route as RUN_ERROR codes a client can act on.

ag-ui-adk 0.7.1 runs the ADK runner in a background task and turns any exception there into
``RUN_ERROR`` with the code ``BACKGROUND_EXECUTION_ERROR`` and the provider's raw text; the
exception itself never reaches the pipeline's error boundary. So the route names the failure
where it happens, in the model layer (``runtimes.model_calls``), and keeps that name for the run:
the shared stage ``runtimes.model_errors.name_model_errors`` gives each run its own record before
the bridge starts its background task (which copies the run's context, so the parent's and the
specialists' model calls all record into it), and puts the recorded code on the bridge's RUN_ERROR.

A model failure anywhere ends the run: ADK raises a failed model call out of the agent, and out
of an ``AgentTool`` into the parent's tool call, which the route lets fail the run
(:class:`SpecialistFailures`, which also decides what the parent hears of any other failure).
"""

from __future__ import annotations

import contextvars
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.plugins import BasePlugin
from google.adk.tools import BaseTool, ToolContext

from runtimes.model_errors import describe


def failure_code(exc: BaseException) -> str | None:
    """The SUBAGENT_ERROR code of a specialist's failure, when the model is what failed."""
    named = describe(exc)
    return named.code if named is not None else None


_ASKED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("agui_adk_specialist_asked", default=None)
"""The tools the current delegation's specialist asked approval for (set per delegation call: ADK
runs each tool call in its own task with a copied context)."""


class SpecialistFailures(BasePlugin):
    """What a failed delegation means for the parent.

    * A model failure ends the run (ADK raises it on).
    * A specialist that asked for an approval gets a result that says so plainly: ``AgentTool``
      discards the nested session, so the call can never be resumed (google-adk 2.13 answers the
      parent with an error text naming the paused call's random id).
    * Any other failure becomes the delegation's result, saying why, so the parent model can tell
      the user.

    Registered after the subagent emitter's plugin, which has closed the subagent by then.
    """

    def __init__(self, delegation_tools: frozenset[str]) -> None:
        super().__init__(name="agui_specialist_failures")
        self._names = delegation_tools

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if tool.name in self._names:
            _ASKED.set(set())
        return None

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Event) -> Event | None:
        asked, requested = _ASKED.get(), event.actions.requested_tool_confirmations
        if asked is not None and requested:
            responses = event.get_function_responses()
            asked.update(response.name or "a tool" for response in responses if response.id in requested)
        return None

    async def after_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        asked = _ASKED.get() if tool.name in self._names else None
        if not asked:
            return None
        return {
            "error": f"{tool.name} could not finish: it asked for approval to run {', '.join(sorted(asked))}, and an "
            "agent used as a tool cannot carry an approval to you. Nothing was run; ask for that action directly."
        }

    async def on_tool_error_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> dict[str, Any] | None:
        if tool.name not in self._names or not isinstance(error, Exception) or describe(error) is not None:
            return None
        return {"error": f"{tool.name} could not finish: {str(error) or type(error).__name__}"}
