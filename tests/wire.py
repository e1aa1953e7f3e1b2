"""Test support: run the real app, drive its routes over real HTTP/SSE, keep what came off the wire.

``serve`` (or ``live_server`` for just the URL) runs the app under uvicorn on loopback and lets a
test look inside (its loop's tasks, its routes' pipelines). ``post_run`` / ``arun`` POST a real
``RunAgentInput`` and return the raw bytes plus the decoded events, so a test can check the stream
with the protocol verifier and assert on content; every async read has a hard deadline.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from ag_ui.core import BaseEvent, Event, RunAgentInput
from fastapi import FastAPI
from pydantic import TypeAdapter
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import Settings
from app.factory import create_app
from app.pipeline import RoutePipeline
from app.registry import RUNTIMES
from deploy.loopback import LOOPBACK, free_port, loopback_socket, wait_until_ok
from verifier import parse_sse, scenarios
from verifier.client import interrupts, run_input

__all__ = ["free_port", "run_input"]  # re-exported: what every test module builds requests with

EVENT_ADAPTER: TypeAdapter = TypeAdapter(Event)
ROUTES: tuple[str, ...] = tuple(runtime.route for runtime in RUNTIMES)
RUNTIME_BY_ROUTE = {runtime.route: runtime for runtime in RUNTIMES}


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
    """A running app the test can look inside: its base URL, its routes' pipelines, its loop."""

    base: str
    app: FastAPI
    probe: _LoopProbe

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self.probe.loop is not None, "the server has not served a request yet"
        return self.probe.loop

    def pipeline(self, route: str) -> RoutePipeline:
        return self.app.state.pipelines[route]

    def on_loop(self, function, timeout_s: float = 10):  # noqa: ANN001, ANN201 - any callable, its result
        """``function()`` called on the server's loop (consistent with what the loop is doing)."""

        async def call():  # noqa: ANN202
            return function()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout=timeout_s)

    def tasks(self) -> list[asyncio.Task]:
        """The server loop's tasks right now."""
        return self.on_loop(lambda: [task for task in asyncio.all_tasks() if task is not asyncio.current_task()])

    def settle(self, baseline: int, *, within_s: float) -> tuple[float, list[asyncio.Task]]:
        """Wait until the loop has no more tasks than ``baseline``; (seconds taken, tasks left)."""
        started = time.monotonic()
        while True:
            tasks = self.tasks()
            elapsed = time.monotonic() - started
            if len(tasks) <= baseline or elapsed > within_s:
                return elapsed, tasks
            time.sleep(0.05)


