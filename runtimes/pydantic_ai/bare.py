"""pydantic-ai-slim's own AG-UI request handling on a bare FastAPI app, for ``make bench``.

The same agents as the route, served by ``AGUIAdapter.dispatch_request`` (the adapter parses the
body, runs the agent and encodes the SSE response itself), minus everything this project adds: no
pipeline, no emitter (the dialect in the delegation tool is inert: no emitter run is in context),
no interrupt gate, no messages snapshot, no predictive-state event. The difference to the route is
what this project costs.
"""

from __future__ import annotations

from fastapi import FastAPI
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.requests import Request
from starlette.responses import Response

from runtimes.config import RuntimeSettings
from runtimes.pydantic_ai import runtime
from runtimes.pydantic_ai.agents import build_assistant
from runtimes.pydantic_ai.deps import RunDeps
from runtimes.pydantic_ai.model import models_for


def bare_app() -> FastAPI:
    assistant = build_assistant(*models_for(RuntimeSettings()))
    app = FastAPI()

    @app.post(runtime.route)
    async def run(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=assistant, deps=RunDeps())

    return app
