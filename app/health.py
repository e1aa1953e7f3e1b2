"""``GET /ok`` (liveness, no model call) and ``GET /`` (what this server offers a client).

``GET /`` says per runtime whether it can take a run right now (``available``: false while a
runtime's sidecar is down); it asks each bridge without waiting on anything, and ``GET /ok`` never
asks at all: the server is alive even while one runtime restarts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from importlib import metadata
from typing import TYPE_CHECKING

from fastapi import APIRouter

from app.config import Settings
from app.mounting import describe
from runtimes.base import Runtime, available
from runtimes.script import FEATURES

if TYPE_CHECKING:
    from app.pipeline import RoutePipeline


def health_router(pipelines: Mapping[str, RoutePipeline], settings: Settings) -> APIRouter:
    """The two routes, over every mounted route's pipeline (route -> pipeline)."""
    router = APIRouter()
    listing = _capabilities([pipeline.runtime for pipeline in pipelines.values()], settings)

    @router.get("/ok")
    async def ok() -> dict:
        """Cheap liveness check: no model call, no I/O."""
        return {"ok": True}

    @router.get("/")
    async def capabilities() -> dict:
        """Every mounted runtime, its bridge version, a sample prompt per feature, and the surfaces
        it cannot show, with the upstream cause (docs/matrix.md, gaps), and whether it is up."""
        up = {route: available(pipeline.bridge) for route, pipeline in pipelines.items()}
        return {**listing, "runtimes": [{**entry, "available": up[entry["route"]]} for entry in listing["runtimes"]]}

    return router


def _capabilities(runtimes: Sequence[Runtime], settings: Settings) -> dict:
    features = [asdict(feature) for feature in FEATURES]
    return {
        "name": "agui-multiruntime",
        "protocol": {"package": "ag-ui-protocol", "version": metadata.version("ag-ui-protocol")},
        "model": settings.agui_model,
        "subagentEvents": settings.agui_subagent_events,
        "runtimes": [
            {
                **asdict(describe(runtime)),
                "method": "POST",
                "features": features,
                "gaps": [asdict(gap) for gap in runtime.known.gaps],
            }
            for runtime in runtimes
        ],
        "howTo": {
            "request": "POST a RunAgentInput (JSON) to a runtime route; read Server-Sent Events.",
            "resume": "After RUN_FINISHED with outcome.type == 'interrupt', POST again on the same threadId "
            "with resume: [{interruptId, status: 'resolved'|'cancelled', payload: {approved: true|false}}] "
            "addressing every open interrupt.",
            "subagentEventsOverride": "forwardedProps.subagentEvents: false drops SUBAGENT_* for one request.",
        },
    }
