"""ag-ui-strands' own endpoint on a bare FastAPI app, for ``make bench``.

The same template agent and tool behaviours as the route, minus everything this project adds:
no pipeline, no emitter (the delegation tool gets the bridge's own handling), no complete
snapshots, no bounded cache. The difference to the route is what this project costs.
"""

from __future__ import annotations

from ag_ui_strands import StrandsAgent, StrandsAgentConfig, add_strands_fastapi_endpoint
from fastapi import FastAPI

from runtimes.config import RuntimeSettings
from runtimes.strands import runtime
from runtimes.strands.agents import parent_template
from runtimes.strands.bridge import tool_behaviors
from runtimes.strands.model import models_for


def bare_app() -> FastAPI:
    parent_model, specialist_model = models_for(RuntimeSettings())
    agent = StrandsAgent(
        parent_template(parent_model, specialist_model),
        name="strands_bare",
        config=StrandsAgentConfig(tool_behaviors=tool_behaviors(delegation=False)),
    )
    app = FastAPI()
    add_strands_fastapi_endpoint(app, agent, runtime.route)
    return app
