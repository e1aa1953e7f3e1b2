"""The Strands route's bridge: ag-ui-strands' ``StrandsAgent``, and the stages it needs.

The upstream bridge translates the Strands agent loop into AG-UI and is used unchanged; what it
lacks is added as the runtime's own stages (``runtimes.base.Stage``), which the app's pipeline
applies to its stream:

* ``complete_snapshots`` (``state``): every STATE_SNAPSHOT carries the whole state, not only the
  keys one tool hook returned;
* ``name_model_errors`` (``runtimes.model_errors``; ``errors`` says why): a failed model call's
  RUN_ERROR gets a ``MODEL_*`` code instead of the bridge's ``STRANDS_FORCE_STOP``;
* ``_trim_after``: the bounded per-thread agent cache (``cache``) comes back to its size when a run
  ends (under load every thread is pinned by its run while it runs);
* ``close_abandoned_specialists`` (``agents``): a cancelled run's specialist streams are closed,
  not left to the garbage collector;
* with shared state (``AGUI_STATE_URL``), ``EngineSessions.stage`` (``sessions``), innermost: each
  thread is a Strands session in the engine, read before the run and written as it goes, and this
  process keeps nothing of a thread between its runs.

The delegation dialect (``emitters.strands``) is wired in as the delegation tool's behaviour and
a hook on the parent agent; the emitter core finds the run on its own.

Private state of ag-ui-strands 0.4.1 read here, because the bridge offers no other way to know
it: ``_active_runs_by_thread`` (a run is in flight), ``_pending_interrupts_by_thread`` (an approval
waits), and the per-thread bookkeeping in ``_PER_THREAD_BOOKKEEPING`` (forgotten with an evicted
thread). Construction fails at once if any of them is gone (``_require_private``), so an upgrade
that renames them breaks the boot and the suite, loudly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput
from ag_ui_strands import PredictStateMapping, StrandsAgent, StrandsAgentConfig, ToolBehavior
from ag_ui_strands.config import ToolCallContext, ToolResultContext

from emitters import strands as dialect
from runtimes import model_errors
from runtimes.base import TERMINAL, HeldThreads, Stage
from runtimes.config import RuntimeSettings
from runtimes.model_errors import ModelError, describe
from runtimes.script import DELETE_FILE, RESEARCH_SPECIALIST, UPDATE_RECIPE, WRITE_DOCUMENT
from runtimes.strands.agents import APPROVAL, SUBAGENT_DESCRIPTION, close_abandoned_specialists, parent_template
from runtimes.strands.cache import ThreadAgentCache
from runtimes.strands.model import models_for
from runtimes.strands.otel import silence_detached_context_noise
from runtimes.strands.sessions import EngineSessions
from runtimes.strands.state import complete_snapshots
from store import Store

_PER_THREAD_BOOKKEEPING = (
    "_proxy_tool_names_by_thread",
    "_pending_interrupts_by_thread",
    "_last_resume_fingerprint",
    "_frontend_wait_bridge_by_thread",
)
"""The bridge's own per-thread dicts, forgotten with an evicted thread's agent."""
_ACTIVE_RUNS = "_active_runs_by_thread"


class StrandsBridge:
    """``POST /strands/agent``: one ``StrandsAgent`` for the app, its agents cached per thread (with
    shared state: kept in the engine, and here only while a run of the thread goes)."""

    interrupt_owner = staticmethod(dialect.interrupt_owner)

    def __init__(self, settings: RuntimeSettings, store: Store, route: str) -> None:
        silence_detached_context_noise()
        parent_model, specialist_model = models_for(settings)
        self._thread_cache = ThreadAgentCache(
            settings.agui_thread_cache_size, pinned=self._is_running_or_paused, on_evict=self._forget_bookkeeping
        )
        self._sessions = EngineSessions(store.url, route, self._drop) if store.shared and store.url else None
        self._agent = StrandsAgent(
            parent_template(parent_model, specialist_model),
            name="strands_demo_assistant",
            description="The demo assistant on AWS Strands Agents.",
            config=StrandsAgentConfig(
                tool_behaviors=tool_behaviors(),
                session_manager_provider=self._sessions.manager if self._sessions is not None else None,
            ),
            hooks=[
                dialect.SpecialistOutcomeHook(
                    frozenset({RESEARCH_SPECIALIST}), failure_code=lambda: getattr(model_errors.failure(), "code", None)
                )
            ],
            agents_by_thread=self._thread_cache,
        )
        _require_private(self._agent, (_ACTIVE_RUNS, *_PER_THREAD_BOOKKEEPING))
        self._forget_when_done: set[str] = set()
        self.stages: tuple[Stage, ...] = (
            *((self._sessions.stage,) if self._sessions is not None else ()),
            close_abandoned_specialists,
            complete_snapshots,
            model_errors.name_model_errors,
            self._trim_after,
        )

    def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        return self._agent.run(run_input)

    def describe_error(self, exc: BaseException) -> ModelError | None:
        return describe(exc)

    def held_threads(self) -> HeldThreads:
        return HeldThreads(
            running=frozenset(getattr(self._agent, _ACTIVE_RUNS)),
            paused=frozenset(self._agent._pending_interrupts_by_thread),
            cached=frozenset(self._thread_cache),
        )

    async def _trim_after(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """Pass the run through; when it ends, drop its thread if the ledger asked to while it ran,
        or if the run was cut short (its agent may hold half a turn, or an approval no client was
        told of: the next run starts from the request's messages), and bring the thread cache back
        to its size."""
        ended = False
        try:
            async with aclosing(events):
                async for event in events:
                    ended = event.type in TERMINAL
                    yield event
        finally:
            if not ended:
                await self.forget(run_input.thread_id)
            if run_input.thread_id in self._forget_when_done:
                self._forget_when_done.discard(run_input.thread_id)
                self._drop(run_input.thread_id)
            self._thread_cache.trim()

    async def forget(self, thread_id: str) -> None:
        """Drop the thread's agent, and with it its paused approval (the app's ledger asks): now,
        or when its run ends if one is in flight. With shared state, its session in the engine
        goes now, whichever replica served it."""
        if self._sessions is not None:
            await self._sessions.forget(thread_id)
        if thread_id in getattr(self._agent, _ACTIVE_RUNS):
            self._forget_when_done.add(thread_id)
            return
        self._drop(thread_id)

    def _drop(self, thread_id: str) -> None:
        """Forget what this process keeps of the thread: its agent and the bridge's bookkeeping."""
        self._thread_cache.pop(thread_id, None)
        self._forget_bookkeeping(thread_id)

    def _is_running_or_paused(self, thread_id: str, agent: Any) -> bool:
        """A thread with a run in flight or an approval waiting keeps its agent."""
        interrupt_state = getattr(agent, "_interrupt_state", None)
        return thread_id in getattr(self._agent, _ACTIVE_RUNS) or bool(getattr(interrupt_state, "activated", False))

    def _forget_bookkeeping(self, thread_id: str) -> None:
        for name in _PER_THREAD_BOOKKEEPING:
            getattr(self._agent, name).pop(thread_id, None)


def _require_private(agent: StrandsAgent, names: tuple[str, ...]) -> None:
    missing = [name for name in names if not hasattr(agent, name)]
    if missing:
        raise RuntimeError(f"ag-ui-strands changed: StrandsAgent has no {', '.join(missing)} (read by this route)")


def tool_behaviors(*, delegation: bool = True) -> dict[str, ToolBehavior]:
    """What each tool means on the AG-UI wire: approval, shared state, predictive state, delegation
    (``delegation=False``: the bridge's own handling of the delegation tool, for the bare benchmark)."""
    behaviors = {
        DELETE_FILE: APPROVAL,
        UPDATE_RECIPE: ToolBehavior(state_from_result=_recipe_state),
        WRITE_DOCUMENT: ToolBehavior(
            predict_state=[PredictStateMapping(state_key="document", tool=WRITE_DOCUMENT, tool_argument="document")],
            state_from_result=_document_state,
        ),
    }
    if delegation:
        behaviors[RESEARCH_SPECIALIST] = dialect.delegation_behavior(SUBAGENT_DESCRIPTION)
    return behaviors


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
