"""Model failures on the ADK route as RUN_ERROR codes a client can act on.

ag-ui-adk 0.7.1 runs the ADK runner in a background task and turns any exception there into
``RUN_ERROR`` with the code ``BACKGROUND_EXECUTION_ERROR`` and the provider's raw text; the
exception itself never reaches the pipeline's error boundary. So the route names the failure
where it happens, in the model (:func:`record`), and keeps that name for the run: the stage
:func:`name_model_errors` gives each run its own record, before the bridge starts its background
task (which copies the run's context, so the parent's and the specialists' model calls all record
into it), and puts the recorded code on the bridge's RUN_ERROR. The codes and their meaning are
shared with every runtime (``runtimes.model_errors``).

A model failure anywhere ends the run: ADK raises a failed model call out of the agent, and out
of an ``AgentTool`` into the parent's tool call, which the route lets fail the run
(:class:`SpecialistFailures`).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, EventType, RunAgentInput
from google.adk.plugins import BasePlugin
from google.adk.tools import BaseTool, ToolContext

from runtimes.model_errors import ModelError, describe

_FAILURES: contextvars.ContextVar[list[ModelError] | None] = contextvars.ContextVar(
    "agui_adk_model_failures", default=None
)


def record(exc: BaseException) -> ModelError | None:
    """Name a failed model call and remember it for the run; None when the model is not what failed."""
    named = describe(exc)
    failures = _FAILURES.get()
    if named is not None and failures is not None:
        failures.append(named)
    return named


def failure_code(exc: BaseException) -> str | None:
    """The SUBAGENT_ERROR code of a specialist's failure, when the model is what failed."""
    named = describe(exc)
    return named.code if named is not None else None


async def name_model_errors(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """Give the run its own failure record, then put the recorded model failure's code (and
    message) on the run's RUN_ERROR."""
    _FAILURES.set([])
    async with aclosing(events):
        async for event in events:
            failures = _FAILURES.get()
            if event.type == EventType.RUN_ERROR and failures:
                event = event.model_copy(update={"code": failures[-1].code, "message": str(failures[-1])})
            yield event


class SpecialistFailures(BasePlugin):
    """What a failed delegation means for the parent: a model failure ends the run (ADK raises it on),
    any other failure becomes the delegation's result, saying why, so the parent model can tell the
    user. Registered after the subagent emitter's plugin, which has closed the subagent by then."""

    def __init__(self, delegation_tools: frozenset[str]) -> None:
        super().__init__(name="agui_specialist_failures")
        self._names = delegation_tools

    async def on_tool_error_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> dict[str, Any] | None:
        if tool.name not in self._names or not isinstance(error, Exception) or describe(error) is not None:
            return None
        return {"error": f"{tool.name} could not finish: {str(error) or type(error).__name__}"}
