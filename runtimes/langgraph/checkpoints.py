"""The route's checkpointer, bounded by thread: LangGraph's ``InMemorySaver`` plus an LRU of threads.

Why: LangGraph keeps a thread's whole graph state (its conversation, a paused approval, a paused
specialist) in the checkpointer, and ``InMemorySaver`` keeps every thread forever. This keeps the
``max_threads`` most recently used idle threads (``AGUI_THREAD_CACHE_SIZE``) and deletes the
others with the saver's own ``delete_thread``, like the other routes' caches: never a thread with
a run in flight (its run would lose its state mid-way), never one waiting for an approval (those
are the app's approval ledger's to bound, ``app/approvals.py``, which lets one go through
:meth:`ThreadCheckpoints.forget`). With shared state the route uses ``shared.EngineCheckpoints``
instead, in the engine.

Which threads are running or waiting is not this module's to know: ``trim`` is handed both (the
route's bridge and its interrupt gate know them). Under load every thread is running when it is
touched, so the route trims when each run ends.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Set

from langgraph.checkpoint.memory import InMemorySaver


class ThreadCheckpoints:
    """``InMemorySaver`` for the route's graph, and which threads it holds, least recently used first."""

    def __init__(self, max_threads: int) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self.saver = InMemorySaver()
        self._threads: OrderedDict[str, None] = OrderedDict()
        self._max_threads = max_threads

    def touch(self, thread_id: str) -> None:
        """The thread is used now (call it before the graph reads or writes the thread)."""
        self._threads[thread_id] = None
        self._threads.move_to_end(thread_id)

    def threads(self) -> frozenset[str]:
        return frozenset(self._threads)

    async def forget(self, thread_id: str) -> None:
        """Delete the thread's graph state (its run, if any, is over)."""
        self._drop(thread_id)

    def _drop(self, thread_id: str) -> None:
        self._threads.pop(thread_id, None)
        self.saver.delete_thread(thread_id)

    def trim(self, *, running: Set[str], paused: Set[str]) -> None:
        """Back to ``max_threads`` as far as idle threads allow, least recently used first."""
        excess = len(self._threads) - self._max_threads
        for thread_id in list(self._threads):
            if excess <= 0:
                return
            if thread_id in running or thread_id in paused:
                continue
            self._drop(thread_id)
            excess -= 1
