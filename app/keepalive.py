"""SSE keepalive for every runtime route, at the transport level.

ag-ui-strands 0.4.1 streams with no keepalive, so a long silent stretch (a slow model, a
specialist thinking) can be cut by a proxy's idle timeout. This middleware writes an SSE comment
(``: keepalive``) whenever an event stream has been silent for ``interval_s``. Comments are not
events: clients and the protocol ignore them.
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
        lock = asyncio.Lock()
        loop = asyncio.get_running_loop()
        last_write = loop.time()
        streaming = False
        finished = asyncio.Event()

        async def guarded_send(message: Message) -> None:
            nonlocal last_write, streaming
            async with lock:
                if message["type"] == "http.response.start":
                    headers = dict(message.get("headers", []))
                    streaming = headers.get(b"content-type", b"").startswith(b"text/event-stream")
                elif message["type"] == "http.response.body" and not message.get("more_body", False):
                    finished.set()
                await send(message)
                last_write = loop.time()

        async def pulse() -> None:
            while not finished.is_set():
                wait = last_write + self.interval_s - loop.time()
                if wait > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(finished.wait(), timeout=wait)
                    continue
                if streaming:
                    await guarded_send({"type": "http.response.body", "body": KEEPALIVE_FRAME, "more_body": True})
                else:
                    await asyncio.sleep(self.interval_s)

        pulser = asyncio.create_task(pulse())
        try:
            await self.app(scope, receive, guarded_send)
        finally:
            finished.set()
            pulser.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError, RuntimeError):
                await pulser
