"""SSE keepalive for every runtime route, at the transport level.

A run can be silent for a long stretch (a slow model, a specialist thinking), and a proxy's idle
timeout would cut it. This middleware writes an SSE comment (``: keepalive``) whenever an event
stream has been silent for ``interval_s``, on every runtime route alike. Comments are not events:
clients and the protocol ignore them.
"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send

KEEPALIVE_FRAME = b": keepalive\n\n"


class SSEKeepalive:
    def __init__(self, app: ASGIApp, *, paths: frozenset[str], interval_s: float) -> None:
        self.app = app
        self.paths = paths
        self.interval_s = interval_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        pulse = _Pulse(send, self.interval_s)
        try:
            await self.app(scope, receive, pulse.send)
        finally:
            await pulse.stop()


class _Pulse:
    """One response's keepalive: a timer (no task, no lock) that checks how long the stream has been
    silent and, only then, writes a comment. Each ASGI message is written whole by the server, so a
    comment can only ever land between two events, never inside one."""

    def __init__(self, send: Send, interval_s: float) -> None:
        self._send = send
        self._interval_s = interval_s
        self._loop = asyncio.get_running_loop()
        self._last_write = self._loop.time()
        self._streaming = False
        self._finished = False
        self._pending: asyncio.Task | None = None
        self._timer = self._loop.call_later(interval_s, self._tick)

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            self._streaming = headers.get(b"content-type", b"").startswith(b"text/event-stream")
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self._finished = True
        await self._send(message)
        self._last_write = self._loop.time()

    def _tick(self) -> None:
        if self._finished:
            return
        silent_for = self._loop.time() - self._last_write
        if silent_for >= self._interval_s and self._streaming and (self._pending is None or self._pending.done()):
            frame = {"type": "http.response.body", "body": KEEPALIVE_FRAME, "more_body": True}
            self._pending = self._loop.create_task(self.send(frame))
            self._pending.add_done_callback(lambda task: task.cancelled() or task.exception())  # client gone: fine
            silent_for = 0.0
        self._timer = self._loop.call_later(max(self._interval_s - silent_for, 0.001), self._tick)

    async def stop(self) -> None:
        self._finished = True
        self._timer.cancel()
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError, RuntimeError):
                await self._pending
