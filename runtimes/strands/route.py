"""The Strands runtime as ``app.mounting`` sees it: who it is and how it mounts."""

from __future__ import annotations

from dataclasses import dataclass

from ag_ui_strands import add_strands_fastapi_endpoint
from fastapi import FastAPI

from app.config import Settings
from app.mounting import agent_route
from runtimes.strands.bridge import EmittingStrandsAgent
from runtimes.strands.otel import silence_detached_context_noise


@dataclass(frozen=True)
class StrandsRuntime:
    name: str = "strands"
    title: str = "AWS Strands Agents"
    bridge_package: str = "ag-ui-strands"

    @property
    def route(self) -> str:
        return agent_route(self.name)

    def mount(self, app: FastAPI, settings: Settings) -> None:
        """One bridge per app, on the shared app (never a ``create_strands_app`` sub-app)."""
        silence_detached_context_noise()
        add_strands_fastapi_endpoint(app, EmittingStrandsAgent(settings, self.route), self.route)
