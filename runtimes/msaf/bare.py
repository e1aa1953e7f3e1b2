"""agent-framework-ag-ui's own endpoint and runner on a bare FastAPI app, for ``make bench``.

The same agents and runner configuration as the route, minus everything this project adds: no
pipeline and no emitter (the dialect's middleware and stream callback are present but inert: no
emitter run is in context), no cancel completion, no success outcome. The difference to the
route is what this project costs.
"""

from __future__ import annotations

from agent_framework_ag_ui import add_agent_framework_fastapi_endpoint
from fastapi import FastAPI

from runtimes.config import RuntimeSettings
from runtimes.msaf import runtime
from runtimes.msaf.bridge import DEFAULT_STATE, runner


def bare_app() -> FastAPI:
    app = FastAPI()
    add_agent_framework_fastapi_endpoint(
        app,
        runner(RuntimeSettings()),
        runtime.route,
        default_state=DEFAULT_STATE,
        single_user=True,
        keepalive_seconds=None,
    )
    return app
