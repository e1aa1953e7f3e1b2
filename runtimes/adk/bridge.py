"""The ADK route's bridge: ag-ui-adk's ``ADKAgent``, and the stages it needs.

The upstream bridge translates ADK's runner into AG-UI (text, tool calls, frontend tools as
long-running calls, session state as STATE_DELTA/SNAPSHOT, predictive state, tool confirmations
as interrupts, MESSAGES_SNAPSHOT) and is used unchanged, called directly with the validated input.
What it lacks is added here:

* stages (``runtimes.base.Stage``), innermost first: ``model_errors.name_model_errors`` (a failed
  model call's RUN_ERROR gets a ``MODEL_*`` code: ``runtimes.adk.errors`` says why),
  ``state.without_bridge_state`` (the bridge's own bookkeeping stays out of the client's state),
  ``interrupts.standard_interrupts`` (ADK's tool confirmation as the protocol's standard approval),
  the shared interrupt gate
  (``runtimes.interrupts``: strict top-level ``resume``, outside the translation, since the bridge
  checks little of it itself), and the dialect's ``parent_calls_on_wire`` (``emitters.adk``);
* :meth:`AdkBridge.run`: an accepted resume reaches the bridge as ADK needs it
  (``interrupts.with_resumed_calls``); a run whose client went away stops its ADK runner, which the
  bridge leaves running in a background task; the thread's session is bounded (``sessions``), or,
  with shared state (``AGUI_STATE_URL``), kept in the engine with nothing of the thread left in
  this process between runs (``shared``).

The delegation dialect (``emitters.adk``) is a plugin of the ADK app (``agents``); the emitter core
finds the run on its own.

Private parts of ag-ui-adk 0.7.1 used here: ``ADKAgent._start_background_execution`` (extended by
:class:`RunScopedAgent` to hand the run the background task it starts, which the bridge leaves
running when its consumer goes away) and what ``sessions`` forgets with a thread, all checked at
construction (``sessions.require_private``; with shared state also ``shared.require_private``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput
from ag_ui_adk import ADKAgent, PredictStateMapping, SessionManager
from google.adk.sessions import InMemorySessionService

from emitters import adk as dialect
from runtimes.adk import agents, interrupts
from runtimes.adk.model import models_for
from runtimes.adk.sessions import CountBoundedSessions, Threads, ThreadSessions, require_private
from runtimes.adk.shared import SharedSessions, SharedThreads, engine_sessions
from runtimes.adk.state import without_bridge_state
from runtimes.base import TERMINAL, HeldThreads, Stage
from runtimes.config import RuntimeSettings
from runtimes.interrupts import InterruptGate
from runtimes.model_errors import ModelError, describe, name_model_errors
from runtimes.script import WRITE_DOCUMENT
from store import Store

USER_ID = "agui"
"""One ADK user for every thread: threads are told apart by their session (``session_id`` = thread id)."""
PREDICT_STATE = [
    PredictStateMapping(state_key="document", tool=WRITE_DOCUMENT, tool_argument="document", emit_confirm_tool=False)
]
"""``document`` fills in from write_document's streamed argument (no confirm_changes review step)."""
CONCURRENT_RUNS = 1024
"""ag-ui-adk refuses runs beyond its execution limit (10 by default), and counts the threads waiting
for an approval among them: room for that many runs at once beside every paused thread."""


_EXECUTIONS: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("agui_adk_executions", default=None)
"""The background executions the current run started (set by :meth:`AdkBridge.run`)."""


class RunScopedAgent(ADKAgent):
    """``ADKAgent`` that tells the run which background executions it started.

    ag-ui-adk runs the ADK runner in a task of its own and forgets it when the run's stream is
    closed, so a client that goes away leaves the model and the tools running to the end. The
    override records each execution in the run's context the moment it exists (no await between the
    task's creation and the record), so the run can cancel it however early the client leaves.
    """

    async def _start_background_execution(self, input: RunAgentInput, **kwargs: Any) -> Any:  # noqa: A002
        execution = await super()._start_background_execution(input, **kwargs)
        started = _EXECUTIONS.get()
        if started is not None:
            started.append(execution)
        return execution


def adk_agent(settings: RuntimeSettings, sessions: SessionManager, *, plugins: bool = True) -> ADKAgent:
    """The upstream bridge as the route configures it, over ``sessions`` (``plugins=False``: without
    this project's plugins, for the bare benchmark)."""
    parent_model, specialist_model = models_for(settings)
    return RunScopedAgent.from_app(
        agents.app(parent_model, specialist_model, agents.route_plugins() if plugins else []),
        user_id=USER_ID,
        session_manager=sessions,
        max_concurrent_executions=settings.agui_thread_cache_size + CONCURRENT_RUNS,
        predict_state=PREDICT_STATE,
        streaming_function_call_arguments=True,
        emit_messages_snapshot=True,
        emit_interrupt_outcome=True,
    )


class AdkBridge:
    """``POST /adk/agent``: one ``ADKAgent`` for the app; one ADK session per thread, bounded (in this
    process's memory, or in the shared engine: ``runtimes.adk.shared``)."""

    interrupt_owner = None  # an approval inside AgentTool never reaches the parent (docs/matrix.md)

    def __init__(self, settings: RuntimeSettings, store: Store) -> None:
        self._gate = InterruptGate(store, "adk")
        self._threads: Threads
        if store.shared and store.url:
            sessions = engine_sessions(store.url)
            self._agent = adk_agent(settings, SharedSessions(sessions))
            require_private(self._agent)
            self._threads = SharedThreads(self._agent, sessions, app_name=agents.APP_NAME, user_id=USER_ID)
        else:
            service = InMemorySessionService()
            self._agent = adk_agent(settings, CountBoundedSessions(service))
            require_private(self._agent)
            self._threads = ThreadSessions(
                self._agent,
                service,
                app_name=agents.APP_NAME,
                user_id=USER_ID,
                max_threads=settings.agui_thread_cache_size,
                paused=lambda: self._gate.held_threads().paused,
            )
        self.stages: tuple[Stage, ...] = (
            name_model_errors,
            without_bridge_state,
            interrupts.standard_interrupts,
            self._gate.stage,
            dialect.parent_calls_on_wire,
        )

    async def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        thread_id = run_input.thread_id
        started: list[Any] = []
        _EXECUTIONS.set(started)
        self._threads.started(thread_id)
        events = self._agent.run(interrupts.with_resumed_calls(run_input))
        ended = False
        try:
            async for event in events:
                ended = event.type in TERMINAL
                if ended:
                    await self._threads.finishing(thread_id, event)
                yield event
        finally:
            await events.aclose()
            for execution in started:
                if not execution.task.done():  # the client left mid-run
                    execution.task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await execution.task
            if not ended:  # cut short: the session may hold half a turn, or an approval no client was told of
                await self._threads.forget(thread_id)
            await self._threads.ended(thread_id)

    def describe_error(self, exc: BaseException) -> ModelError | None:
        return describe(exc)

    async def forget(self, thread_id: str) -> None:
        """Drop the thread's pending approval and its session (the app's ledger asks)."""
        await self._gate.forget(thread_id)
        await self._threads.forget(thread_id)

    def held_threads(self) -> HeldThreads:
        return HeldThreads(
            running=frozenset(self._threads.running),
            paused=self._gate.held_threads().paused,
            cached=self._threads.cached(),
        )
