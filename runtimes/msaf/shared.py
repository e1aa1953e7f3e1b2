"""With shared state (``AGUI_STATE_URL``), a thread's approvals live in the engine between its runs.

Why: agent-framework-ag-ui 1.7.0 checks a resume only against the approval store in its runner's
process, so an interrupt on one replica and its resume on another failed with
``APPROVAL_RESUME_NOT_FOUND``. The store has no persistence seam, so the route wraps the runner at
the boundary of each run, as :meth:`SharedApprovals.stage`, the outermost of its stages:

* before the runner starts, the thread's record (``record``) is read from the engine into a store
  of the run's own (``ThreadApprovals``; its lifecycle on the wall clock), which the runner uses
  for that run only. No run starts from what an earlier run left in this process;
* before the run's terminal event goes on, the runner's stream is closed (so it settles or
  recovers what it began) and the store is written back as the thread's record, or the record is
  deleted when nothing is left; the app's approval ledger, outside, then sees the outcome (and may
  :meth:`forget` the thread) after the record is written, never before.

No lock is needed: the app runs one run per thread at a time on every replica (the thread's lease,
``app.runs``), and a run reads and writes the record only while it holds the lease.

Never run twice: when the record has an approval pending, any run may answer it (a ``resume``, or
a tool message in the older conventions), so the record is deleted before the runner starts and
written again at the end. A run that never ends (its replica killed, the engine gone at the end)
leaves no pending approval behind: a retry is answered ``APPROVAL_RESUME_NOT_FOUND``, as after a
restart of a single process, and the approved tool never runs a second time.

Key ``agui:<route>:approvals:<thread>``, one JSON value (about 1.5 KB per waiting approval, 2.5 KB
per settled one), kept ``PAUSED_TTL_S`` while something waits (7 days: upstream's retention of an
approval that may have run without a result; a pending one expires after upstream's own 24 hours,
as in memory; the app's ledger keeps a parked one at least ``AGUI_APPROVAL_MIN_AGE_S``, 600 s by
default), else ``SETTLED_TTL_S`` (the 5 minutes a settled result is kept for a replay). A thread
that never asked for an approval has no record, and its runs write nothing (one read each).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, RunAgentInput

from runtimes.base import TERMINAL
from runtimes.msaf import record
from runtimes.msaf.record import ThreadApprovals
from store import Store, StoreUnavailable

logger = logging.getLogger("agui.msaf")

PAUSED_TTL_S = record.INDETERMINATE_RETENTION_S
SETTLED_TTL_S = record.SETTLED_RETENTION_S


class SharedApprovals:
    """The route's approvals in ``store`` (shared by every replica), one record per thread under
    ``agui:<route>:approvals:``; and the approvals of the runs in flight in this process."""

    def __init__(self, store: Store, route: str) -> None:
        self._store = store
        self._prefix = f"agui:{route}:approvals:"
        self._runs: dict[tuple[str, str], ThreadApprovals] = {}  # (thread, run) -> its approvals, while it runs

    def of(self, run_input: RunAgentInput) -> ThreadApprovals:
        """The approvals :meth:`stage` loaded for this run (the stage is outside every caller)."""
        return self._runs[(run_input.thread_id, run_input.run_id)]

    def running(self) -> frozenset[str]:
        """The threads whose runs hold their approvals in this process now."""
        return frozenset(thread for thread, _ in self._runs)

    async def stage(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """Load the thread's record for the run, write it back before the run's terminal event."""
        key, run = self._prefix + run_input.thread_id, (run_input.thread_id, run_input.run_id)
        async with aclosing(events):
            approvals = ThreadApprovals(run_input.thread_id, record.approval_store(wall_clock=True))
            raw = await self._store.get(key)
            record.load(raw, approvals)
            stored = raw is not None
            if approvals.waiting():
                await self._store.delete(key)  # never run twice (see the module docstring)
                stored = False
            self._runs[run] = approvals
            written = False
            try:
                async for event in events:
                    if event.type in TERMINAL:
                        await events.aclose()  # the runner settles or recovers what it began
                        written = True
                        await self._write(key, approvals, stored)
                    yield event
            finally:
                del self._runs[run]
                if not written:  # the run stopped early (its clients left, it failed): keep what it did
                    await events.aclose()
                    try:
                        await self._write(key, approvals, stored)
                    except StoreUnavailable:
                        logger.warning(
                            "thread=%.64r | the state store failed: the run's approvals are lost", run_input.thread_id
                        )

    async def forget(self, thread_id: str) -> None:
        """Drop the thread's record (the app's approval ledger evicted or refused the thread)."""
        await self._store.delete(self._prefix + thread_id)

    async def _write(self, key: str, approvals: ThreadApprovals, stored: bool) -> None:
        data = record.dump(approvals)
        if data is not None:
            await self._store.put(key, data, ttl_s=PAUSED_TTL_S if approvals.paused() else SETTLED_TTL_S)
        elif stored:
            await self._store.delete(key)
