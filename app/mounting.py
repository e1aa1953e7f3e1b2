"""One route per runtime: ``POST /<name>/agent``, RunAgentInput in, Server-Sent Events out.

The endpoint is the app's own, the same for every runtime: the guard parses the body once into a
``RunAgentInput`` (or answers a 4xx JSON error); then ``app.runs`` starts the run through the
route's pipeline (``app.pipeline``), or, for a request with ``Last-Event-ID``, follows the run it
names from there, and the response streams its frames. The upstream bridges' own FastAPI
endpoints are not used: each would parse the body again, encode and watch for disconnects its own
way.
"""

from __future__ import annotations

from dataclasses import dataclass

from ag_ui.core import RunAgentInput
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from app.guard import BadRequest, Limits, read_run_input
from app.pipeline import RoutePipeline
from app.runs import RunRegistry, last_event_id
from app.security import principal_of
from runtimes.base import Runtime

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""No caching or replay of a run's frames; no buffering by proxies that honour the hint (nginx)."""
REQUEST_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": RunAgentInput.model_json_schema(by_alias=True)}},
    }
}


def mount(app: FastAPI, pipeline: RoutePipeline, runs: RunRegistry, *, limits: Limits) -> None:
    """Register ``POST <route>`` for ``pipeline``'s runtime."""

    async def run(request: Request) -> Response:
        try:
            run_input = await read_run_input(request, limits)
            after = last_event_id(request.headers.get("last-event-id"))
            principal = principal_of(request.scope)
            if after is None:
                frames = await runs.start(pipeline, run_input, principal)
            else:
                frames = await runs.reconnect(pipeline, run_input, principal, after)
        except BadRequest as refused:
            return refused.response()
        if frames is None:  # the client has the whole run: SSE's way of saying "do not reconnect"
            return Response(status_code=204)
        return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)

    runtime = pipeline.runtime
    app.add_api_route(
        runtime.route,
        run,
        methods=["POST"],
        name=f"run_{runtime.name}",
        summary=f"Run the {runtime.title} agent",
        description=f"A RunAgentInput in, the run's AG-UI events out as Server-Sent Events ({runtime.bridge_package}).",
        response_class=StreamingResponse,
        openapi_extra=REQUEST_SCHEMA,
        tags=["AG-UI"],
    )


@dataclass(frozen=True)
class RuntimeInfo:
    """What ``GET /`` says about a mounted runtime."""

    name: str
    title: str
    route: str
    bridge_package: str
    bridge_version: str


def describe(runtime: Runtime) -> RuntimeInfo:
    return RuntimeInfo(
        name=runtime.name,
        title=runtime.title,
        route=runtime.route,
        bridge_package=runtime.bridge_package,
        bridge_version=runtime.version(runtime.bridge_package),
    )
