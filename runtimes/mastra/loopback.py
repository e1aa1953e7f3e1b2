"""What the app serves its Mastra sidecar on loopback: the offline script as a model, and the tools' results.

Why: the sidecar is a Node process, and the script (``runtimes.script``) is this project's single
source of what the offline model says and what the demo tools compute. So the app serves both to
it, on 127.0.0.1, behind a random key made per process (nothing else on the machine can use them):

* ``POST /v1/chat/completions``: ``runtimes.script_endpoint``, which Mastra's OpenAI-compatible
  provider calls in scripted mode (in real-model mode the sidecar calls the user's endpoint);
* ``POST /tools/<name>``: a demo tool's result for the JSON arguments (the sidecar's tools are real
  Mastra tools whose bodies ask here).

It runs on its own thread and loop, so the model it plays never competes with the app's loop for a
turn, and its uvicorn does not touch the app's signal handlers. A model request carries the thread
it is for (``x-agui-thread``), so the script's chunks count as that run's (``emitters.core.CURRENT_RUN``),
as a Python runtime's in-process model does.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from emitters.core import CURRENT_RUN, SubagentRun
from runtimes import script
from runtimes.script_endpoint import error_body, scripted_completions

LOOPBACK = "127.0.0.1"
THREAD_HEADER = "x-agui-thread"

TOOLS: Mapping[str, Callable[[dict], object]] = {
    script.GET_WEATHER: lambda args: script.weather_report(args["city"]),
    script.LOOKUP_FACT: lambda args: script.fact_about(args["topic"]),
    # A demo: it never touches the filesystem, it only reports what approval allowed.
    script.DELETE_FILE: lambda args: f"Deleted {args['path']}.",
    script.UPDATE_RECIPE: lambda args: args["recipe"],
    script.WRITE_DOCUMENT: lambda args: f"Wrote a document of {len(args['document'])} characters.",
}
"""What each backend tool of the Mastra route computes (as the Python runtimes' tools do)."""


class _InRun:
    """Runs each model request in the context of the run it serves, when that run is known."""

    def __init__(self, app: ASGIApp, runs: Callable[[str], SubagentRun | None]) -> None:
        self.app = app
        self.runs = runs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or ())
        thread = headers.get(THREAD_HEADER.encode())
        run = self.runs(thread.decode(errors="replace")) if thread is not None else None
        if run is None:
            await self.app(scope, receive, send)
            return
        token = CURRENT_RUN.set(run)
        try:
            await self.app(scope, receive, send)
        finally:
            CURRENT_RUN.reset(token)  # no context the server keeps afterwards holds the run


def loopback_app(*, key: str, delay_s: float, runs: Callable[[str], SubagentRun | None]) -> ASGIApp:
    async def tool(request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {key}":
            return JSONResponse(error_body("Incorrect key.", "invalid_request_error"), status_code=401)
        compute = TOOLS.get(request.path_params["name"])
        if compute is None:
            return JSONResponse(error_body("No such tool.", "invalid_request_error"), status_code=404)
        try:
            return JSONResponse(compute(await request.json()))
        except (KeyError, TypeError, ValueError) as exc:
            return JSONResponse(error_body(f"Bad arguments: {exc}", "invalid_request_error"), status_code=400)

    routes = [
        Route("/tools/{name}", tool, methods=["POST"]),
        Mount("/", scripted_completions(api_key=key, delay_s=delay_s)),
    ]
    return _InRun(Starlette(routes=routes), runs)


class LoopbackServer:
    """:func:`loopback_app` under uvicorn on a free loopback port, on a thread of its own."""

    def __init__(self, *, delay_s: float, runs: Callable[[str], SubagentRun | None]) -> None:
        self.key = secrets.token_urlsafe(24)
        app = loopback_app(key=self.key, delay_s=delay_s, runs=runs)
        # The sidecar's HTTP client (undici) drops idle connections after 4 s; the server keeps them
        # longer, so it is never the server that closes one the client is about to reuse.
        config = uvicorn.Config(app, host=LOOPBACK, port=0, log_level="warning", lifespan="off", timeout_keep_alive=120)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="mastra-loopback", daemon=True)
        self.base = ""

    def start(self, timeout_s: float = 30) -> None:
        """Start and wait until it listens (blocking: call it off the event loop)."""
        self._thread.start()
        started = threading.Event()
        for _ in range(int(timeout_s / 0.01)):
            if self._server.started or not self._thread.is_alive():
                break
            started.wait(0.01)
        if not self._server.started:
            raise RuntimeError("the Mastra loopback endpoint did not start")
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base = f"http://{LOOPBACK}:{port}"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
