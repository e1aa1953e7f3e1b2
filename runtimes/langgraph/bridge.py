"""The LangGraph route's bridge: ag-ui-langgraph's ``LangGraphAgent`` over the route's graph, and
the stages it needs.

The upstream agent translates the graph's ``astream_events`` into AG-UI and is used with its own
switches: the standard RUN_FINISHED interrupt outcome instead of the legacy ``on_interrupt``
CUSTOM event (``emit_interrupt_outcome=True``, ``enable_legacy_on_interrupt_event=False``), its
native subagent surface (``subagent_visibility="attributed"``), no RAW copies of every LangGraph
event (``emit_raw_events=False``), and predictive state for ``write_document`` (``PREDICT_STATE``).

Concurrency: ``LangGraphAgent`` keeps per-run state on itself (``active_run``: ag-ui#1277, a shared
instance fails under concurrent requests), so every run gets its own clone (``clone()``, what the
bridge's own endpoint does); the compiled graph, the models and the checkpointer are shared.

What the bridge lacks is added as the runtime's own stages (``runtimes.base.Stage``), innermost first:

* ``subagents.NativeSubagents``: the native SUBAGENT_* surface held to the emitter's rules;
* ``errors.name_subagent_errors`` and ``runtimes.model_errors.name_model_errors``: ``MODEL_*``
  codes on the SUBAGENT_ERROR and RUN_ERROR of a failed model (``errors`` says why);
* ``state.client_state_snapshots``: every run opens with the client's state, and each snapshot
  keeps the client's own keys and says something new;
* the interrupt gate (``runtimes.interrupts``): the bridge checks no resume at all (an unknown id,
  a partial or a replayed resume all reach the graph), so the shared gate enforces the protocol's
  strict top-level ``resume``. Its accepted resume reaches LangGraph as an id-keyed resume map
  (``RouteAgent``);
* ``_bare_legacy_resume``: LangGraph's own convention, a bare ``forwardedProps.command.resume``
  value, answers the thread's one open interrupt (read from the checkpointer);
* ``_trim_after``: when a run ends, the thread is dropped if the app's approval ledger let it go
  while the run was in flight (:meth:`LangGraphBridge.forget`), and the checkpointer
  (``checkpoints``) comes back to its size.

With shared state (``AGUI_STATE_URL``) the checkpointer is in the engine (``shared``), with one more
stage inside the others: the run's engine failures as ``STATE_UNAVAILABLE``, and the thread's expiry.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, ResumeEntry, RunAgentInput
from ag_ui_langgraph import SUBAGENT_VISIBILITY_ATTRIBUTED, LangGraphAgent
from ag_ui_langgraph.interrupts import DEFAULT_RESUME_SENTINEL_CANCELLED
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from langgraph.warnings import LangGraphDeprecatedSinceV10

from runtimes import script
from runtimes.base import HeldThreads, Stage
from runtimes.config import RuntimeSettings
from runtimes.interrupts import InterruptGate
from runtimes.langgraph.agents import parent_graph
from runtimes.langgraph.checkpoints import ThreadCheckpoints
from runtimes.langgraph.errors import name_subagent_errors
from runtimes.langgraph.model import chat_model
from runtimes.langgraph.shared import EngineCheckpoints
from runtimes.langgraph.state import client_state_snapshots
from runtimes.langgraph.subagents import NativeSubagents
from runtimes.model_errors import ModelError, describe, name_model_errors
from store import Store

PREDICT_STATE = [{"state_key": "document", "tool": script.WRITE_DOCUMENT, "tool_argument": "document"}]
"""``write_document``'s ``document`` argument is the state key ``document`` while it streams (the
bridge reads this from the run's metadata and emits a PredictState CUSTOM event)."""
GRAPH_STEPS_PER_MODEL_CALL = 4
"""What the agent loop may take per model call: the model node, the client tools' hook after it and
the tools node, and one to spare. LangGraph's own bound, 25 steps per run (``recursion_limit``),
would end a model that keeps calling tools after eight calls with an error of its own (no code);
set from ``AGUI_MAX_MODEL_CALLS``, it leaves the run's model-call budget to end it
(``TOO_MANY_MODEL_CALLS``), as on every route."""
BARE_RESUME = "forwardedProps.command.resume"
"""The interrupt a bare legacy resume names when nothing is open (no interrupt has this id)."""
_HOOKS = ("_build_command_from_agui_resume", "get_schema_keys", "clone")
"""What ``RouteAgent`` overrides or calls on ``LangGraphAgent``."""


