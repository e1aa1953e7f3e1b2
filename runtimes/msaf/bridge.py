"""The MAF route's bridge: agent-framework-ag-ui's ``AgentFrameworkAgent``, and the stages it needs.

The upstream runner translates the agent's run into AG-UI (approvals, state, predictive state)
and is used unchanged. The route adds, as its own stages (``runtimes.base.Stage``):

* ``with_success_outcome``: a successful RUN_FINISHED says ``outcome: {type: "success"}``, as the
  other routes' finishes do;
* ``cancel.complete_cancelled_approvals``: a cancelled approval still gets a tool result and a reply;
* with shared state (``AGUI_STATE_URL``), ``shared.SharedApprovals.stage``, outermost: the run's
  approvals come from the engine and go back to it (``shared``), in a store of the run's own.

Model failures escape the runner as exceptions; ``describe_error`` names them (``errors``), and the
pipeline's error boundary puts that code on the RUN_ERROR. The delegation dialect
(``emitters.msaf``) is wired into the agents (``agents``).

Private state of agent-framework-ag-ui 1.7.0 used here, because the runner offers no other way:
its approval store (``_approval_state_store``, hard-wired to 10,000 entries kept a day, which a
flood filled for everyone; replaced by one sized for the app's approval ledger, and with shared
state by each run's own, on a copy of the runner) and that store's thread keys and lifecycle (to
drop a waiting thread the ledger evicts; to move a thread's approvals, ``record``). Construction
fails at once if they are gone.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, EventType, RunAgentInput, RunFinishedSuccessOutcome
from agent_framework_ag_ui import AgentFrameworkAgent, AGUIRequest
from agent_framework_ag_ui._approval_state import InMemoryAGUIApprovalStateStore, approval_state_thread_id

from runtimes import script
from runtimes.base import HeldThreads, Stage
from runtimes.config import RuntimeSettings
from runtimes.model_errors import ModelError
from runtimes.msaf import errors, record
from runtimes.msaf.agents import build_assistant
from runtimes.msaf.cancel import PendingApprovals, complete_cancelled_approvals
from runtimes.msaf.shared import SharedApprovals
from store import Store

STATE_SCHEMA: dict[str, dict[str, Any]] = {
    "recipe": {"type": "object", "description": "The recipe update_recipe wrote."},
    "document": {"type": "string", "description": "The document write_document is writing."},
}
PREDICT_STATE_CONFIG = {"document": {"tool": script.WRITE_DOCUMENT, "tool_argument": "document"}}
DEFAULT_STATE: dict[str, Any] = {"document": ""}
"""Real defaults: ``state_schema`` alone fills a string key with ``{}``, and the predictive
STATE_DELTA ``replace /document`` is only valid JSON Patch when the key already exists."""


def runner(settings: RuntimeSettings) -> AgentFrameworkAgent:
    """The upstream runner the route serves, configured as the route needs it."""
    return AgentFrameworkAgent(
        build_assistant(settings),
        state_schema=STATE_SCHEMA,
        predict_state_config=PREDICT_STATE_CONFIG,
        require_confirmation=False,  # no synthetic confirm_changes tool call: the interrupt outcome is enough
    )


class MsafBridge:
    """``POST /msaf/agent``: one runner for the app; each request gets its own session and state.
    ``route`` names the thread records in ``store`` when the store is shared."""

    interrupt_owner = None  # an approval inside ``as_tool`` cannot reach the parent (docs/matrix.md)

    def __init__(self, settings: RuntimeSettings, store: Store, route: str) -> None:
        self._runner = runner(settings)
        if not isinstance(getattr(self._runner, "_approval_state_store", None), InMemoryAGUIApprovalStateStore):
            raise RuntimeError("agent-framework-ag-ui changed: AgentFrameworkAgent has no _approval_state_store")
        record.require_private()
        self._runner._approval_state_store = record.approval_store()
        self._pending = PendingApprovals()
        self._shared = SharedApprovals(store, route) if store.shared else None
        self.stages: tuple[Stage, ...] = (with_success_outcome, self._complete_cancelled_approvals)
        if self._shared is not None:
            self.stages += (self._shared.stage,)

    def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        if self._shared is None:
            return self._runner.run(runner_input(run_input))
        return self._run_shared(run_input)

    def describe_error(self, exc: BaseException) -> ModelError | None:
        return errors.describe(exc)

    def held_threads(self) -> HeldThreads:
        if self._shared is not None:  # between runs, the engine holds them (the ledger knows who waits)
            return HeldThreads(running=self._shared.running())
        return HeldThreads(paused=frozenset(self._pending.threads()))

    async def forget(self, thread_id: str) -> None:
        """Expire the thread's pending approvals in the runner's store (the app's ledger asks); with
        shared state, drop the thread's record in the engine."""
        if self._shared is not None:
            await self._shared.forget(thread_id)
            return
        store = self._runner._approval_state_store
        key = approval_state_thread_id(scope=None, thread_id=thread_id)  # unscoped: the route runs single-user
        pending = store.lifecycle.pending_interrupt_ids(thread_id=key)
        if pending:
            store.lifecycle.expire_batch(thread_id=key, interrupt_ids=sorted(pending))
        store.delete_tool_approval_state(key)
        self._pending.put(thread_id, {})

    async def _run_shared(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The runner on the run's own approval store (loaded by the shared stage, outside)."""
        runner = copy.copy(self._runner)
        runner._approval_state_store = self._shared.of(run_input).store
        async with aclosing(runner.run(runner_input(run_input))) as events:
            async for event in events:
                yield event

    def _complete_cancelled_approvals(
        self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput
    ) -> AsyncIterator[BaseEvent]:
        return complete_cancelled_approvals(events, run_input, self._pending_of)

    def _pending_of(self, run_input: RunAgentInput) -> PendingApprovals:
        return self._pending if self._shared is None else self._shared.of(run_input).pending


def runner_input(run_input: RunAgentInput) -> dict[str, Any]:
    """The request as the upstream runner reads it: its own request model's dump (what its
    endpoint hands ``run``), with the route's default state filled in where the client sent none."""
    data = AGUIRequest.model_validate(run_input.model_dump(by_alias=True, exclude_none=True)).model_dump(
        exclude_none=True
    )
    state = data.setdefault("state", {})
    for key, value in DEFAULT_STATE.items():
        state.setdefault(key, copy.deepcopy(value))
    return data


async def with_success_outcome(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """Say ``outcome: {type: "success"}`` on a successful RUN_FINISHED, as the Strands route does.

    The bridge omits it (legacy success, allowed by the protocol); stating it lets one client
    read every route's finish the same way.
    """
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.RUN_FINISHED and event.outcome is None:
                event = event.model_copy(update={"outcome": RunFinishedSuccessOutcome()})
            yield event
