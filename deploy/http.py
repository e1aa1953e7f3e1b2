"""uvicorn's HTTP protocol, with the two things a public server needs that uvicorn lacks.

* **A header deadline.** uvicorn waits forever for a request's headers, so a client that opens
  connections and sends a byte now and then keeps every one of them, up to the process's file
  descriptors (20,000 such connections made ``/ok`` fail). Here the headers of each request must
  be complete within ``HEADER_TIMEOUT_S`` of the connection (or of the previous response), or the
  connection is closed. The body's own deadline is the request guard's (``AGUI_BODY_TIMEOUT_S``),
  and ``LIMIT_CONCURRENCY`` caps what is in flight at all (``deploy.serve``).
* **A graceful end for streams.** On shutdown (SIGTERM, ``docker stop``) uvicorn asks every
  connection to finish, waits ``SHUTDOWN_TIMEOUT_S``, then cancels what is left, cutting a stream
  mid-frame. The first connection asked tells the app's runs (``app.pump.shut_down``) to finish
  within the grace period, so one still going ends with RUN_ERROR ``SERVER_SHUTDOWN`` before
  uvicorn's deadline instead.

Used through uvicorn's own extension point (``Config(http=...)``), so every worker process gets it.
"""

from __future__ import annotations

import asyncio
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.pump import shut_down
from deploy.serve import ServeConfig

HEADER_TIMEOUT_S = ServeConfig.from_env(os.environ).header_timeout_s
"""Read once per process, as ``deploy.serve`` read it (each worker process imports this anew)."""
SHUTDOWN_MARGIN_S = 1.0
"""How much earlier than uvicorn's own deadline the runs are ended, so their RUN_ERROR goes out."""


class GuardedHttp(HttpToolsProtocol):
    """``HttpToolsProtocol`` with a header deadline and a graceful end for streams."""

    header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_header_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._start_header_deadline()

    def on_headers_complete(self) -> None:
        self._stop_header_deadline()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_deadline()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        timeout = self.config.timeout_graceful_shutdown
        shut_down(max(timeout - SHUTDOWN_MARGIN_S, timeout / 2) if timeout else 0.0)
        super().shutdown()

    def _start_header_deadline(self) -> None:
        self._stop_header_deadline()
        self.header_deadline = self.loop.call_later(HEADER_TIMEOUT_S, self._headers_too_slow)

    def _stop_header_deadline(self) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
            self.header_deadline = None

    def _headers_too_slow(self) -> None:
        self.header_deadline = None
        if not self.transport.is_closing():
            self.transport.close()
