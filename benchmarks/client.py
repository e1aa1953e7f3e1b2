"""The measuring client: stream one run and time it, or fire a burst of simultaneous runs.

The client only counts SSE frames and looks at the last one; it never decodes JSON, so at 500
concurrent streams its own CPU stays small next to the server's (both share this machine).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}


@dataclass(frozen=True)
class RunTiming:
    """One streamed run, seen from the client. Times are seconds from sending the request."""

    ok: bool
    events: int
    ttfe: float | None
    total: float
    error: str | None = None

    @property
    def events_per_s(self) -> float:
        return self.events / self.total if self.total > 0 else 0.0


async def timed_run(client: httpx.AsyncClient, url: str, body: bytes) -> RunTiming:
    """POST ``body``, read the whole SSE stream; ok means HTTP 200 and a RUN_FINISHED last event."""
    start = time.perf_counter()
    first: float | None = None
    events, pending, last = 0, b"", b""
    try:
        async with client.stream("POST", url, content=body, headers=HEADERS) as response:
            if response.status_code != 200:
                await response.aread()
                return RunTiming(False, 0, None, time.perf_counter() - start, f"HTTP {response.status_code}")
            async for chunk in response.aiter_raw():
                *frames, pending = (pending + chunk).split(b"\n\n")
                data = [frame for frame in frames if b"\ndata:" in b"\n" + frame]  # keepalive comments are not events
                if data:
                    if first is None:
                        first = time.perf_counter() - start
                    events += len(data)
                    last = data[-1]
    except (httpx.HTTPError, OSError) as exc:
        return RunTiming(False, events, first, time.perf_counter() - start, f"{type(exc).__name__}: {exc}")
    total = time.perf_counter() - start
    if b'"type":"RUN_FINISHED"' not in last:
        return RunTiming(False, events, first, total, f"stream ended without RUN_FINISHED: {last[:120]!r}")
    return RunTiming(True, events, first, total)


@dataclass(frozen=True)
class Burst:
    """``len(runs)`` runs started at once; ``wall`` is first request to last stream closed."""

    runs: list[RunTiming]
    wall: float

    @property
    def errors(self) -> list[str]:
        return [run.error or "failed" for run in self.runs if not run.ok]


async def finish_within(runs: Sequence[Coroutine[Any, Any, T]], timeout_s: float) -> tuple[list[T], int, float]:
    """Run ``runs`` at once; cancel whatever has not finished after ``timeout_s`` so the caller
    always ends. Returns (results of the finished, how many were cancelled, wall seconds)."""
    start = time.perf_counter()
    tasks = [asyncio.create_task(run) for run in runs]
    done, pending = await asyncio.wait(tasks, timeout=timeout_s)
    wall = time.perf_counter() - start
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return [task.result() for task in tasks if task in done], len(pending), wall


async def burst(url: str, bodies: Sequence[bytes], *, timeout_s: float) -> Burst:
    """Start every run at once on its own connection; anything unfinished after ``timeout_s`` is an
    error (and cancelled), so a burst always ends."""
    limits = httpx.Limits(max_connections=len(bodies) + 8, max_keepalive_connections=len(bodies) + 8)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout_s)) as client:
        runs, unfinished, wall = await finish_within([timed_run(client, url, body) for body in bodies], timeout_s)
    runs += [RunTiming(False, 0, None, wall, f"no end within {timeout_s:.0f} s")] * unfinished
    return Burst(runs, wall)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (``q`` in 0..100); None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
