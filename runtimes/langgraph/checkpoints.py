"""The route's checkpointer, bounded by thread: LangGraph's ``InMemorySaver`` plus an LRU of threads.

Why: LangGraph keeps a thread's whole graph state (its conversation, a paused approval, a paused
specialist) in the checkpointer, and ``InMemorySaver`` keeps every thread forever. This keeps the
``max_threads`` most recently used threads (``AGUI_THREAD_CACHE_SIZE``) and deletes the others
with the saver's own ``delete_thread``, with two exceptions, like the other routes' caches:

* a thread with a run in flight is never dropped (its run would lose its state mid-way);
* a thread waiting for an approval is dropped only after every idle thread, least recently used
  first, so approvals nobody answers cannot grow it beyond ``max_threads``.

Which threads are running or waiting is not this module's to know: ``trim`` is handed both (the
route's interrupt gate knows them). Under load every thread is running when it is touched, so the
route trims when each run ends.
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

    def trim(self, *, running: Set[str], paused: Set[str]) -> None:
        """Back to ``max_threads``: idle threads first, then paused ones; never a running one."""
        excess = len(self._threads) - self._max_threads
        for take_paused in (False, True):
            for thread_id in list(self._threads):
                if excess <= 0:
                    return
                if thread_id in running or (thread_id in paused) != take_paused:
                    continue
                del self._threads[thread_id]
                self.saver.delete_thread(thread_id)
                excess -= 1
