"""The Pydantic AI route's bridge: the AG-UI adapter of pydantic-ai-slim, and the stages it needs.

The upstream adapter (``pydantic_ai.ui.ag_ui.AGUIAdapter``) turns one run of the agent into AG-UI:
it loads the client's ``messages`` as the history, the client's ``tools`` as external (frontend)
tools, writes the client's ``state`` into the run's deps, reads the top-level ``resume`` into
``DeferredToolResults``, and ends a run that waits for approvals with the standard interrupt
outcome. The route calls it with the validated ``RunAgentInput`` (not its Starlette endpoint, which
``bare`` serves for the benchmark) and uses its event stream unchanged, with:

* a fresh ``RunDeps`` per run (``deps``): the agents are shared, every run's state is its own;
* ``on_complete``, the adapter's own hook, ending each completed run with a STATE_SNAPSHOT of the
  run's state and a MESSAGES_SNAPSHOT of the conversation (the adapter's own ``dump_messages``), so
  a client holds the state every run ends with and can send the history back, tool calls included,
  on its next run or resume;
* approvals inside the specialist (``approvals``): the delegation call's interrupt becomes the
  specialist's own, and their answers continue the specialist;
* a failed run: the adapter reports any failure as a RUN_ERROR without a code; the route raises
  the failure it saw instead, so the pipeline's error boundary names it (``describe_error``:
  ``MODEL_*`` for a model failure).

Its stages (``runtimes.base.Stage``), innermost first:

* ``predict_document``: a PredictState CUSTOM event before each ``write_document`` call, so the
  client fills ``document`` from the streamed argument (Pydantic AI has no predictive state);
* the shared interrupt gate (``runtimes.interrupts``): the adapter reads a resume but checks
  nothing against the thread (it is stateless), so the gate enforces the strict top-level resume.

What it keeps for a thread waiting for an answer (the gate's record, a paused specialist) is
dropped when the app's approval ledger asks (:meth:`PydanticAIBridge.forget`), or taken by the
thread's next run. Both are in the app's store: with shared state the paused specialists are a
record in the engine too (``runtimes.pydantic_ai.shared``), else they stay in this process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from functools import partial

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    EventType,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunFinishedEvent,
    StateSnapshotEvent,
)
from pydantic_ai import Agent
from pydantic_ai.run import AgentRunResult
from pydantic_ai.ui.ag_ui import AGUIAdapter

from runtimes.base import HeldThreads, Stage
from runtimes.config import RuntimeSettings
from runtimes.interrupts import InterruptGate
from runtimes.model_errors import ModelError, describe
from runtimes.pydantic_ai import approvals
from runtimes.pydantic_ai.agents import build_assistant
from runtimes.pydantic_ai.approvals import PausedSpecialists, Specialists
from runtimes.pydantic_ai.deps import RunDeps
from runtimes.pydantic_ai.model import models_for
from runtimes.pydantic_ai.shared import EngineSpecialists
from runtimes.pydantic_ai.teardown import cancel_parked, run_tasks
from runtimes.script import WRITE_DOCUMENT
from store import Store

PREDICT_DOCUMENT = {"state_key": "document", "tool": WRITE_DOCUMENT, "tool_argument": "document"}
"""The PredictState mapping: ``write_document``'s ``document`` argument is the state key ``document``."""


class PydanticAIBridge:
    """``POST /pydantic-ai/agent``: one agent pair for the app; every run gets its own deps.
    ``route`` names the thread records in ``store`` when the store is shared."""

    interrupt_owner = staticmethod(approvals.interrupt_owner)

    def __init__(self, settings: RuntimeSettings, store: Store, route: str) -> None:
        self._assistant = build_assistant(*models_for(settings))
        self._gate = InterruptGate(store, "pydantic-ai")
        self._paused: Specialists = EngineSpecialists(store, route) if store.shared else PausedSpecialists()
        self._running: set[str] = set()
        self.stages: tuple[Stage, ...] = (predict_document, self._gate.stage)

    async def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        self._running.add(run_input.thread_id)  # one run per thread at a time: the app's lease
        try:
            async with aclosing(self._run(run_input)) as events:
                async for event in events:
                    yield event
        finally:
            self._running.discard(run_input.thread_id)

    async def _run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        deps = RunDeps()
        paused = await self._paused.take(run_input)
        parent_input, results, deps.continuations = approvals.continuations(self._assistant, run_input, paused)
        adapter = AGUIAdapter(agent=self._assistant, run_input=parent_input)
        failures: list[Exception] = []
        native = _recording(adapter.run_stream_native(deps=deps, deferred_tool_results=results), failures)
        events = adapter.transform_stream(native, on_complete=partial(_snapshots, deps))
        tasks = run_tasks()
        # Parallel tool calls still run concurrently; their results go out in call order, so the
        # wire is the same every time (two answered approvals, two delegations).
        with Agent.parallel_tool_call_execution_mode("parallel_ordered_events"):
            try:
                async with aclosing(events):
                    async for event in events:
                        if event.type == EventType.RUN_ERROR and failures:
                            raise failures[-1]  # named by the pipeline's error boundary (describe_error)
                        if event.type == EventType.RUN_FINISHED:
                            event = await self._asked_by_specialists(event, run_input.thread_id, deps)
                        yield event
            finally:
                cancel_parked(tasks)

    async def _asked_by_specialists(self, event: RunFinishedEvent, thread_id: str, deps: RunDeps) -> RunFinishedEvent:
        """The run's interrupt outcome with each paused specialist's own interrupts in place of its
        delegation call's, the paused specialists kept for the thread's resume."""
        interrupts = getattr(event.outcome, "interrupts", None)
        if not interrupts or not deps.suspended:
            return event
        interrupts, asked = approvals.specialist_interrupts(interrupts, deps.suspended)
        await self._paused.keep(thread_id, asked)
        return event.model_copy(update={"outcome": event.outcome.model_copy(update={"interrupts": interrupts})})

    def describe_error(self, exc: BaseException) -> ModelError | None:
        return describe(exc)

    async def forget(self, thread_id: str) -> None:
        """Drop the thread's open interrupts and paused specialists (the app's ledger asks)."""
        await self._gate.forget(thread_id)
        await self._paused.forget(thread_id)

    def held_threads(self) -> HeldThreads:
        paused = self._paused.threads()
        return HeldThreads(
            running=frozenset(self._running), paused=self._gate.held_threads().paused | paused, cached=paused
        )


async def predict_document(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """Announce, before each ``write_document`` call, that its ``document`` argument is the state key
    ``document`` (the client fills it in while the argument streams)."""
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.TOOL_CALL_START and event.tool_call_name == WRITE_DOCUMENT:
                yield CustomEvent(name="PredictState", value=[dict(PREDICT_DOCUMENT)])
            yield event


async def _snapshots(deps: RunDeps, result: AgentRunResult) -> AsyncIterator[BaseEvent]:
    """The adapter's ``on_complete``: the run's whole state, and the whole conversation as the
    adapter dumps it."""
    yield StateSnapshotEvent(snapshot=dict(deps.state))
    yield MessagesSnapshotEvent(messages=AGUIAdapter.dump_messages(result.all_messages()))


async def _recording(events: AsyncIterator, failures: list[Exception]) -> AsyncIterator:
    """``events``, noting the exception that ends them (the adapter keeps only its text)."""
    try:
        async with aclosing(events):
            async for event in events:
                yield event
    except Exception as exc:
        failures.append(exc)
        raise
