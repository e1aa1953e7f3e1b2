"""Test support: drive a route over real HTTP/SSE and keep what came off the wire.

Used by every route test: ``post_run`` POSTs a real ``RunAgentInput`` to a live server and
returns the raw bytes plus the decoded events, so a test can check the stream with the protocol
verifier and assert on content.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import uvicorn
from ag_ui.core import Event
from pydantic import TypeAdapter

from app.config import Settings
from app.factory import create_app
from verifier import parse_sse

EVENT_ADAPTER: TypeAdapter = TypeAdapter(Event)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def live_server(settings: Settings | None = None) -> Iterator[str]:
    """Run the real app under uvicorn on a free loopback port; yields its base URL."""
    settings = settings or Settings(agui_script_delay_ms=2)
    port = free_port()
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/ok", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    else:
        raise RuntimeError("server did not answer /ok within 30 s")
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def run_input(
    message: str | None = None,
    *,
    thread_id: str | None = None,
    messages: list[dict] | None = None,
    **extra: object,
) -> dict:
    """A RunAgentInput body (wire form). ``message`` appends one user message."""
    history = list(messages or [])
    if message is not None:
        history.append({"id": f"msg-{uuid.uuid4().hex[:8]}", "role": "user", "content": message})
    body: dict = {
        "threadId": thread_id or f"thread-{uuid.uuid4().hex[:8]}",
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": history,
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    body.update(extra)
    return body


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
        outcome = self.terminal.get("outcome") or {}
        return outcome.get("interrupts", []) if outcome.get("type") == "interrupt" else []


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
