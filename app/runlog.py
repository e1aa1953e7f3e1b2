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

from app.pump import CLIENT_GONE
from runtimes.base import TERMINAL

logger = logging.getLogger("agui.run")
ID_IN_LOG = 128
"""Ids come from clients: the log keeps at most this many characters of each."""


def _short(value: str) -> str:
    return value if len(value) <= ID_IN_LOG else value[:ID_IN_LOG] + "…"


async def log_run(
    frames: AsyncIterator[tuple[BaseEvent, bytes]], *, runtime: str, thread_id: str, run_id: str
) -> AsyncIterator[tuple[BaseEvent, bytes]]:
    """Pass each event and its frame on; log a summary of the events at the terminal event (before
    it goes on, so the line is written when a client has it), or when the stream ends without one."""
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    logged = False

    def log(outcome: str) -> None:
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

    try:
        async with aclosing(frames):
            async for event, frame in frames:
                counts[event.type.value] += 1
                if event.type in TERMINAL:
                    log(_outcome(event))
                    logged = True
                yield event, frame
    finally:
        if not logged:
            log("disconnected")


def _outcome(terminal: BaseEvent) -> str:
    if terminal.type == EventType.RUN_FINISHED:
        return getattr(terminal.outcome, "type", None) or "success"
    if terminal.code == CLIENT_GONE:
        return "disconnected"  # not a failure: nobody was reading any more
    return f"error:{terminal.code or 'UNKNOWN'}"
