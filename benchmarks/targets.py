"""The comparison servers, as uvicorn app factories (each runs in its own process).

* ``floor_app``: a plain Starlette + sse-starlette endpoint that writes pre-encoded AG-UI frames
  captured from this project's route, so it streams exactly as many events, as many bytes. It is
  the cost of HTTP + SSE + uvicorn alone.
* ``bare_strands_app`` / ``bare_msaf_app``: each upstream bridge on a bare ``FastAPI()`` (no app
  middleware, no emitter, no route wrappers), serving the same scripted agent with the same bridge
  configuration as our route, minus everything that lives in ``emitters/``. The difference to our
  route is therefore exactly what this project adds: the emitter, the route wrappers and the app.

This module imports the runtimes and is only ever imported by the server processes, never by the
benchmark client (whose CPU would otherwise pay for those imports).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ag_ui_strands import StrandsAgent, StrandsAgentConfig, add_strands_fastapi_endpoint
from agent_framework_ag_ui import AgentFrameworkAgent, add_agent_framework_fastapi_endpoint
from fastapi import FastAPI
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from app.config import Settings
from benchmarks.process import FLOOR_FRAMES_ENV
from benchmarks.scenarios import route_of
from runtimes.msaf.agents import build_assistant
from runtimes.msaf.bridge import DEFAULT_STATE, PREDICT_STATE_CONFIG, STATE_SCHEMA
from runtimes.script import RESEARCH_SPECIALIST
from runtimes.strands.agents import parent_template
from runtimes.strands.bridge import tool_behaviors
from runtimes.strands.model import models_for


def bench_settings() -> Settings:
    """The settings every benchmarked server runs with: offline model, zero pacing."""
    return Settings(agui_model="scripted", agui_script_delay_ms=0)


def bare_strands_app() -> FastAPI:
    """ag-ui-strands' own endpoint on the route's template agent, without the emitter's pieces
    (no delegation handler, no outcome hook, no snapshot completion, no bounded cache)."""
    parent_model, specialist_model = models_for(bench_settings())
    behaviors = {name: b for name, b in tool_behaviors().items() if name != RESEARCH_SPECIALIST}
    agent = StrandsAgent(
        parent_template(parent_model, specialist_model),
        name="strands_bare",
        config=StrandsAgentConfig(tool_behaviors=behaviors),
    )
    app = FastAPI()
    add_strands_fastapi_endpoint(app, agent, route_of("strands"))
    return app


def bare_msaf_app() -> FastAPI:
    """agent-framework-ag-ui's own endpoint and ``AgentFrameworkAgent`` on the route's agent.

    The agent is the route's own ``build_assistant``: its dialect seams (a function middleware and
    a stream callback) are present but inert, since no emitter run is in context.
    """
    runner = AgentFrameworkAgent(
        build_assistant(bench_settings()),
        state_schema=STATE_SCHEMA,
        predict_state_config=PREDICT_STATE_CONFIG,
        require_confirmation=False,
    )
    app = FastAPI()
    add_agent_framework_fastapi_endpoint(
        app, runner, route_of("msaf"), default_state=DEFAULT_STATE, single_user=True, keepalive_seconds=None
    )
    return app


def floor_app() -> Starlette:
    """``POST /floor/<runtime>/<scenario>`` streams the captured frames of that run, nothing else."""
    frames: dict[str, list[bytes]] = {
        key: [frame.encode() for frame in encoded]
        for key, encoded in json.loads(Path(os.environ[FLOOR_FRAMES_ENV]).read_text()).items()
    }

    async def replay(request: Request) -> EventSourceResponse:
        json.loads(await request.body())  # a real endpoint reads its input; the floor pays for that too
        captured = frames[f"{request.path_params['runtime']}/{request.path_params['scenario']}"]

        async def stream():
            for frame in captured:
                yield frame

        return EventSourceResponse(stream(), ping=3600)

    return Starlette(routes=[Route("/floor/{runtime}/{scenario}", replay, methods=["POST"])])
