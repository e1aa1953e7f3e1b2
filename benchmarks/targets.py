"""The floor: the cost of HTTP + SSE + uvicorn alone, as a uvicorn app factory (its own process).

``floor_app`` is a plain Starlette + sse-starlette endpoint that writes pre-encoded AG-UI frames
captured from this project's route, so it streams exactly as many events, as many bytes.

The other comparison, each runtime's upstream bridge on a bare ``FastAPI()`` with the same agent
(no pipeline, no emitter, no app middleware), is declared by the runtime's own package
(``Runtime.bare_app``, or ``Runtime.bare_command`` for a bridge that is not a Python app, e.g. a
Node server): the difference to our route is exactly what this project adds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from benchmarks.process import FLOOR_FRAMES_ENV


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
