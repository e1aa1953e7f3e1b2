"""A real Redis for the tests: Debian's ``redis-server`` (``make engine``), started by the tests themselves.

Why: the shared store (``store/engine.py``) is only proven against the engine it runs on, and CI has
no Redis service; each use starts its own server on a free loopback port, self-contained (no
persistence, its files in a temporary directory, no config file), and stops it. A test of an
engine that goes away mid-load stops and starts the same server on the same port
(:class:`RedisServer`), or freezes it (``SIGSTOP``) to see an engine that accepts but never answers.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis
from ag_ui.core import RunAgentInput

from app.pipeline import RoutePipeline
from deploy.loopback import LOOPBACK, free_port
from store import MemoryStore
from tests.wire import through_pipeline
from verifier.client import run_input

BINARY = "/usr/bin/redis-server"
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
FLAGS = ("--bind", LOOPBACK, "--save", "", "--appendonly", "no", "--daemonize", "no", "--databases", "1")
"""Loopback only, nothing persisted, in the foreground (so stopping the process stops the server)."""


class RedisServer:
    """One ``redis-server`` on a port of its own; :meth:`stop` and :meth:`start` keep the port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://{LOOPBACK}:{self.port}/0"
        self._dir = Path(tempfile.mkdtemp(prefix="agui-redis-"))
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (the benchmarks read its CPU time)."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the server and return once it answers ``PING``."""
        if not os.path.exists(BINARY):
            raise RuntimeError(f"{BINARY} is missing: run `make engine` (Debian's redis-server)")
        log = self._dir / "redis.log"
        self._process = subprocess.Popen(
            [BINARY, "--port", str(self.port), "--dir", str(self._dir), "--logfile", str(log), *FLAGS],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        with redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=1.0, socket_connect_timeout=1.0) as client:
            while True:
                if self._process.poll() is not None:
                    raise RuntimeError(f"redis-server exited ({self._process.returncode}): {log.read_text()[-2000:]}")
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError(f"redis-server did not answer PING within {START_TIMEOUT_S:g} s")
                time.sleep(0.01)

    def stop(self) -> None:
        """Stop the server (``SIGTERM``, then ``SIGKILL`` if it lingers); its data is gone."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a frozen server must run to hear SIGTERM
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT_S)

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """The server stopped with ``SIGSTOP``: connections are accepted, nothing is answered."""
        assert self._process is not None, "the server is not running"
        self._process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self._process.send_signal(signal.SIGCONT)

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


@contextmanager
def redis_server() -> Iterator[str]:
    """A running ``redis-server`` on a free loopback port, as its URL; stopped afterwards."""
    with RedisServer() as server:
        yield server.url


class RuntimeStateInEngine(MemoryStore):
    """The app's own records in this process's memory, the runtime's thread state in the engine at
    ``url`` (``shared`` and ``url`` are what a runtime's build reads): an engine failure then
    reaches the runtime's persistence seam alone."""

    shared = True

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url


async def drain(pipeline: RoutePipeline, thread_id: str, message: str) -> list[dict]:
    """One run through a route's pipeline (no HTTP), as the events a client decodes."""
    return await through_pipeline(pipeline, RunAgentInput.model_validate(run_input(message, thread_id=thread_id)))


def outcome(events: list[dict]) -> tuple[list[str], str | None]:
    """A run's event types and its last event's code."""
    return [event["type"] for event in events], events[-1].get("code")
