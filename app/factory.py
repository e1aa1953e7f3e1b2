"""The app factory: one FastAPI app, one route per runtime, health and capabilities.

Adding a runtime: write ``runtimes/<name>/`` exposing ``runtime`` (see ``app.mounting.Runtime``)
and add it to ``RUNTIMES`` below.
"""

from __future__ import annotations

from fastapi import FastAPI

from app.config import Settings
from app.guard import RunInputGuard
from app.health import health_router
from app.inspector import add_inspector
from app.keepalive import SSEKeepalive
from app.mounting import Runtime
from app.security import add_security
from runtimes.msaf import runtime as msaf_runtime
from runtimes.strands import runtime as strands_runtime

RUNTIMES: tuple[Runtime, ...] = (strands_runtime, msaf_runtime)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the whole server for ``settings`` (default: read from the environment)."""
    settings = settings or Settings()
    app = FastAPI(title="AG-UI multi-runtime server", version="0.1.0")
    app.state.settings = settings
    app.include_router(health_router(RUNTIMES, settings))
    for runtime in RUNTIMES:
        runtime.mount(app, settings)
    routes = frozenset(runtime.route for runtime in RUNTIMES)
    # Outermost last: the guard answers bad input before a bridge sees it; keepalive wraps streams.
    app.add_middleware(SSEKeepalive, paths=routes, interval_s=settings.agui_keepalive_s)
    app.add_middleware(RunInputGuard, paths=routes, max_body_bytes=settings.agui_max_body_bytes)
    add_security(app, settings)
    add_inspector(app)  # outermost: the page holds no secret, so it is served before the token gate
    return app
