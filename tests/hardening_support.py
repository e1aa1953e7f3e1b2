"""Support for the hardening tests: a live server the test can look inside, and bounded clients.

``inspectable_server`` runs the real app under uvicorn on loopback (like ``tests.wire.live_server``)
and also hands the test the server's event loop (to count its tasks) and the runtime objects the
routes serve (to read cache sizes), found without touching product code.

Every client call here has a hard wall-clock deadline: ``arun`` is wrapped in ``asyncio.wait_for``,
so a stream that hangs, or that only ever sends keepalive comments, fails the test instead of
hanging it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import Settings
from app.factory import create_app
from tests.wire import REQUEST_HEADERS, Run, StreamReader, free_port

STRANDS = "/strands/agent"
MSAF = "/msaf/agent"
ROUTES = (STRANDS, MSAF)


class _LoopProbe:
    """Outermost ASGI layer that remembers the loop the server runs on (test-only)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)


@dataclass
class Server:
    base: str
    app: FastAPI
    probe: _LoopProbe

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self.probe.loop is not None, "the server has not served a request yet"
        return self.probe.loop

    def tasks(self) -> list[asyncio.Task]:
        """The server loop's tasks right now (asked on the loop itself, so the answer is consistent)."""

        async def listing() -> list[asyncio.Task]:
            return [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]

        return asyncio.run_coroutine_threadsafe(listing(), self.loop).result(timeout=10)

    def runner(self, route: str) -> Any:
        """The object a runtime route serves (the bridge's agent wrapper), from the endpoint's closure."""
        for candidate in self.app.routes:
            if getattr(candidate, "path", None) == route:
                names = inspect.getclosurevars(candidate.endpoint).nonlocals
                for name in ("agent", "protocol_runner"):  # ag-ui-strands, agent-framework-ag-ui
                    if name in names:
                        return names[name]
                raise AssertionError(f"{route}: the bridge endpoint's closure changed: {sorted(names)}")
        raise AssertionError(f"no route {route}")


@contextmanager
def inspectable_server(settings: Settings) -> Iterator[Server]:
    app = create_app(settings)
    probe = _LoopProbe(app)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(probe, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/ok", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("server did not answer /ok within 30 s")
        time.sleep(0.05)
    try:
        yield Server(base, app, probe)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def settle(server: Server, baseline: int, *, within_s: float) -> tuple[float, list[asyncio.Task]]:
    """Wait until the server loop has no more tasks than ``baseline``; (seconds taken, tasks left)."""
    started = time.monotonic()
    while True:
        tasks = server.tasks()
        elapsed = time.monotonic() - started
        if len(tasks) <= baseline or elapsed > within_s:
            return elapsed, tasks
        time.sleep(0.05)


# --- bounded clients -------------------------------------------------------------------------




async def _read(client: httpx.AsyncClient, url: str, body: dict | bytes, headers: dict) -> Run:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    reader = StreamReader()
    async with client.stream("POST", url, content=payload, headers={**REQUEST_HEADERS, **headers}) as response:
        async for chunk in response.aiter_bytes():
            reader.feed(chunk)
    return reader.run(response.status_code)


async def arun(
    base: str,
    route: str,
    body: dict | bytes,
    *,
    client: httpx.AsyncClient | None = None,
    deadline_s: float = 60,
    headers: dict | None = None,
) -> Run:
    """POST one run and read the whole stream, failing if it takes longer than ``deadline_s``."""
    url = f"{base}{route}"
    if client is not None:
        return await asyncio.wait_for(_read(client, url, body, headers or {}), timeout=deadline_s)
    async with httpx.AsyncClient(timeout=deadline_s) as own:
        return await asyncio.wait_for(_read(own, url, body, headers or {}), timeout=deadline_s)


def run_sync(base: str, route: str, body: dict | bytes, *, deadline_s: float = 60, headers: dict | None = None) -> Run:
    """``arun`` for a synchronous test."""
    return asyncio.run(arun(base, route, body, deadline_s=deadline_s, headers=headers))


@asynccontextmanager
async def open_stream(base: str, route: str, body: dict, *, deadline_s: float = 30) -> AsyncIterator[Any]:
    """Open a run's stream and yield an async iterator of its decoded events; leaving the block
    closes the connection (a client that stops reading and goes away)."""
    async with httpx.AsyncClient(timeout=deadline_s) as client:
        async with client.stream("POST", f"{base}{route}", json=body, headers=REQUEST_HEADERS) as response:
            assert response.status_code == 200

            async def events() -> AsyncIterator[dict]:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        yield json.loads(line[5:])

            yield events()
