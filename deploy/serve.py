"""The one way this server starts: ``python -m deploy.serve``.

The container image, ``make serve`` and the boot check all run this module, so how the
server binds, how many workers it runs, which proxies it trusts and how it logs is decided
in one place, from the environment:

=====================  =============  ===================================================
variable               default        meaning
=====================  =============  ===================================================
HOST                   127.0.0.1      bind address (the image sets 0.0.0.0)
PORT                   8000           bind port
AGUI_WORKERS           1              worker processes; more than one needs AGUI_STATE_URL
                                      (thread state shared by the workers, see below)
FORWARDED_ALLOW_IPS    127.0.0.1      proxies whose X-Forwarded-* headers are trusted
                                      (comma list, or * behind a platform's proxy)
LOG_LEVEL              info           critical, error, warning, info, debug, trace
LOG_FORMAT             plain          plain: one readable line; json: one JSON object
SHUTDOWN_TIMEOUT_S     6              on SIGTERM, open SSE streams get this long to end (a
                                      run still going a second before ends with RUN_ERROR
                                      SERVER_SHUTDOWN); keep it under the platform's stop
                                      timeout (docker: 10 s), or the process is killed first
HEADER_TIMEOUT_S       10             a request's headers must arrive within this
LIMIT_CONCURRENCY      1000           connections + requests in flight; more get HTTP 503
TIMEOUT_KEEP_ALIVE_S   5              an idle keep-alive connection is closed after this
=====================  =============  ===================================================

The app's own settings (``AGUI_MODEL``, ``OPENAI_BASE_URL``, ...) are read by
``app.config.Settings`` when uvicorn calls the factory; they are checked here first, so a bad
value stops the start with one line naming the variable. HTTP runs on ``deploy.http.GuardedHttp``
(header deadline, graceful end of streams on shutdown).

The collector: the app is built (every runtime imported: hundreds of thousands of objects that
live as long as the process), then ``gc.freeze()`` moves them out of the collector's sight and the
youngest generation's threshold goes from 700 to :data:`GC_THRESHOLD_0` allocations. Why: each
stream allocates many short-lived objects, and at 200 concurrent runs the default collector ran a
full collection every ~50 runs over all of those permanent objects: 4.6 s of 15.7 s of the server's
CPU over 820 MAF runs (docs/performance.md). Garbage without cycles is still freed at once; cyclic
garbage waits a little longer for the collector.

Workers: without ``AGUI_STATE_URL``, thread state (pending approvals, per-thread agents, replay
logs) lives in the memory of the one process, and more than one worker is refused at start: a
resume or a reconnect landing on another worker would not find its thread. With it, every worker
keeps thread state in that engine, and any worker (or replica) serves any request.
"""

from __future__ import annotations

import gc
import json
import logging
import logging.config
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError

from app.config import Settings
from app.factory import create_app
from app.registry import RUNTIMES

APP_FACTORY = "deploy.serve:served_app"
GC_THRESHOLD_0 = 7000
"""Allocations (minus deallocations) between two collections of the youngest generation (default 700)."""
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
LOG_FORMATS = ("plain", "json")
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
BRIDGE_LOGGERS = tuple(name for runtime in RUNTIMES for name in runtime.loggers)
"""The runtimes and bridges log every event at INFO and every failure of a run, at length, with
tracebacks (one model failure is three or four records). Below debug they are silent but for
CRITICAL: the run's own line from ``app.runlog`` speaks for them, one per run, at WARNING with the
RUN_ERROR code when the run failed. ``LOG_LEVEL=debug`` shows all of their records."""


