"""What every store offers: expiring records, leases, replay logs, and the approval ledger's decision.

Each operation is atomic on its own (one engine command or script), so two processes using one
store never see half of another's write. Keys are plain strings the callers build; a store never
interprets them. Every record expires (``ttl_s``): nothing a crashed process wrote lives forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol


class StoreUnavailable(Exception):
    """The store could not be reached or did not answer in time (the engine is down or restarting).
    Every store raises this, whatever its client library raises underneath."""


@dataclass(frozen=True)
class Parked:
    """The approval ledger's decision for a thread that wants to park (``Store.park``)."""

    verdict: Literal["parked", "refused"]
    evicted: str | None = None
    """The thread evicted to make room (only with ``parked``)."""


class Store(Protocol):
    shared: bool
    """True when other processes see what this one writes (an engine, not this process's memory)."""
    url: str | None
    """The engine's URL (``AGUI_STATE_URL``), for a runtime whose upstream persistence seam needs
    a client of its own (a checkpointer, a session store); None for this process's memory."""

    # --- records ------------------------------------------------------------------------------
    async def get(self, key: str) -> bytes | None:
        """The record at ``key``, or None (never written, deleted or expired)."""

    async def put(self, key: str, value: bytes, *, ttl_s: float) -> None:
        """Write ``key``; it expires ``ttl_s`` seconds from now."""

    async def delete(self, *keys: str) -> None:
        """Remove ``keys`` (absent ones are fine)."""

    # --- leases: a record only one holder may write -------------------------------------------
    async def claim(self, key: str, holder: str, *, ttl_s: float) -> bool:
        """Write ``key`` = ``holder`` only if it does not exist; True if this call wrote it."""

    async def refresh(self, key: str, holder: str, *, ttl_s: float) -> bool:
        """Extend ``key``'s life if ``holder`` still holds it; False if it expired or another holds it."""

    async def release(self, key: str, holder: str) -> None:
        """Remove ``key`` if ``holder`` holds it (never another holder's)."""

    # --- replay logs: numbered frames, in order -----------------------------------------------
    async def append(self, key: str, entries: Sequence[tuple[int, bytes]], *, max_len: int, ttl_s: float) -> None:
        """Add ``entries`` (sequence number, frame), numbers from 1, each above the last; keep at
        least the last ``max_len`` (an engine may keep a few more); the log expires ``ttl_s`` seconds
        after its last append."""

    async def read(self, key: str, after: int, *, count: int, wait_s: float) -> list[tuple[int, bytes]]:
        """Up to ``count`` entries numbered above ``after``, oldest first; when there are none yet,
        wait up to ``wait_s`` seconds for one (an empty list: none came, or there is no such log)."""

    async def first(self, key: str) -> int | None:
        """The number of the oldest entry still kept, or None (no such log, or empty)."""

    # --- the approval ledger (app/approvals.py) ---------------------------------------------
    async def park(self, key: str, thread: str, *, max_parked: int, min_age_s: float, leases: str) -> Parked:
        """Park ``thread`` in the set ``key``, at the store's own clock (one clock for every
        replica). When it is full, evict the longest parked thread that has waited ``min_age_s`` and
        whose lease (``leases`` + thread) is not held, or refuse when there is none."""

    async def unpark(self, key: str, thread: str) -> None:
        """Remove ``thread`` from the set ``key``."""

    async def parked(self, key: str) -> list[str]:
        """The threads parked in ``key``, longest parked first."""

    async def aclose(self) -> None:
        """Release the store's connections."""
