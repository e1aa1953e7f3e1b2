"""The inspector: a web page, served by this app, that drives every runtime route live.

``GET /`` answers a browser (``Accept`` prefers ``text/html``) with the page and everyone else
with the capabilities document, as before; ``/inspector/...`` serves the page's files. The page
learns the routes from that document, so a runtime mounted later shows up with no change here.

Why a middleware added outermost: the page and its files hold nothing of the server's (no data,
no token; the bearer token stays in the browser's session storage), so they are answered before
the token gate. Everything the page fetches afterwards (``GET /`` as JSON, the runs) passes the
gate like any other client's request.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import FileResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"
PREFIX = "/inspector"
# docs/matrix.md explains every difference the compare view marks. The wheel carries a copy in
# STATIC (pyproject.toml force-include); a source checkout serves the doc itself.
MATRIX_FILES = (STATIC / "matrix.md", Path(__file__).parents[2] / "docs" / "matrix.md")


def prefers_html(accept: str) -> bool:
    """True when ``accept`` ranks ``text/html`` above JSON (a browser's navigation does; curl's
    ``*/*``, no header at all, and API clients asking for JSON do not)."""
    weights: dict[str, float] = {}
    for part in accept.split(","):
        media, *params = (item.strip() for item in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        weights[media.lower()] = max(quality, weights.get(media.lower(), 0.0))
    json_weight = weights.get("application/json", weights.get("application/*", weights.get("*/*", 0.0)))
    return weights.get("text/html", 0.0) > json_weight


class InspectorPage:
    """ASGI middleware: the page on a browser's ``GET /``, its files under ``/inspector/``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.files = StaticFiles(directory=STATIC)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/":
            if prefers_html(Headers(scope=scope).get("accept", "")):
                await FileResponse(STATIC / "index.html", headers=_HEADERS)(scope, receive, send)
            else:
                await self.app(scope, receive, _with_headers(send, {"vary": "Accept"}))
        elif path == f"{PREFIX}/matrix.md":
            matrix = next((file for file in MATRIX_FILES if file.is_file()), None)
            if matrix is None:
                await self.app(scope, receive, send)  # the app's own 404
            else:
                await FileResponse(matrix, media_type="text/markdown; charset=utf-8", headers=_HEADERS)(
                    scope, receive, send
                )
        elif path.startswith(f"{PREFIX}/"):
            inner = {**scope, "path": path.removeprefix(PREFIX), "root_path": ""}
            await self.files(inner, receive, _with_headers(send, {"cache-control": "no-cache"}))
        else:
            await self.app(scope, receive, send)


# Revalidate on every load (a 304 when unchanged), so a restarted server never runs a stale page.
_HEADERS = {"cache-control": "no-cache", "vary": "Accept"}


def _with_headers(send: Send, headers: dict[str, str]) -> Send:
    """``send``, setting ``headers`` on the response it starts."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            response = MutableHeaders(scope=message)
            for name, value in headers.items():
                if name == "vary":
                    response.add_vary_header(value)  # keeps what CORS varies on (Origin)
                else:
                    response[name] = value
        await send(message)

    return wrapped


def add_inspector(app: FastAPI) -> None:
    """Serve the page; call after every other middleware so it is the outermost layer."""
    app.add_middleware(InspectorPage)
