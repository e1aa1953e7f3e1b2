"""The Node process the Mastra route stands on: started, watched, restarted, stopped, never orphaned.

Why a supervisor: Mastra is TypeScript-only, so ``POST /mastra/agent`` runs @ag-ui/mastra in a
Node process the app owns (``sidecar/server.mjs``). The app's lifespan starts it and waits until it
listens; if it dies, runs get RUN_ERROR ``RUNTIME_UNAVAILABLE`` at once while it is restarted with
a growing pause (0.2 s, doubling up to 10 s, back to 0.2 s after a minute of good health).

No orphans: the process leads a process group of its own, and stopping kills the whole group
(SIGTERM, then SIGKILL after a grace period). Should the app itself die without stopping it, the
process exits by itself when its stdin (a pipe from the app) closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Mapping

from runtimes.mastra.setup import SIDECAR, node_executable

logger = logging.getLogger("agui.mastra.sidecar")

READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 5.0
FIRST_PAUSE_S = 0.2
MAX_PAUSE_S = 10.0
HEALTHY_AFTER_S = 60.0


class SidecarError(RuntimeError):
    """The sidecar could not be started."""


class Sidecar:
    """One ``node server.mjs`` at a time; :attr:`port` is set while it listens."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._process: asyncio.subprocess.Process | None = None
        self._supervisor: asyncio.Task | None = None
        self._stopping = False
        self._readers: set[asyncio.Task] = set()
        self.port: int | None = None

    async def start(self) -> None:
        """Start the process and wait until it listens, then keep it running (a start that fails
        is retried like a restart: the app boots, and the route says it is unavailable meanwhile)."""
        try:
            await self._spawn()
        except (SidecarError, OSError) as exc:
            logger.warning("error=%s | the Mastra sidecar did not start", exc)
        self._supervisor = asyncio.create_task(self._supervise(), name="mastra-sidecar-supervisor")

    async def stop(self) -> None:
        """Stop supervising and kill the process group; returns once it is gone."""
        self._stopping = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        await self._kill()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.returncode is None else None

    async def _spawn(self) -> None:
        node = node_executable()
        if node is None:
            raise SidecarError("no node >= 22.13 for the Mastra sidecar: run `python -m runtimes.mastra.setup`")
        if not (SIDECAR / "node_modules").exists():
            raise SidecarError("the Mastra sidecar's modules are not installed: run `python -m runtimes.mastra.setup`")
        process = await asyncio.create_subprocess_exec(
            node,
            "server.mjs",
            cwd=SIDECAR,
            env={**os.environ, **self._env},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group: stopping kills everything it started
        )
        self._process = process
        try:
            line = await asyncio.wait_for(process.stdout.readline(), READY_TIMEOUT_S)
            port = int(json.loads(line)["listening"])
        except (TimeoutError, ValueError, KeyError, TypeError) as exc:
            await self._kill()
            raise SidecarError(f"the Mastra sidecar did not start listening: {exc!r}") from exc
        for stream in (process.stdout, process.stderr):
            reader = asyncio.create_task(_log_lines(stream), name="mastra-sidecar-output")
            self._readers.add(reader)
            reader.add_done_callback(self._readers.discard)
        self.port = port
        logger.info("pid=%s port=%s | the Mastra sidecar listens", process.pid, port)

    async def _supervise(self) -> None:
        pause = FIRST_PAUSE_S
        while not self._stopping:
            process = self._process
            started = time.monotonic()
            if process is not None:
                code = await process.wait()
                self.port = None
                await self._kill()
                logger.warning("code=%s pause_s=%s | the Mastra sidecar exited; restarting it", code, pause)
            if time.monotonic() - started > HEALTHY_AFTER_S:
                pause = FIRST_PAUSE_S
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE_S)
            try:
                await self._spawn()
            except (SidecarError, OSError) as exc:
                self._process = None
                logger.warning("error=%s | the Mastra sidecar did not restart", exc)

    async def _kill(self) -> None:
        process = self._process
        self.port = None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                await asyncio.wait_for(process.wait(), grace)
                break
            except TimeoutError:
                continue
        with contextlib.suppress(ProcessLookupError):  # anything left in the group
            os.killpg(process.pid, signal.SIGKILL)


async def _log_lines(stream: asyncio.StreamReader | None) -> None:
    """What the process prints, at debug (it must be read, or a full pipe would stall it)."""
    if stream is None:
        return
    while line := await stream.readline():
        logger.debug("output=%.500r | the Mastra sidecar printed", line.decode(errors="replace").rstrip())
