"""One structured log line per run: runtime, thread, run, event counts, duration, outcome.

At INFO, or at WARNING when the run ended in RUN_ERROR: then it is the one line a failure gets
(its ``outcome`` carries the code); the bridges' own records, tracebacks included, appear only
with ``LOG_LEVEL=debug``. No message content and no secrets: only ids, counts and codes.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType

logger = logging.getLogger("agui.run")
ID_IN_LOG = 128
"""Ids come from clients: the log keeps at most this many characters of each."""


def _short(value: str) -> str:
    return value if len(value) <= ID_IN_LOG else value[:ID_IN_LOG] + "…"


async def log_run(
    frames: AsyncIterator[tuple[BaseEvent, bytes]], *, runtime: str, thread_id: str, run_id: str
) -> AsyncIterator[bytes]:
    """Send each event's frame and log a summary of the events when the stream ends, however it ends."""
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    outcome = "disconnected"
    try:
        async with aclosing(frames):
            async for event, frame in frames:
                counts[event.type.value] += 1
                if event.type == EventType.RUN_FINISHED:
                    outcome = getattr(event.outcome, "type", None) or "success"
                elif event.type == EventType.RUN_ERROR:
                    outcome = f"error:{event.code or 'UNKNOWN'}"
                yield frame
    finally:
        logger.log(
            logging.WARNING if outcome.startswith("error:") else logging.INFO,
            json.dumps(
                {
                    "event": "run",
                    "runtime": runtime,
                    "threadId": _short(thread_id),
                    "runId": _short(run_id),
                    "outcome": outcome,
                    "durationMs": round((time.perf_counter() - started) * 1000, 1),
                    "events": dict(counts),
                },
                separators=(",", ":"),
            ),
        )
