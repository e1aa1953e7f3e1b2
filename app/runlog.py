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

from ag_ui.core import BaseEvent, EventType

from app.pump import CLIENT_GONE
from runtimes.base import TERMINAL

logger = logging.getLogger("agui.run")
ID_IN_LOG = 128
"""Ids come from clients: the log keeps at most this many characters of each."""


def _short(value: str) -> str:
    return value if len(value) <= ID_IN_LOG else value[:ID_IN_LOG] + "…"


class RunLog:
    """One run's summary line: :meth:`seen` counts each event the run's clients are sent and logs
    the line at the terminal event (before it goes out, so the line is written when a client has
    it); :meth:`ended` logs it for a run that ended without one."""

    def __init__(self, *, runtime: str, thread_id: str, run_id: str) -> None:
        self._runtime = runtime
        self._thread_id = thread_id
        self._run_id = run_id
        self._started = time.perf_counter()
        self._counts: Counter[str] = Counter()
        self._logged = False

    def seen(self, event: BaseEvent) -> None:
        self._counts[event.type.value] += 1
        if event.type in TERMINAL:
            self._log(_outcome(event))

    def ended(self) -> None:
        if not self._logged:
            self._log("disconnected")

    def _log(self, outcome: str) -> None:
        self._logged = True
        logger.log(
            logging.WARNING if outcome.startswith("error:") else logging.INFO,
            json.dumps(
                {
                    "event": "run",
                    "runtime": self._runtime,
                    "threadId": _short(self._thread_id),
                    "runId": _short(self._run_id),
                    "outcome": outcome,
                    "durationMs": round((time.perf_counter() - self._started) * 1000, 1),
                    "events": dict(self._counts),
                },
                separators=(",", ":"),
            ),
        )


def _outcome(terminal: BaseEvent) -> str:
    if terminal.type == EventType.RUN_FINISHED:
        return getattr(terminal.outcome, "type", None) or "success"
    if terminal.code == CLIENT_GONE:
        return "disconnected"  # not a failure: nobody was reading any more
    return f"error:{terminal.code or 'UNKNOWN'}"
