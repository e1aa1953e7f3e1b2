"""Where the server's thread state lives: this process's memory, or a shared engine.

Why: with state in one process's memory, the server runs as one process, and a resume or a
reconnect must reach the process that served the run. With ``AGUI_STATE_URL`` set, everything a
later request of a thread depends on (the lease that says a run is in flight, the interrupts a
resume must answer, the parked approvals, a run's replay log) lives in the engine instead, so any
worker or replica serves any request. The generic code sees one :class:`~store.base.Store`, the same
in both cases; :func:`open_store` picks the implementation.
"""

from __future__ import annotations

from store.base import Parked, Store, StoreUnavailable
from store.memory import MemoryStore


def open_store(url: str | None) -> Store:
    """The store for ``AGUI_STATE_URL``: this process's memory when unset."""
    if not url:
        return MemoryStore()
    from store.engine import RedisStore

    return RedisStore(url)


__all__ = ["MemoryStore", "Parked", "Store", "StoreUnavailable", "open_store"]
