"""ag-ui-langgraph's own endpoint on a bare FastAPI app, for ``make bench``.

The same graph and the same agent switches as the route, minus everything this project adds: no
pipeline, no emitter, no stages (no gate, no subagent fixes, no complete snapshots), and the
bridge's own per-request ``clone()``. The difference to the route is what this project costs.
"""

from __future__ import annotations

from ag_ui_langgraph import add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langgraph.checkpoint.memory import InMemorySaver

from runtimes.config import RuntimeSettings
from runtimes.langgraph import runtime
from runtimes.langgraph.bridge import agent_for, graph_for


def bare_app() -> FastAPI:
    settings = RuntimeSettings()
    app = FastAPI()
    graph = graph_for(settings, InMemorySaver())
    add_langgraph_fastapi_endpoint(app, agent_for(graph, settings), runtime.route)
    return app
