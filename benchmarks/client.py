"""The measuring client: stream one run and time it, or fire a burst of simultaneous runs.

The client only counts SSE frames and looks at the last one; it never decodes JSON, so at 500
concurrent streams its own CPU stays small next to the server's (both share this machine).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
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
    gaps: tuple[float, ...] = ()
    """Seconds between each event and the one before it (events read in one chunk: 0)."""

    @property
    def events_per_s(self) -> float:
        return self.events / self.total if self.total > 0 else 0.0


@dataclass
class OpenStreams:
    """How many of a burst's streams have had their first event, and how many have ended."""

    started: int = 0
    ended: int = 0
    samples: list[tuple[int, float]] = field(default_factory=list)
    """(streams open, what the watcher measured at that moment), filled by :func:`watch_open`."""

    @property
    def open(self) -> int:
        return self.started - self.ended


async def timed_run(client: httpx.AsyncClient, url: str, body: bytes, streams: OpenStreams | None = None) -> RunTiming:
    """POST ``body``, read the whole SSE stream; ok means HTTP 200 and a RUN_FINISHED last event.
    ``streams`` counts this stream as open from its first event to its end."""
    start = previous = time.perf_counter()
    first: float | None = None
    events, pending, last = 0, b"", b""
    gaps: list[float] = []
    try:
        async with client.stream("POST", url, content=body, headers=HEADERS) as response:
            if response.status_code != 200:
                await response.aread()
                return RunTiming(False, 0, None, time.perf_counter() - start, f"HTTP {response.status_code}")
            async for chunk in response.aiter_raw():
                *frames, pending = (pending + chunk).split(b"\n\n")
                data = [frame for frame in frames if b"\ndata:" in b"\n" + frame]  # keepalive comments are not events
                if data:
                    now = time.perf_counter()
                    if first is None:
                        first = now - start
                        if streams is not None:
                            streams.started += 1
                    else:
                        gaps.append(now - previous)
                    gaps.extend([0.0] * (len(data) - 1))
                    previous = now
                    events += len(data)
                    last = data[-1]
    except (httpx.HTTPError, OSError) as exc:
        return RunTiming(False, events, first, time.perf_counter() - start, f"{type(exc).__name__}: {exc}")
    finally:
        if streams is not None and first is not None:
            streams.ended += 1
    total = time.perf_counter() - start
    if b'"type":"RUN_FINISHED"' not in last:
        return RunTiming(False, events, first, total, f"stream ended without RUN_FINISHED: {last[:120]!r}")
    return RunTiming(True, events, first, total, gaps=tuple(gaps))


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


async def burst(
    url: str | Sequence[str], bodies: Sequence[bytes], *, timeout_s: float, streams: OpenStreams | None = None
) -> Burst:
    """Start every run at once on its own connection (run i on ``url``, or on ``url[i % len(url)]``
    when it is a list); anything unfinished after ``timeout_s`` is an error (and cancelled), so a
    burst always ends. ``streams`` counts the open ones."""
    urls = [url] if isinstance(url, str) else list(url)
    limits = httpx.Limits(max_connections=len(bodies) + 8, max_keepalive_connections=len(bodies) + 8)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout_s)) as client:
        runs, unfinished, wall = await finish_within(
            [timed_run(client, urls[i % len(urls)], body, streams) for i, body in enumerate(bodies)], timeout_s
        )
    runs += [RunTiming(False, 0, None, wall, f"no end within {timeout_s:.0f} s")] * unfinished
    return Burst(runs, wall)


async def watch_open(streams: OpenStreams, measure: Callable[[], float], every_s: float = 0.05) -> None:
    """Until cancelled: every ``every_s``, record how many streams are open and ``measure()``."""
    while True:
        streams.samples.append((streams.open, measure()))
        await asyncio.sleep(every_s)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (``q`` in 0..100); None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def spread(values: list[float]) -> dict | None:
    """Per-round values as median [min, max]: machine noise shows as their spread."""
    if not values:
        return None
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


async def sequential(url: str, body: Callable[[], bytes], count: int) -> list[RunTiming]:
    """``count`` runs one after the other on one kept-alive connection (``body()`` makes each request)."""
    async with httpx.AsyncClient(timeout=60) as client:
        return [await timed_run(client, url, body()) for _ in range(count)]
