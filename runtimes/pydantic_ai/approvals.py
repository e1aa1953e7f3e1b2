"""Approvals asked inside the research specialist, as the protocol's standard interrupts.

Pydantic AI's AG-UI adapter turns a run that ends with ``DeferredToolRequests`` into RUN_FINISHED
with one interrupt per call waiting for approval (id ``int-<toolCallId>``, its own response
schema), and reads the top-level ``resume`` back into ``DeferredToolResults``. For the parent's own
calls that is used unchanged. A specialist's approval, though, reaches the parent as an approval of
the *delegation* call (``runtimes.pydantic_ai.delegation`` defers the tool itself), which is not
what the user is asked. This module is the translation at the route boundary:

* outbound (:func:`specialist_interrupts`): the delegation call's interrupt becomes one interrupt
  per call the specialist waits on, in the adapter's own shape: id = the adapter's prefix + the
  call's id on the wire (``<parentToolCallId>::<callId>``, ``emitters.core.specialist_tool_call_id``),
  the specialist's call id (the emitter core namespaces it and adds ``subagentRunId``), the
  adapter's response schema, and ``metadata.parentToolCallId`` (which tells the emitter core whose
  subagent asked: :func:`interrupt_owner`);
* the paused specialist runs are kept per thread until the resume: in this process
  (:class:`PausedSpecialists`), or in the engine with shared state (``runtimes.pydantic_ai.shared``);
* inbound (:func:`continuations`): the answers to those interrupts are read by the adapter's own
  translation (``AGUIAdapter.deferred_tool_results``) into the specialist's ``DeferredToolResults``,
  handed to the delegation tool (``deps.continuations``), and the delegation call is approved so
  that Pydantic AI runs the tool again for the same call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ag_ui.core import Interrupt, RunAgentInput
from pydantic_ai import Agent
from pydantic_ai.tools import DeferredToolResults, ToolApproved
from pydantic_ai.ui.ag_ui import AGUIAdapter

from emitters.core import specialist_tool_call_id
from runtimes.pydantic_ai.deps import Continuation, RunDeps, Suspension
from runtimes.script import RESEARCH_SPECIALIST

PARENT_KEY = "parentToolCallId"
"""The interrupt metadata key naming the delegation call whose specialist asked."""


@dataclass(frozen=True)
class Paused:
    """What one specialist interrupt stands for: which delegation, which of its specialist's calls."""

    parent_tool_call_id: str
    tool_call_id: str
    suspension: Suspension


class Specialists(Protocol):
    """Where the route keeps, per thread, the specialist interrupts waiting for an answer (by id)."""

    async def keep(self, thread_id: str, paused: dict[str, Paused]) -> None:
        """Keep ``paused`` (none: nothing) for the thread's next run."""

    async def take(self, run_input: RunAgentInput) -> dict[str, Paused]:
        """What the thread's run ``run_input`` may continue; nothing is kept for the thread after."""

    async def forget(self, thread_id: str) -> None:
        """Drop what is kept for the thread."""

    def threads(self) -> frozenset[str]:
        """The threads this process holds paused specialists of."""


class PausedSpecialists:
    """Per thread, in this process, the specialist interrupts waiting for an answer, by interrupt id.

    Bounded from outside: an entry lives until the thread's next run takes it, or until the app's
    approval ledger drops the thread (``Bridge.forget``), which bounds the threads waiting.
    """

    def __init__(self) -> None:
        self._by_thread: dict[str, dict[str, Paused]] = {}

    async def keep(self, thread_id: str, paused: dict[str, Paused]) -> None:
        if paused:
            self._by_thread[thread_id] = paused

    async def take(self, run_input: RunAgentInput) -> dict[str, Paused]:
        return self._by_thread.pop(run_input.thread_id, {})

    async def forget(self, thread_id: str) -> None:
        self._by_thread.pop(thread_id, None)

    def threads(self) -> frozenset[str]:
        return frozenset(self._by_thread)


def specialist_interrupts(
    interrupts: list[Interrupt], suspended: dict[str, Suspension]
) -> tuple[list[Interrupt], dict[str, Paused]]:
    """The run's interrupts with every suspended delegation's one replaced by its specialist's."""
    out: list[Interrupt] = []
    paused: dict[str, Paused] = {}
    for interrupt in interrupts:
        parent = interrupt.tool_call_id
        suspension = suspended.get(parent or "")
        if parent is None or suspension is None:
            out.append(interrupt)
            continue
        prefix = interrupt.id.removesuffix(parent)  # the adapter's ``<prefix><toolCallId>``
        for call in suspension.approvals:
            nested = Interrupt(
                id=f"{prefix}{specialist_tool_call_id(parent, call.tool_call_id)}",
                reason=interrupt.reason,
                message=f"Approve {call.tool_name}({call.args_as_json_str()})? ({RESEARCH_SPECIALIST} asks)",
                tool_call_id=call.tool_call_id,
                response_schema=interrupt.response_schema,
                metadata={PARENT_KEY: parent, "subagent": RESEARCH_SPECIALIST},
            )
            out.append(nested)
            paused[nested.id] = Paused(parent, call.tool_call_id, suspension)
    return out, paused


def interrupt_owner(interrupt: Interrupt) -> str | None:
    """The delegation call whose specialist raised ``interrupt`` (the emitter core's hook)."""
    owner = (interrupt.metadata or {}).get(PARENT_KEY)
    return owner if isinstance(owner, str) else None


def continuations(
    agent: Agent[RunDeps, object], run_input: RunAgentInput, paused: dict[str, Paused]
) -> tuple[RunAgentInput, DeferredToolResults | None, dict[str, Continuation]]:
    """Split a resume: the parent's own answers stay for the adapter (in the run input it reads),
    the specialists' become the continuations the delegation tool picks up, and each answered
    delegation call is approved (so Pydantic AI runs it again for the same call). No results at
    all (None) when the run answers nothing."""
    resume = run_input.resume or []
    own = run_input.model_copy(update={"resume": [e for e in resume if e.interrupt_id not in paused]})
    asked = [paused[e.interrupt_id] for e in resume if e.interrupt_id in paused]
    results = _read(agent, own)
    if not asked:
        return own, results, {}
    results = results or DeferredToolResults()
    answers = _read(agent, run_input.model_copy(update={"resume": [e for e in resume if e.interrupt_id in paused]}))
    assert answers is not None  # every entry in it answers a specialist's interrupt
    resumed: dict[str, Continuation] = {}
    for where in asked:
        parent = where.parent_tool_call_id
        continuation = resumed.setdefault(parent, Continuation(where.suspension.messages, DeferredToolResults()))
        continuation.results.approvals[where.tool_call_id] = answers.approvals[
            specialist_tool_call_id(parent, where.tool_call_id)
        ]
        results.approvals[parent] = ToolApproved()
    return own, results, resumed


def _read(agent: Agent[RunDeps, object], run_input: RunAgentInput) -> DeferredToolResults | None:
    """The adapter's own reading of a run input's resume (answers keyed by the call id each
    interrupt id names), or None when it has none."""
    return AGUIAdapter(agent=agent, run_input=run_input).deferred_tool_results
