"""A bounded per-thread agent cache for ag-ui-strands.

The bridge builds one Strands agent per ``threadId`` and keeps it in a plain dict forever. It
accepts any mapping as ``agents_by_thread``; this one keeps the most recently used threads and
drops the least recently used beyond ``max_size``, except threads ``pinned`` says must stay: a run
in flight (dropping its agent would fail the run) or an approval waiting on the agent's interrupt
checkpoint (dropping it would lose the paused conversation). How many threads may wait is the
app's approval ledger's to bound (``app/approvals.py``), which drops a waiting thread through the
bridge, never silently. Pinned threads may hold the cache above ``max_size``; ``trim`` (called
when a run ends) brings it back down as far as idle threads allow.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

Pinned = Callable[[str, Any], bool]
Evicted = Callable[[str], None]


class ThreadAgentCache(MutableMapping[str, Any]):
    """Least-recently-used ``thread_id -> agent`` map that never drops a pinned thread."""

    def __init__(self, max_size: int, *, pinned: Pinned, on_evict: Evicted | None = None) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self._agents: OrderedDict[str, Any] = OrderedDict()
        self._max_size = max_size
        self._pinned = pinned
        self._on_evict = on_evict

    def __getitem__(self, thread_id: str) -> Any:
        agent = self._agents[thread_id]
        self._agents.move_to_end(thread_id)
        return agent

    def __setitem__(self, thread_id: str, agent: Any) -> None:
        self._agents[thread_id] = agent
        self._agents.move_to_end(thread_id)
        self._evict(keep=thread_id)

    def __delitem__(self, thread_id: str) -> None:
        del self._agents[thread_id]

    def __contains__(self, thread_id: object) -> bool:
        return thread_id in self._agents

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._agents))

    def __len__(self) -> int:
        return len(self._agents)

    def trim(self) -> None:
        """Bring the cache back toward ``max_size`` now (the bridge calls this when a run ends:
        under concurrent load every thread is pinned by its run when it is stored)."""
        self._evict(keep=None)

    def _evict(self, *, keep: str | None) -> None:
        excess = len(self._agents) - self._max_size
        for thread_id in list(self._agents):  # least recently used first
            if excess <= 0:
                return
            agent = self._agents[thread_id]
            if thread_id == keep or self._pinned(thread_id, agent):
                continue
            del self._agents[thread_id]
            excess -= 1
            if self._on_evict is not None:
                self._on_evict(thread_id)
