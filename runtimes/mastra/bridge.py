"""The Mastra route's bridge: @ag-ui/mastra's MastraAgent in the app's Node sidecar, and the stages it needs.

The app owns two things for this route (``lifespan``): the loopback endpoint that serves the
sidecar the offline script and the tools' results (``loopback``), and the sidecar process itself
(``sidecar``). A run is one POST of the RunAgentInput to the sidecar, whose SSE events are parsed
back into AG-UI events; closing the stream (a client that left) closes the request, and the sidecar
aborts the Mastra run. A resume answering several interrupts is one sidecar request per entry
(``approvals.sidecar_requests``), read as one run.

The stages, innermost first (``runtimes.base.Stage``): text chunks expanded, model failures named
(``errors``), tool calls shown when Mastra makes them (``events``), the standard interrupt outcome
(``approvals``), state (``state``), a MESSAGES_SNAPSHOT (``events``), the delegation dialect
(``emitters.mastra``), and outermost the strict resume gate (``runtimes.interrupts``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import httpx
from ag_ui.core import BaseEvent, Event, EventType, RunAgentInput, RunStartedEvent
from pydantic import TypeAdapter

from emitters.core import SubagentRun, current_run
from emitters.mastra import translate_delegations
from runtimes import budget, script
from runtimes.base import TERMINAL, HeldThreads, Stage
from runtimes.config import RuntimeSettings
from runtimes.interrupts import InterruptGate
from runtimes.mastra import approvals, errors, events, state
from runtimes.mastra.loopback import LoopbackServer
from runtimes.mastra.sidecar import Sidecar
from runtimes.model_errors import ModelError
from store import Store

logger = logging.getLogger("agui.mastra")

ROUTE = "/mastra/agent"
"""Where the sidecar serves MastraAgent (the same path as the app's route, so the benchmark's bare
bridge is reached at the same URL path)."""
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
EVENT: TypeAdapter = TypeAdapter(Event)
MODEL_CALL = "mastra:model-call"
"""The sidecar's CUSTOM event announcing one model request of the run (``runtimes.budget``: the model is
called from Node, so the run's budget is spent here, in the run's context)."""


def sidecar_env(
    settings: RuntimeSettings, loopback: LoopbackServer, port: int = 0, state_url: str | None = None
) -> dict[str, str]:
    """What the sidecar is configured with: the model (the loopback script, or the user's endpoint),
    the tools' endpoint, the agents' instructions from the script, where it listens, and the shared
    engine its Mastra storage uses (``state_url``; none: Mastra's in-memory store)."""
    scripted = settings.agui_model == "scripted"
    return {
        **({"AGUI_SIDECAR_STATE_URL": state_url} if state_url else {}),
        "AGUI_SIDECAR_PORT": str(port),
        "AGUI_SIDECAR_ROUTE": ROUTE,
        "AGUI_SIDECAR_MODEL_URL": f"{loopback.base}/v1" if scripted else settings.openai_base_url or OPENAI_DEFAULT_URL,
        "AGUI_SIDECAR_MODEL_KEY": loopback.key if scripted else settings.openai_api_key or "",
        "AGUI_MODEL_ID": "scripted" if scripted else settings.agui_model_id,
        "AGUI_MODEL_TIMEOUT_S": str(settings.agui_model_timeout_s),
        "AGUI_MAX_MODEL_CALLS": str(settings.agui_max_model_calls),
        "AGUI_SIDECAR_TOOLS_URL": f"{loopback.base}/tools",
        "AGUI_SIDECAR_TOOLS_KEY": loopback.key,
        "AGUI_SIDECAR_PARENT_INSTRUCTIONS": script.PARENT_INSTRUCTIONS,
        "AGUI_SIDECAR_SPECIALIST_INSTRUCTIONS": script.SPECIALIST_INSTRUCTIONS,
    }


_closing: set[asyncio.Task] = set()


async def _cut(response: httpx.Response) -> None:
    """End a sidecar request before its end, so the sidecar aborts its Mastra run at once.

    A run is cut short when its client leaves, and then it is being cancelled by the server's cancel
    scope, which is level-triggered (anyio) and reaches the run's tasks through their context: an
    awaited close of the response would be cancelled too, leaving the connection (and the Mastra
    run behind it) open until it ends by itself, and the pool holding it. So the socket is shut
    down at once (synchronous: the sidecar sees the request close), and the response is closed in
    a task of its own, in an empty context, which no cancel scope reaches."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:  # on a duplicate of the descriptor: uvloop's socket objects cannot shutdown()
        with contextlib.suppress(OSError), socket.fromfd(sock.fileno(), sock.family, sock.type) as same:
            same.shutdown(socket.SHUT_RDWR)
    closing = asyncio.get_running_loop().create_task(response.aclose(), context=contextvars.Context())
    _closing.add(closing)
    closing.add_done_callback(_closing.discard)
    await asyncio.shield(closing)


class MastraBridge:
    """``POST /mastra/agent``: every run goes to the one sidecar the app owns."""

    interrupt_owner = staticmethod(approvals.interrupt_owner)

    def __init__(self, settings: RuntimeSettings, store: Store) -> None:
        self._settings = settings
        self._state_url = store.url if store.shared else None
        self._runs: dict[str, SubagentRun] = {}  # thread -> its run in flight (whose model calls these are)
        self._loopback = LoopbackServer(delay_s=settings.agui_script_delay_ms / 1000, runs=self._runs.get)
        self._sidecar: Sidecar | None = None
        self._client: httpx.AsyncClient | None = None
        self._gate = InterruptGate(store, "mastra")
        self.stages: tuple[Stage, ...] = (
            events.expand_text_chunks,
            errors.name_model_errors,
            events.tool_calls_on_time,
            approvals.standard_interrupts,
            state.shared_state,
            events.with_messages_snapshot,
            translate_delegations,
            self._gate.stage,
        )

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        await asyncio.to_thread(self._loopback.start)
        self._sidecar = Sidecar(sidecar_env(self._settings, self._loopback, state_url=self._state_url))
        # No kept-alive connections: a connection opened during a run keeps that run's context (and
        # with it the run's emitter state) for as long as it lives; one per run costs nothing on loopback.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0), limits=limits)
        try:
            await self._sidecar.start()
            yield
        finally:
            await self._sidecar.stop()
            await self._client.aclose()
            await asyncio.to_thread(self._loopback.stop)

    def available(self) -> bool:
        return self._sidecar is not None and self._sidecar.port is not None

    @property
    def sidecar(self) -> Sidecar | None:
        """The process this bridge owns (for operators and tests)."""
        return self._sidecar

    async def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        thread = run_input.thread_id
        run = current_run()
        if run is not None:
            self._runs[thread] = run
        try:
            # The run has started once it is the sidecar's: say so at once rather than after the
            # sidecar's own RUN_STARTED, which waits for its turn on the sidecar's one event loop.
            yield RunStartedEvent(thread_id=thread, run_id=run_input.run_id)
            bodies = approvals.sidecar_requests(run_input)
            for index, body in enumerate(bodies):
                last = index == len(bodies) - 1
                async with aclosing(self._post(body)) as stream:  # closing it closes the request at once
                    async for event in stream:
                        if event.type == EventType.CUSTOM and event.name == MODEL_CALL:
                            budget.spend()  # over the run's budget: the run ends, the sidecar's request with it
                            continue
                        if event.type == EventType.RUN_STARTED:
                            continue
                        if event.type == EventType.RUN_FINISHED and not last:
                            continue  # a resume answered in several requests is one run
                        yield event
                        if event.type == EventType.RUN_ERROR:
                            return
        finally:
            if self._runs.get(thread) is run:
                self._runs.pop(thread, None)

    async def _post(self, body: dict[str, Any]) -> AsyncIterator[BaseEvent]:
        port = self._sidecar.port if self._sidecar is not None else None
        if port is None or self._client is None:
            raise httpx.ConnectError("the Mastra sidecar is not running")
        url = f"http://127.0.0.1:{port}{ROUTE}"
        request = self._client.build_request("POST", url, json=body, headers={"accept": "text/event-stream"})
        response = await self._client.send(request, stream=True)
        terminal: BaseEvent | None = None
        try:
            response.raise_for_status()
            async with aclosing(response.aiter_lines()) as lines:
                async for line in lines:
                    if not line.startswith("data:"):
                        continue
                    event = EVENT.validate_json(line[5:])  # parsed and validated in one pass: a third of the time
                    if event.type in TERMINAL:
                        terminal = event  # the sidecar ends the response right after it: read to the end first
                    else:
                        yield event
        except BaseException:
            await _cut(response)
            raise
        await response.aclose()
        if terminal is not None:
            yield terminal

    def describe_error(self, exc: BaseException) -> ModelError | None:
        return errors.describe(exc)

    def held_threads(self) -> HeldThreads:
        return self._gate.held_threads()

    async def stored_threads(self) -> list[str]:
        """The threads whose Mastra runs the sidecar's store holds (suspended ones, between runs)."""
        port = self._sidecar.port if self._sidecar is not None else None
        if port is None or self._client is None:
            return []
        response = await self._client.get(f"http://127.0.0.1:{port}{ROUTE}/threads")
        response.raise_for_status()
        return response.json()["threads"]

    async def forget(self, thread_id: str) -> None:
        """Drop a waiting thread: its open interrupts (the gate) and its suspended Mastra runs (the
        sidecar's store). A sidecar that is down holds nothing: its store went with it."""
        await self._gate.forget(thread_id)
        port = self._sidecar.port if self._sidecar is not None else None
        if port is None or self._client is None:
            return
        try:
            response = await self._client.post(f"http://127.0.0.1:{port}{ROUTE}/forget", json={"threadId": thread_id})
            response.raise_for_status()
        except httpx.HTTPError as exc:
            logger.warning("thread=%s error=%r | the Mastra sidecar did not forget a thread", thread_id, exc)
