"""Parked approvals are a resource with an owner: bounded, and never dropped without a word.

Why: a run that ends in an interrupt parks state on the server until someone answers (the
paused agent, the bridge's approval store). Unbounded, one client's flood of approvals fills the
server (agent-framework-ag-ui 1.7.0 then refused every new approval for 24 hours); bounded by plain
least-recently-used eviction, a flood evicts other users' approvals, whose resume then fails as
if they had never existed. So, one ledger per route, in front of every runtime:

* one run may park at most ``max_per_run`` approvals of at most ``max_bytes`` (as JSON), or it
  ends with RUN_ERROR ``APPROVAL_TOO_LARGE`` instead of parking;
* at most ``max_parked`` threads wait at once. Parking one more evicts the thread that has waited
  longest, if it has waited at least ``min_age_s`` and no run of it is in flight (its resume may
  be on its way through); otherwise the new one is refused with RUN_ERROR
  ``APPROVAL_CAPACITY`` (the flood waits, not the people already waiting);
* an evicted thread is remembered for an hour, and its late resume gets RUN_ERROR
  ``INTERRUPT_EXPIRED``, saying why.

What the bridge holds for a thread is dropped through ``Bridge.forget``; the bridges themselves
never drop a waiting thread on their own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass

from ag_ui.core import BaseEvent, EventType, RunAgentInput, RunErrorEvent, RunStartedEvent

from app.runs import RunKeys
from store import Store

APPROVAL_TOO_LARGE = "APPROVAL_TOO_LARGE"
APPROVAL_CAPACITY = "APPROVAL_CAPACITY"
INTERRUPT_EXPIRED = "INTERRUPT_EXPIRED"
CODES = frozenset({APPROVAL_TOO_LARGE, APPROVAL_CAPACITY, INTERRUPT_EXPIRED})


@dataclass(frozen=True)
class ApprovalLimits:
    """``AGUI_MAX_PARKED_APPROVALS``, ``AGUI_APPROVAL_MIN_AGE_S``, ``AGUI_MAX_APPROVALS_PER_RUN``,
    ``AGUI_MAX_APPROVAL_BYTES``."""

    max_parked: int
    min_age_s: float
    max_per_run: int
    max_bytes: int


EXPIRED_TTL_S = 3600.0
"""How long an evicted thread is remembered, so its late resume is told why. Evictions are bounded
by the limits (a thread must have waited ``min_age_s``), so the marks are too."""


class ApprovalLedger:
    """Which threads of one route wait for an answer, since when; the rules above. What it holds
    is in the app's store (``store``), shared by every replica when the state is; a thread is never
    evicted while its lease is held (a run of it is in flight: its resume may be on its way)."""

    def __init__(
        self, limits: ApprovalLimits, forget: Callable[[str], Awaitable[None]], store: Store, route: str
    ) -> None:
        self._limits = limits
        self._forget = forget
        self._store = store
        self._parked = f"agui:{route}:parked"
        self._expired = f"agui:{route}:expired:"
        self._leases = RunKeys.lease_prefix(route)

    async def stage(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The ledger as a pipeline stage: refuse a late resume, then decide what a run may park."""
        thread_id = run_input.thread_id
        if run_input.resume and await self._store.get(self._expired + thread_id) is not None:
            async with aclosing(events):  # never started: nothing of the bridge runs
                pass
            yield RunStartedEvent(thread_id=thread_id, run_id=run_input.run_id)
            yield RunErrorEvent(
                message="The approval this resume answers expired: it waited past "
                f"AGUI_APPROVAL_MIN_AGE_S ({self._limits.min_age_s:g} s) while the server was full.",
                code=INTERRUPT_EXPIRED,
            )
            return
        async with aclosing(events):
            async for event in events:
                if event.type == EventType.RUN_FINISHED:
                    event = await self._settle(thread_id, event)
                yield event

    async def parked(self) -> list[str]:
        """The threads waiting, the longest waiting first."""
        return await self._store.parked(self._parked)

    async def _settle(self, thread_id: str, finished: BaseEvent) -> BaseEvent:
        """What a run's RUN_FINISHED may be: parked, or refused (then nothing stays held)."""
        interrupts = getattr(finished.outcome, "interrupts", None) or []
        await self._store.unpark(self._parked, thread_id)
        await self._store.delete(self._expired + thread_id)
        if not interrupts:
            return finished
        size = len(json.dumps([i.model_dump(mode="json") for i in interrupts], separators=(",", ":")))
        if len(interrupts) > self._limits.max_per_run or size > self._limits.max_bytes:
            await self._forget(thread_id)
            return RunErrorEvent(
                message=f"The run asked for {len(interrupts)} approval(s) of {size} bytes; the server holds at most "
                f"{self._limits.max_per_run} of {self._limits.max_bytes} bytes per run. Nothing was run.",
                code=APPROVAL_TOO_LARGE,
            )
        decision = await self._store.park(
            self._parked,
            thread_id,
            max_parked=self._limits.max_parked,
            min_age_s=self._limits.min_age_s,
            leases=self._leases,
        )
        if decision.verdict == "refused":
            await self._forget(thread_id)
            return RunErrorEvent(
                message="The server holds as many waiting approvals as it may; nothing was run. Try again later.",
                code=APPROVAL_CAPACITY,
            )
        if decision.evicted is not None:
            await self._forget(decision.evicted)
            await self._store.put(self._expired + decision.evicted, b"1", ttl_s=EXPIRED_TTL_S)
        return finished
