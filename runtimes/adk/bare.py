"""ag-ui-adk's own endpoint on a bare FastAPI app, for ``make bench``.

The same agents, app and ``ADKAgent`` configuration as the route, minus everything this project
adds: no pipeline, no plugins (no emitter, no failure policy), no interrupt translation or gate, no
bounded sessions. The difference to the route is what this project costs.
"""

from __future__ import annotations

from ag_ui_adk import add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.sessions import InMemorySessionService

from runtimes.adk import runtime
from runtimes.adk.bridge import adk_agent
from runtimes.adk.sessions import CountBoundedSessions
from runtimes.config import RuntimeSettings


def bare_app() -> FastAPI:
    agent = adk_agent(RuntimeSettings(), CountBoundedSessions(InMemorySessionService()), plugins=False)
    app = FastAPI()
    add_adk_fastapi_endpoint(app, agent, runtime.route)
    return app
