"""The app factory: one FastAPI app, one route per registered runtime, health and capabilities.

The app's lifespan enters every bridge's own (``runtimes.base.Lifecycle``, for a bridge that owns
a process outside the app) and leaves them all at shutdown, however it ends; the store closes last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI

from app.config import Settings
from app.health import health_router
from app.inspector import add_inspector
from app.keepalive import SSEKeepalive
from app.mounting import mount
from app.pipeline import RoutePipeline
from app.registry import RUNTIMES
from app.runs import RunRegistry
from app.security import add_security
from runtimes.base import Lifecycle
from store import open_store


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the whole server for ``settings`` (default: read from the environment)."""
    settings = settings or Settings()
    store = open_store(settings.agui_state_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            stack.push_async_callback(store.aclose)
            for pipeline in app.state.pipelines.values():
                if isinstance(pipeline.bridge, Lifecycle):
                    await stack.enter_async_context(pipeline.bridge.lifespan())
            yield

    app = FastAPI(title="AG-UI multi-runtime server", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.state.runs = runs = RunRegistry(store, settings.run_limits())
    app.state.pipelines = {}  # route -> its RoutePipeline (the runtime, its bridge, its native latch)
    for runtime in RUNTIMES:
        app.state.pipelines[runtime.route] = RoutePipeline(runtime, runtime.build(settings, store), settings, store)
    app.include_router(health_router(app.state.pipelines, settings))
    for pipeline in app.state.pipelines.values():
        mount(app, pipeline, runs, limits=settings.limits())
    app.add_middleware(SSEKeepalive, paths=frozenset(app.state.pipelines), interval_s=settings.agui_keepalive_s)
    add_security(app, settings)  # CORS answers preflights, then the token gate
    add_inspector(app)  # outermost: the page holds no secret, so it is served before the token gate
    return app
