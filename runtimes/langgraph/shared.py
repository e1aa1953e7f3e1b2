"""The LangGraph route's threads with shared state (``AGUI_STATE_URL``): the engine holds them, no process does.

Why: with several workers or replicas a run of a thread may land on any of them, and the run before
it may have been anywhere. What a later run depends on is the thread's graph state (LangGraph's
checkpoints: the conversation, a paused approval, a paused specialist) and the route's note of which
subagent waits under which id (``subagents.NativeSubagents``). So, when the store is shared:

* the graph's checkpointer is :class:`runtimes.langgraph.engine_saver.EngineSaver`, in the engine,
  read and written by LangGraph itself as the graph runs; nothing of a thread is cached here, so
  every run starts from the engine's state (a replica that served the thread before has no copy to
  go on from);
* a thread's keys expire by time instead of ``AGUI_THREAD_CACHE_SIZE``: :data:`IDLE_TTL_S` after
  its last run, :data:`PAUSED_TTL_S` after a run that ended waiting for an approval (an hour past
  the interrupt gate's record of it, so the gate never lets a resume through to a graph state that
  is gone); the app's approval ledger bounds how many wait, and drops one through ``forget`` on any
  replica;
* a run during which the engine failed ends with ``STATE_UNAVAILABLE`` (the pipeline's code for a
  ``store.StoreUnavailable``), where ag-ui-langgraph would answer its own RUN_ERROR without a code.

Every run holds its thread's lease (``app/runs.py``), so nothing else reads or writes the thread's
keys while it goes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Set
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType, RunAgentInput

from runtimes.interrupts import OPEN_TTL_S
from runtimes.langgraph import engine_saver
from runtimes.langgraph.engine_saver import EngineSaver

IDLE_TTL_S = 24 * 3600.0
"""A thread with nothing waiting: a day after its last run (a thread whose state expired starts
again from the request's ``messages``, as a dropped thread does in memory)."""
PAUSED_TTL_S = OPEN_TTL_S + 3600.0
"""A thread waiting for an approval: an hour past the interrupt gate's record of it (30 days)."""


class EngineCheckpoints:
    """The route's checkpointer in the engine at ``url``: this process holds no thread."""

    def __init__(self, url: str) -> None:
        self.saver = EngineSaver(url, ttl_s=IDLE_TTL_S)

    def touch(self, thread_id: str) -> None:
        """Nothing to note: the engine's expiry bounds the threads."""

    def threads(self) -> frozenset[str]:
        return frozenset()

    async def forget(self, thread_id: str) -> None:
        await self.saver.adelete_thread(thread_id)

    def trim(self, *, running: Set[str], paused: Set[str]) -> None:
        """Nothing to trim: the engine's expiry bounds the threads."""

    async def stage(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The run's engine failures as ``StoreUnavailable`` instead of the bridge's RUN_ERROR, and
        the thread's expiry set before its terminal event goes out (longer if it waits for an answer)."""
        engine_saver.watch()
        async with aclosing(events):
            async for event in events:
                if event.type == EventType.RUN_ERROR and (failed := engine_saver.failure()) is not None:
                    raise failed
                if event.type == EventType.RUN_FINISHED:
                    waiting = getattr(getattr(event, "outcome", None), "interrupts", None)
                    await self.saver.keep(run_input.thread_id, ttl_s=PAUSED_TTL_S if waiting else IDLE_TTL_S)
                yield event
