"""``GET /ok`` (liveness, no model call) and ``GET /`` (what this server offers a client)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from importlib import metadata

from fastapi import APIRouter

from app.config import Settings
from app.mounting import describe
from runtimes.base import Runtime
from runtimes.script import FEATURES


def health_router(runtimes: Sequence[Runtime], settings: Settings) -> APIRouter:
    router = APIRouter()
    listing = _capabilities(runtimes, settings)

    @router.get("/ok")
    async def ok() -> dict:
        """Cheap liveness check: no model call, no I/O."""
        return {"ok": True}

    @router.get("/")
    async def capabilities() -> dict:
        """Every mounted runtime, its bridge version, a sample prompt per feature, and the surfaces
        it cannot show, with the upstream cause (docs/matrix.md, gaps)."""
        return listing

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
