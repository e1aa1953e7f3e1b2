"""The route: agent-framework-ag-ui's endpoint, serving our AgentFrameworkAgent subclass.

The subclass only wraps the bridge's ``run()`` stream; the upstream endpoint (request parsing,
approval state, SSE) is used unchanged. Wrapping, innermost first: model failures get a stable
RUN_ERROR code, a successful finish says so, a cancelled approval gets a transcript, the subagent
emitter merges SUBAGENT_* events in, and one summary line per run is logged.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, EventType, RunFinishedSuccessOutcome
from agent_framework import SupportsAgentRun
from agent_framework_ag_ui import AgentFrameworkAgent, add_agent_framework_fastapi_endpoint
from fastapi import FastAPI

from app.config import Settings
from app.mounting import agent_route
from app.runlog import log_run
from emitters.core import NativeLatch, emit_subagents, subagent_events_enabled
from runtimes import script
from runtimes.msaf.agents import build_assistant
from runtimes.msaf.cancel import PendingApprovals, complete_cancelled_approvals
from runtimes.msaf.errors import error_code, name_model_errors

STATE_SCHEMA: dict[str, dict[str, Any]] = {
    "recipe": {"type": "object", "description": "The recipe update_recipe wrote."},
    "document": {"type": "string", "description": "The document write_document is writing."},
}
PREDICT_STATE_CONFIG = {"document": {"tool": script.WRITE_DOCUMENT, "tool_argument": "document"}}
DEFAULT_STATE: dict[str, Any] = {"document": ""}
"""Real defaults: ``state_schema`` alone fills a string key with ``{}``, and the predictive
STATE_DELTA ``replace /document`` is only valid JSON Patch when the key already exists."""


class EmittingAgentFrameworkAgent(AgentFrameworkAgent):
    """``AgentFrameworkAgent`` whose event stream also carries live SUBAGENT_* events."""

    def __init__(self, agent: SupportsAgentRun, *, settings: Settings, runtime_name: str, route: str) -> None:
        super().__init__(
            agent,
            state_schema=STATE_SCHEMA,
            predict_state_config=PREDICT_STATE_CONFIG,
            require_confirmation=False,  # no synthetic confirm_changes tool call: the interrupt outcome is enough
        )
        self._settings = settings
        self._runtime_name = runtime_name
        self._native_latch = NativeLatch(route)
        self._pending_approvals = PendingApprovals()

    async def run(
        self,
        input_data: dict[str, Any],
        *,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
    ) -> AsyncGenerator[BaseEvent, None]:
        thread_id = str(_field(input_data, "thread_id", "threadId") or "")
        run_id = str(_field(input_data, "run_id", "runId") or "")
        forwarded_props = _field(input_data, "forwarded_props", "forwardedProps")
        events = name_model_errors(super().run(input_data, function_invocation_kwargs=function_invocation_kwargs))
        events = with_success_outcome(events)
        events = complete_cancelled_approvals(events, input_data, self._pending_approvals, thread_id=thread_id)
        events = emit_subagents(
            events,
            self._native_latch,
            thread_id=thread_id,
            run_id=run_id,
            enabled=subagent_events_enabled(forwarded_props, self._settings.agui_subagent_events),
            error_code=error_code,
        )
        async for event in log_run(events, runtime=self._runtime_name, thread_id=thread_id, run_id=run_id):
            yield event


async def with_success_outcome(events: AsyncIterator[BaseEvent]) -> AsyncIterator[BaseEvent]:
    """Say ``outcome: {type: "success"}`` on a successful RUN_FINISHED, as the Strands route does.

    The bridge omits it (legacy success, allowed by the protocol); stating it lets one client
    read every route's finish the same way.
    """
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.RUN_FINISHED and event.outcome is None:
                event = event.model_copy(update={"outcome": RunFinishedSuccessOutcome()})
            yield event


def _field(input_data: Mapping[str, Any], snake: str, camel: str) -> Any:
    """The endpoint hands ``run()`` a snake_case dump; direct callers may use wire names."""
    return input_data.get(snake, input_data.get(camel))


class MsafRuntime:
    """Microsoft Agent Framework behind agent-framework-ag-ui, on ``POST /msaf/agent``."""

    name = "msaf"
    title = "Microsoft Agent Framework"
    bridge_package = "agent-framework-ag-ui"

    @property
    def route(self) -> str:
        return agent_route(self.name)

    def mount(self, app: FastAPI, settings: Settings) -> None:
        runner = EmittingAgentFrameworkAgent(
            build_assistant(settings), settings=settings, runtime_name=self.name, route=self.route
        )
        add_agent_framework_fastapi_endpoint(
            app,
            runner,
            self.route,
            default_state=DEFAULT_STATE,
            single_user=True,  # one principal per registration; approval state is per process
            keepalive_seconds=None,  # app.keepalive already pulses every runtime route
        )
