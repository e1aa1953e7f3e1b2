"""Approvals on the Mastra route: the protocol's interrupt outcome out, the strict top-level resume in.

Mastra asks for an approval by suspending the tool (``delete_file`` calls ``suspend``), and
@ag-ui/mastra 1.1.2 reports each suspension as an interrupt ``{id: "<runId>::<toolCallId>",
reason: "mastra:tool_suspend", ...}`` on RUN_FINISHED. Its resume is not strict (it reads the
first entry of ``resume`` and ignores the rest, and answers a cancelled entry with an empty run
that leaves Mastra's run suspended), so the route puts ``runtimes.interrupts.InterruptGate`` in
front of it and sends the bridge one entry per request (:func:`sidecar_requests`).

* :func:`standard_interrupts`: reason ``tool_call`` and the approval's ``responseSchema``; an
  interrupt raised inside the specialist names the specialist's own call (the id its tool sent
  with the suspension), and :func:`interrupt_owner` tells the emitter which delegation raised it.
* A cancelled entry is sent as ``{"approved": false}``: the call reports that it did not run and
  the run goes on; nothing is left suspended.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, EventType, Interrupt, RunAgentInput

from runtimes import script
from runtimes.interrupts import APPROVAL_SCHEMA
from runtimes.mastra.events import interrupt_call


def _mastra(interrupt: Interrupt) -> dict[str, Any]:
    return dict((interrupt.metadata or {}).get("mastra") or {})


def standard_interrupt(interrupt: Interrupt) -> Interrupt:
    own_call = (_mastra(interrupt).get("suspendPayload") or {}).get("toolCallId")
    return interrupt.model_copy(
        update={
            "reason": "tool_call",
            "response_schema": APPROVAL_SCHEMA,
            "tool_call_id": own_call or interrupt.tool_call_id,
        }
    )


async def standard_interrupts(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    async with aclosing(events):
        async for event in events:
            interrupts = getattr(event.outcome, "interrupts", None) if event.type == EventType.RUN_FINISHED else None
            if interrupts:
                outcome = event.outcome.model_copy(update={"interrupts": [standard_interrupt(i) for i in interrupts]})
                event = event.model_copy(update={"outcome": outcome})
            yield event


def interrupt_owner(interrupt: Interrupt) -> str | None:
    """The delegating call whose specialist raised ``interrupt`` (Mastra suspends the delegating call)."""
    if _mastra(interrupt).get("toolName") == script.RESEARCH_SPECIALIST:
        return interrupt_call(interrupt.id)
    return None


def sidecar_requests(run_input: RunAgentInput) -> list[dict[str, Any]]:
    """The request bodies the sidecar gets for one run: the run itself, or one per resume entry."""
    body = run_input.model_dump(by_alias=True, exclude_none=True)
    if not run_input.resume:
        return [body]
    bodies = []
    for entry in run_input.resume:
        payload = entry.payload if entry.status == "resolved" else {"approved": False}
        bodies.append(
            {**body, "resume": [{"interruptId": entry.interrupt_id, "status": "resolved", "payload": payload}]}
        )
    return bodies