@dataclass(frozen=True)
class ServeConfig:
    """How uvicorn runs, as read from the environment."""

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    forwarded_allow_ips: str = "127.0.0.1"
    log_level: str = "info"
    log_format: str = "plain"
    shutdown_timeout_s: int = 6
    header_timeout_s: int = 10
    limit_concurrency: int = 1000
    timeout_keep_alive_s: int = 5

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServeConfig:
        """Read and validate; a bad value raises ``ValueError`` naming the variable."""
        config = cls(
            host=env.get("HOST", cls.host),
            port=_int(env, "PORT", cls.port, low=1, high=65535),
            workers=_int(env, "AGUI_WORKERS", cls.workers, low=1),
            forwarded_allow_ips=env.get("FORWARDED_ALLOW_IPS", cls.forwarded_allow_ips),
            log_level=env.get("LOG_LEVEL", cls.log_level).strip().lower(),
            log_format=env.get("LOG_FORMAT", cls.log_format).strip().lower(),
            shutdown_timeout_s=_int(env, "SHUTDOWN_TIMEOUT_S", cls.shutdown_timeout_s, low=0),
            header_timeout_s=_int(env, "HEADER_TIMEOUT_S", cls.header_timeout_s, low=1),
            limit_concurrency=_int(env, "LIMIT_CONCURRENCY", cls.limit_concurrency, low=1),
            timeout_keep_alive_s=_int(env, "TIMEOUT_KEEP_ALIVE_S", cls.timeout_keep_alive_s, low=1),
        )
        if config.workers > 1 and not env.get("AGUI_STATE_URL", "").strip():
            raise ValueError(
                f"AGUI_WORKERS={config.workers} needs AGUI_STATE_URL (redis://host:port/db): without shared "
                "state, a resume or a reconnect that lands on another worker would not find its thread"
            )
        if config.log_level not in LOG_LEVELS:
            raise ValueError(f"LOG_LEVEL={config.log_level!r} is not one of {', '.join(LOG_LEVELS)}")
        if config.log_format not in LOG_FORMATS:
            raise ValueError(f"LOG_FORMAT={config.log_format!r} is not one of {', '.join(LOG_FORMATS)}")
        return config


def _int(env: Mapping[str, str], name: str, default: int, *, low: int, high: int | None = None) -> int:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < low:
        raise ValueError(f"{name}={value} must be at least {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value} must be at most {high}")
    return value


class JsonFormatter(logging.Formatter):
    """One JSON object per line, for log collectors that parse fields instead of text."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def log_config(config: ServeConfig) -> dict:
    """A ``logging.dictConfig`` that sends uvicorn's and the app's records through one formatter.

    uvicorn's loggers propagate to the root handler instead of keeping their own, so access
    lines, server lines and app lines share the format chosen by ``LOG_FORMAT``.
    """
    formatter = {"()": f"{__name__}.JsonFormatter"} if config.log_format == "json" else {"format": PLAIN_FORMAT}
    level = "DEBUG" if config.log_level == "trace" else config.log_level.upper()  # trace is uvicorn's own level
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"main": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "main", "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            **{name: {"handlers": [], "propagate": True} for name in ("uvicorn", "uvicorn.access")},
            **({} if level == "DEBUG" else {name: {"level": "CRITICAL"} for name in BRIDGE_LOGGERS}),
        },
    }


def served_app() -> FastAPI:
    """The app as a server process serves it (uvicorn calls this in each worker): built, then the
    collector set up for a long-lived server (see the module docstring)."""
    app = create_app()
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD_0, *gc.get_threshold()[1:])
    return app


def settings_problem() -> str | None:
    """What is wrong with the app's settings in this environment, in one line, or None."""
    try:
        Settings()
    except ValidationError as error:
        return "; ".join(
            f"{str(problem['loc'][0]).upper()}={problem.get('input')!r}: {problem['msg']}" for problem in error.errors()
        )
    return None


def main() -> None:
    try:
        config = ServeConfig.from_env(os.environ)
    except ValueError as error:
        sys.exit(f"deploy.serve: {error}")
    problem = settings_problem()
    if problem is not None:
        sys.exit(f"deploy.serve: {problem}")
    # uvicorn stops gracefully on SIGTERM, then raises the signal again for the handler in place
    # before it started: this one, so a clean stop (docker stop) exits 0, not 143.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    logging.config.dictConfig(log_config(config))
    try:
        uvicorn.run(
            APP_FACTORY,
            factory=True,
            host=config.host,
            port=config.port,
            workers=config.workers,
            proxy_headers=True,
            forwarded_allow_ips=config.forwarded_allow_ips,
            log_level=config.log_level,
            log_config=log_config(config),
            timeout_graceful_shutdown=config.shutdown_timeout_s,
            http="deploy.http:GuardedHttp",
            limit_concurrency=config.limit_concurrency,
            timeout_keep_alive=config.timeout_keep_alive_s,
        )
    finally:
        # The server has stopped; the process only exits now. Without this, the interpreter's
        # last garbage collection walks every object the runtimes' libraries built (seconds on a
        # busy machine: 4-5 s measured with four runtimes at load 8), and the platform's stop
        # timeout (docker: 10 s) counts them after SHUTDOWN_TIMEOUT_S. Frozen, they are not walked.
        gc.freeze()


if __name__ == "__main__":
    main()