class RouteAgent(LangGraphAgent):
    """``LangGraphAgent`` that resumes LangGraph the way LangGraph 1.2 requires (and reads its
    graph's schema without a deprecation warning per run).

    ag-ui-langgraph 0.0.47 turns a top-level ``resume`` of several entries into one
    ``Command(resume={"__agui_resume_map__": ...})``, which LangGraph refuses while several interrupts
    are pending ("you must specify the interrupt id when resuming"), so two parallel approvals could
    never be answered. Its documented override hook (``_build_command_from_agui_resume``: "Subclasses
    may use it...", checked at construction) builds LangGraph's own id-keyed resume map instead,
    every entry answered: a resolved entry with its payload, a cancelled one with the bridge's
    cancel sentinel.
    """

    def _build_command_from_agui_resume(self, entries: list[ResumeEntry], **_: Any) -> Command:
        return Command(resume={entry.interrupt_id: _answer(entry) for entry in entries})

    def get_schema_keys(self, config: Any) -> Any:
        """The bridge's own, without the warning it raises on every run: it reads the graph's
        config schema with an API LangGraph 1.x deprecates (the fix is the bridge's)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
            return super().get_schema_keys(config)


def _answer(entry: ResumeEntry) -> object:
    if entry.status == "cancelled":
        return {DEFAULT_RESUME_SENTINEL_CANCELLED: True, "interrupt_id": entry.interrupt_id}
    return entry.payload


def agent_for(
    graph: CompiledStateGraph, settings: RuntimeSettings, cls: type[LangGraphAgent] = LangGraphAgent
) -> LangGraphAgent:
    """The upstream agent over ``graph``, with the switches this server uses (see the module)."""
    return cls(
        name="langgraph_demo_assistant",
        description="The demo assistant on LangGraph.",
        graph=graph,
        config={
            "metadata": {"predict_state": PREDICT_STATE},
            "recursion_limit": GRAPH_STEPS_PER_MODEL_CALL * (settings.agui_max_model_calls + 1),
        },
        emit_interrupt_outcome=True,
        enable_legacy_on_interrupt_event=False,
        emit_raw_events=False,
        subagent_visibility=SUBAGENT_VISIBILITY_ATTRIBUTED,
    )


def graph_for(settings: RuntimeSettings, saver: BaseCheckpointSaver) -> CompiledStateGraph:
    return parent_graph(chat_model(settings, script.parent_step), chat_model(settings, script.specialist_step), saver)


class LangGraphBridge:
    """``POST /langgraph/agent``: one graph and checkpointer for the app, one agent object per run."""

    interrupt_owner = None  # the bridge attributes its interrupts itself (``subagents``)

    def __init__(self, settings: RuntimeSettings, store: Store) -> None:
        missing = [name for name in _HOOKS if not callable(getattr(LangGraphAgent, name, None))]
        if missing:
            raise RuntimeError(f"ag-ui-langgraph changed: LangGraphAgent has no {', '.join(missing)} (used here)")
        engine = EngineCheckpoints(store.url) if store.shared and store.url else None
        self._checkpoints: ThreadCheckpoints | EngineCheckpoints = engine or ThreadCheckpoints(
            settings.agui_thread_cache_size
        )
        self._graph = graph_for(settings, self._checkpoints.saver)
        self._agent = agent_for(self._graph, settings, RouteAgent)
        self._gate = InterruptGate(store, "langgraph")
        self._subagents = NativeSubagents(store if engine else None)
        self._running: set[str] = set()
        self._forget_when_done: set[str] = set()
        self.stages: tuple[Stage, ...] = (
            self._subagents.stage,
            *((engine.stage,) if engine else ()),
            name_subagent_errors,
            name_model_errors,
            client_state_snapshots,
            self._gate.stage,
            self._bare_legacy_resume,
            self._trim_after,
        )

    async def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        self._checkpoints.touch(run_input.thread_id)
        request = bridge_input(run_input).model_copy(update={"messages": self._subagents.bridge_messages(run_input)})
        async with aclosing(self._agent.clone().run(request)) as events:
            async for event in events:
                yield event

    def describe_error(self, exc: BaseException) -> ModelError | None:
        return describe(exc)

    def held_threads(self) -> HeldThreads:
        return HeldThreads(
            running=frozenset(self._running),
            paused=self._gate.held_threads().paused,
            cached=self._checkpoints.threads(),
        )

    async def forget(self, thread_id: str) -> None:
        """Drop the thread's gate record, and its checkpoints and suspended specialists (the app's
        approval ledger asks): now, or when its run ends if one is in flight."""
        await self._gate.forget(thread_id)
        if thread_id in self._running:
            self._forget_when_done.add(thread_id)
            return
        self._forget_when_done.discard(thread_id)
        await self._checkpoints.forget(thread_id)
        await self._subagents.forget(thread_id)

    async def _bare_legacy_resume(
        self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput
    ) -> AsyncIterator[BaseEvent]:
        """LangGraph's own resume convention, a bare ``forwardedProps.command.resume`` value without
        interrupt ids, as the protocol's top-level ``resume`` answering the thread's one open
        interrupt (the app's guard already converted entries that name their interrupts), so the
        gate holds it to the same rules. With several open, a bare value cannot say which it
        answers (the gate refuses the run: ``PENDING_INTERRUPTS``); with none open, it answers
        nothing (``UNKNOWN_INTERRUPT_ID``), so a repeated answer never runs anything again.

        The run's input is amended in place, before the gate reads it: a stage has no other way to
        hand the stages inside it a different input."""
        value = _bare_resume(run_input.forwarded_props)
        if run_input.resume is None and value is not None:
            self._checkpoints.touch(run_input.thread_id)
            state = await self._graph.aget_state({"configurable": {"thread_id": run_input.thread_id}})
            if len(state.interrupts) <= 1:
                answered = state.interrupts[0].id if state.interrupts else BARE_RESUME
                run_input.resume = [ResumeEntry(interrupt_id=answered, status="resolved", payload=value)]
        async with aclosing(events):
            async for event in events:
                yield event

    async def _trim_after(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The thread is running while the run passes through (the thread's lease allows one run
        at a time); once it has ended, drop the thread if the ledger let it go meanwhile, and bring
        the checkpointer back to its size."""
        thread_id = run_input.thread_id
        self._running.add(thread_id)
        try:
            async with aclosing(events):
                async for event in events:
                    yield event
        finally:
            self._running.discard(thread_id)
            if thread_id in self._forget_when_done:
                await self.forget(thread_id)
            self._checkpoints.trim(running=self._running, paused=self._gate.held_threads().paused)


def _bare_resume(forwarded_props: object) -> object | None:
    command = forwarded_props.get("command") if isinstance(forwarded_props, dict) else None
    return command.get("resume") if isinstance(command, dict) else None


def bridge_input(run_input: RunAgentInput) -> RunAgentInput:
    """The request as the bridge should read it: the resume is the top-level ``resume`` the gate
    let through, never ``forwardedProps.command`` (the only part of it the bridge reads is
    ``command.resume``: already converted when it could be, and not a resume the gate accepted when
    it could not: a bare value with several interrupts open)."""
    props = run_input.forwarded_props
    if isinstance(props, dict) and "command" in props:
        return run_input.model_copy(update={"forwarded_props": {k: v for k, v in props.items() if k != "command"}})
    return run_input