@contextmanager
def serve(settings: Settings | None = None) -> Iterator[Server]:
    """Run the real app under uvicorn, in this process, on a free loopback port."""
    settings = settings or Settings(agui_script_delay_ms=2)
    app = create_app(settings)
    probe = _LoopProbe(app)
    sock = loopback_socket()
    server = uvicorn.Server(uvicorn.Config(probe, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://{LOOPBACK}:{sock.getsockname()[1]}"
    try:
        # 120 s: the lifespan waits for a sidecar to listen (38-40 s to /ok at load 13 on two cores)
        wait_until_ok(base, timeout_s=120, alive=thread.is_alive)
        yield Server(base, app, probe)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def live_server(settings: Settings | None = None) -> Iterator[str]:
    """:func:`serve`, when the test only needs the base URL."""
    with serve(settings) as server:
        yield server.base


class PipelineRun:
    """One run through a route's pipeline with no HTTP: iterate it for each event and its SSE frame
    as the run delivers them (it is the run's ``app.pipeline.Delivery``); a reader that leaves early,
    or is cancelled, stops the run. ``run`` is the pipeline's handle on it (``end_by``, ``stop``)."""

    def __init__(self, pipeline: RoutePipeline, body: RunAgentInput, principal: str = "") -> None:
        self._delivered: asyncio.Queue[tuple[BaseEvent, bytes] | None] = asyncio.Queue()
        self.run = pipeline.open(body, principal, self)

    def send(self, event: BaseEvent, frame: bytes) -> None:
        self._delivered.put_nowait((event, frame))

    def room(self) -> None:
        return None

    async def finish(self) -> None:
        self._delivered.put_nowait(None)

    async def __aiter__(self) -> AsyncIterator[tuple[BaseEvent, bytes]]:
        try:
            while (delivered := await self._delivered.get()) is not None:
                yield delivered
        finally:
            self.run.stop()


async def through_pipeline(pipeline: RoutePipeline, body: RunAgentInput) -> list[dict]:
    """One whole run through a route's pipeline (no HTTP), as the events a client decodes."""
    return parse_sse(b"".join([frame async for _, frame in PipelineRun(pipeline, body)]))


def answered_tool_call(call: dict, arguments: str, answer: str) -> list[dict]:
    """The messages a client appends after running a frontend tool the agent called
    (``call`` is the TOOL_CALL_START event): the assistant's call, then the tool's answer."""
    tool_call = {
        "id": call["toolCallId"],
        "type": "function",
        "function": {"name": call["toolCallName"], "arguments": arguments},
    }
    return [
        {"id": f"assistant-{call['toolCallId']}", "role": "assistant", "toolCalls": [tool_call]},
        {"id": f"tool-{call['toolCallId']}", "role": "tool", "toolCallId": call["toolCallId"], "content": answer},
    ]


@dataclass
class Run:
    """What one POST put on the wire."""

    status: int
    raw: bytes
    events: list[dict] = field(default_factory=list)
    arrival: list[float] = field(default_factory=list)  # monotonic time each event arrived

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    def of_type(self, kind: str) -> list[dict]:
        return [event for event in self.events if event["type"] == kind]

    def text(self, subagent: bool | None = None) -> str:
        """Concatenated TEXT_MESSAGE_CONTENT deltas; ``subagent`` filters by attribution."""
        return "".join(
            event["delta"]
            for event in self.of_type("TEXT_MESSAGE_CONTENT")
            if subagent is None or ("subagentRunId" in event) == subagent
        )

    @property
    def terminal(self) -> dict:
        return self.events[-1]

    def interrupts(self) -> list[dict]:
        return interrupts(self.events)


class StreamReader:
    """Decodes an SSE body chunk by chunk as it arrives, timing each event; ``run()`` ends it."""

    def __init__(self) -> None:
        self.raw = b""
        self._pending = b""
        self._events: list[dict] = []
        self._arrival: list[float] = []

    def feed(self, chunk: bytes) -> None:
        self.raw += chunk
        self._pending = (self._pending + chunk).replace(b"\r\n", b"\n")
        *frames, self._pending = self._pending.split(b"\n\n")
        decoded = parse_sse(b"\n\n".join(frames) + b"\n\n") if frames else []
        self._events.extend(decoded)
        self._arrival.extend([time.monotonic()] * len(decoded))

    def run(self, status: int) -> Run:
        """The finished response; every event is checked against the protocol's pydantic models."""
        if status != 200:
            return Run(status=status, raw=self.raw)
        events = self._events + parse_sse(self._pending)
        for event in events:
            EVENT_ADAPTER.validate_python(event)
        return Run(status=status, raw=self.raw, events=events, arrival=self._arrival)


REQUEST_HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}


def post_run(base: str, route: str, body: dict | bytes, *, headers: dict | None = None, timeout: float = 60) -> Run:
    """POST ``body`` to ``route`` and read the whole SSE stream, timing each event's arrival."""
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    reader = StreamReader()
    with httpx.stream(
        "POST", f"{base}{route}", content=payload, headers={**REQUEST_HEADERS, **(headers or {})}, timeout=timeout
    ) as response:
        for chunk in response.iter_bytes():
            reader.feed(chunk)
    return reader.run(response.status_code)


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
    """POST one run and read the whole stream, failing if it takes longer than ``deadline_s`` (a
    stream that hangs, or sends only keepalive comments, fails the test instead of hanging it)."""
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


async def read_until(base: str, route: str, body: dict, first: str) -> list[dict]:
    """Read the run's stream up to and including its first ``first`` event, then drop the connection."""
    seen: list[dict] = []
    async with open_stream(base, route, body) as events:
        async for event in events:
            seen.append(event)
            if event["type"] == first:
                break
    return seen


@dataclass(frozen=True)
class Exchange:
    """One request of a scenario and what the route answered."""

    request: dict
    run: Run


def play(base: str | Sequence[str], route: str, scenario: scenarios.Scenario) -> list[Exchange]:
    """Drive ``scenario`` (``verifier.scenarios``) on ``route``, keeping every response's bytes.
    With several bases (replicas of one server), each request goes to the next one in turn."""
    bases = [base] if isinstance(base, str) else list(base)
    exchanges: list[Exchange] = []

    def post(body: dict) -> list[dict]:
        run = post_run(bases[len(exchanges) % len(bases)], route, body)
        if run.status != 200:
            raise RuntimeError(f"{route} {scenario.surface}: HTTP {run.status}: {run.raw[:500]!r}")
        exchanges.append(Exchange(body, run))
        return run.events

    scenarios.play(scenario, post)
    return exchanges
