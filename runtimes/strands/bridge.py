"""The Strands route's bridge: ag-ui-strands' ``StrandsAgent`` plus what it lacks.

``EmittingStrandsAgent`` keeps the upstream endpoint and event translation untouched and wraps its
``run``: every STATE_SNAPSHOT is made complete (``state.complete_snapshots``), a failed model
call gets a RUN_ERROR code that names it (``errors``), the subagent emitter core merges the
delegation dialect's events in live (``emitters.strands``), and the per-thread agent cache is
bounded (``cache.ThreadAgentCache``). Pulling the whole run in the core's one
context is also what silences OpenTelemetry's "Failed to detach context" errors, which the
endpoint's one-task-per-event pulling otherwise logs on every run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput
from ag_ui_strands import PredictStateMapping, StrandsAgent, StrandsAgentConfig, ToolBehavior
from ag_ui_strands.config import ToolCallContext, ToolResultContext

from app.config import Settings
from app.runlog import log_run
from emitters import strands as dialect
from emitters.core import NativeLatch, emit_subagents, subagent_events_enabled
from runtimes.script import DELETE_FILE, RESEARCH_SPECIALIST, UPDATE_RECIPE, WRITE_DOCUMENT
from runtimes.strands import errors
from runtimes.strands.agents import APPROVAL, SUBAGENT_DESCRIPTION, parent_template
from runtimes.strands.cache import ThreadAgentCache
from runtimes.strands.model import models_for
from runtimes.strands.state import complete_snapshots

# The bridge's own per-thread bookkeeping, forgotten with an evicted thread's agent.
_PER_THREAD_BOOKKEEPING = (
    "_proxy_tool_names_by_thread",
    "_pending_interrupts_by_thread",
    "_last_resume_fingerprint",
    "_frontend_wait_bridge_by_thread",
)


class EmittingStrandsAgent(StrandsAgent):
    """``StrandsAgent`` with complete state snapshots, live SUBAGENT_* events and a bounded cache."""

    def __init__(self, settings: Settings, route: str) -> None:
        parent_model, specialist_model = models_for(settings)
        self._thread_cache = ThreadAgentCache(
            settings.agui_thread_cache_size, pinned=self._is_running, held=self._is_paused, on_evict=self._forget_thread
        )
        super().__init__(
            parent_template(parent_model, specialist_model),
            name="strands_demo_assistant",
            description="The demo assistant on AWS Strands Agents.",
            config=StrandsAgentConfig(tool_behaviors=tool_behaviors()),
            hooks=[
                dialect.SpecialistOutcomeHook(
                    frozenset({RESEARCH_SPECIALIST}), failure_code=errors.recorded_failure_code
                )
            ],
            agents_by_thread=self._thread_cache,
        )
        self._native_latch = NativeLatch(route)
        self._subagent_events = settings.agui_subagent_events

    async def run(self, input_data: RunAgentInput, **kwargs: Any) -> AsyncIterator[BaseEvent]:
        dialect.begin_run()
        errors.begin_run()
        events = emit_subagents(
            errors.name_model_errors(complete_snapshots(super().run(input_data, **kwargs))),
            self._native_latch,
            thread_id=input_data.thread_id,
            run_id=input_data.run_id,
            enabled=subagent_events_enabled(input_data.forwarded_props, self._subagent_events),
            interrupt_owner=dialect.interrupt_owner,
        )
        logged = log_run(events, runtime="strands", thread_id=input_data.thread_id, run_id=input_data.run_id)
        try:
            async with aclosing(events), aclosing(logged):  # a client that goes away frees the thread at once
                async for event in logged:
                    yield event
        finally:
            self._thread_cache.trim()  # the run's thread is unpinned now; under load, threads pile up pinned

    def _is_running(self, thread_id: str, agent: Any) -> bool:
        """A thread with a run in flight must keep its agent."""
        return thread_id in self._active_runs_by_thread

    def _is_paused(self, thread_id: str, agent: Any) -> bool:
        """A thread with an approval pending keeps its agent as long as an idle thread can go instead."""
        interrupt_state = getattr(agent, "_interrupt_state", None)
        return bool(getattr(interrupt_state, "activated", False))

    def _forget_thread(self, thread_id: str) -> None:
        for name in _PER_THREAD_BOOKKEEPING:
            getattr(self, name, {}).pop(thread_id, None)


def tool_behaviors() -> dict[str, ToolBehavior]:
    """What each tool means on the AG-UI wire: approval, shared state, predictive state, delegation."""
    return {
        DELETE_FILE: APPROVAL,
        UPDATE_RECIPE: ToolBehavior(state_from_result=_recipe_state),
        WRITE_DOCUMENT: ToolBehavior(
            predict_state=[PredictStateMapping(state_key="document", tool=WRITE_DOCUMENT, tool_argument="document")],
            state_from_result=_document_state,
        ),
        RESEARCH_SPECIALIST: dialect.delegation_behavior(SUBAGENT_DESCRIPTION),
    }


def _recipe_state(ctx: ToolResultContext) -> dict | None:
    return {"recipe": ctx.result_data} if isinstance(ctx.result_data, dict) else None


def _document_state(ctx: ToolResultContext) -> dict | None:
    document = _arguments(ctx).get("document")
    return {"document": document} if isinstance(document, str) else None


def _arguments(ctx: ToolCallContext) -> dict:
    if isinstance(ctx.tool_input, dict):
        return ctx.tool_input
    try:
        parsed = json.loads(ctx.args_str or "{}")
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
