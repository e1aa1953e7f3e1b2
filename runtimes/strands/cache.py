"""A bounded per-thread agent cache for ag-ui-strands.

The bridge builds one Strands agent per ``threadId`` and keeps it in a plain dict forever. It
accepts any mapping as ``agents_by_thread``; this one keeps the most recently used threads and
drops the least recently used beyond ``max_size``, with two exceptions:

* threads ``pinned`` says must stay (a run in flight: dropping its agent would fail the run) are
  never dropped. They may hold the cache above ``max_size`` while they run; ``trim`` (called
  when a run ends) brings it back down.
* threads ``held`` says should stay (an approval waiting on the agent's interrupt checkpoint:
  dropping it loses the paused conversation) are dropped only after every idle thread, the least
  recently used first. So approvals nobody answers cannot grow the cache beyond ``max_size``; a
  resume that arrives after its thread was dropped gets the bridge's RUN_ERROR for an unknown
  interrupt.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

Pinned = Callable[[str, Any], bool]
Evicted = Callable[[str], None]


class ThreadAgentCache(MutableMapping[str, Any]):
    """Least-recently-used ``thread_id -> agent`` map that never drops a pinned thread and drops a
    held one only when no idle thread is left to drop."""

    def __init__(
        self,
        max_size: int,
        *,
        pinned: Pinned,
        held: Pinned = lambda thread_id, agent: False,
        on_evict: Evicted | None = None,
    ) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self._agents: OrderedDict[str, Any] = OrderedDict()
        self._max_size = max_size
        self._pinned = pinned
        self._held = held
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

    def trim(self) -> None:
        """Bring the cache back to ``max_size`` now: idle threads first, then held ones.

        Storing a thread only drops idle threads other than the one stored (which is about to
        run): under concurrent load every thread is pinned by its run when it is stored, and a
        held thread should not go while the thread about to run may turn out idle. So the cache
        comes back down when runs end; the bridge calls this at the end of every run.
        """
        self._evict(on_store=False)

    def _evict(self, *, on_store: bool = True) -> None:
        excess = len(self._agents) - self._max_size
        candidates = list(self._agents)[:-1] if on_store else list(self._agents)
        for take_held in (False,) if on_store else (False, True):  # idle threads first, then held ones
            for thread_id in candidates:  # least recently used first
                if excess <= 0:
                    return
                agent = self._agents.get(thread_id)
                if agent is None or self._pinned(thread_id, agent) or self._held(thread_id, agent) != take_held:
                    continue
                del self._agents[thread_id]
                excess -= 1
                if self._on_evict is not None:
                    self._on_evict(thread_id)
