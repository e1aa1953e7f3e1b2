"""A server on this machine's loopback: a free port, and waiting until it answers ``/ok``.

Every command that starts this server for a check (the tests, the benchmarks, the boot check)
needs the same two things; they are here once.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import httpx

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it), for a server in another process.
    Until that server binds it, another socket may take it (an outgoing connection's local port
    comes from the same range); a server in this process binds :func:`loopback_socket` instead."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def loopback_socket() -> socket.socket:
    """A TCP socket bound to a free loopback port, for a server in this process to listen on
    (``uvicorn.Server.run(sockets=[...])``): the port is held from now on, so nothing can take it
    before the server listens. Its port is ``loopback_socket().getsockname()[1]``."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    return sock


def wait_until_ok(
    base: str,
    *,
    timeout_s: float,
    alive: Callable[[], bool] = lambda: True,
    path: str = "/ok",
    any_status: bool = False,
) -> float:
    """Poll ``base + path`` until it answers 200 (any HTTP answer with ``any_status``, for apps
    without ``/ok``); returns the seconds it took. Raises ``TimeoutError`` after ``timeout_s``,
    ``RuntimeError`` as soon as ``alive()`` says the server died."""
    started = time.monotonic()
    with httpx.Client(timeout=2.0) as client:
        while True:
            if not alive():
                raise RuntimeError(f"the server exited before {path} answered")
            try:
                status: int | None = client.get(base + path).status_code
            except httpx.HTTPError:
                status = None
            if status == 200 or (any_status and status is not None):
                return time.monotonic() - started
            if time.monotonic() - started > timeout_s:
                raise TimeoutError(f"{path} did not answer 200 within {timeout_s:g} s")
            time.sleep(0.01)
