"""A bounded per-thread agent cache for ag-ui-strands.

The bridge builds one Strands agent per ``threadId`` and keeps it in a plain dict forever. It
accepts any mapping as ``agents_by_thread``; this one keeps the most recently used threads and
drops the least recently used beyond ``max_size`` — except threads ``pinned`` says must stay
(a run in flight, or an approval waiting on the agent's interrupt checkpoint: dropping those
would fail the run or lose the paused conversation). Pinned threads may hold the cache above
``max_size`` until they are released.
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
        self._evict()

    def __delitem__(self, thread_id: str) -> None:
        del self._agents[thread_id]

    def __contains__(self, thread_id: object) -> bool:
        return thread_id in self._agents

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._agents))

    def __len__(self) -> int:
        return len(self._agents)

    def _evict(self) -> None:
        excess = len(self._agents) - self._max_size
        for thread_id in list(self._agents)[:-1]:  # oldest first; never the one just stored
            if excess <= 0:
                return
            if self._pinned(thread_id, self._agents[thread_id]):
                continue
            del self._agents[thread_id]
            excess -= 1
            if self._on_evict is not None:
                self._on_evict(thread_id)
