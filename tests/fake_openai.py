"""The test suite's OpenAI-compatible endpoint: the strict scripted endpoint, plus ways to fail.

Everything that works is ``runtimes.script_endpoint`` itself: as strict as OpenAI's Chat
Completions API (a conversation a strict provider refuses gets its HTTP 400 here too) and
following the offline script, so a route on a real model must produce the scripted results. The
model name (``AGUI_MODEL_ID``) picks how it answers:

* ``scripted``: streams as OpenAI does (tool-call arguments in several chunks, a usage chunk when
  asked); ``scripted-whole-calls``: every tool call whole in one final chunk, as Ollama does;
* ``fake-hang``: accepts the request and never answers;
* ``fake-500``: answers HTTP 500 with OpenAI's error shape;
* ``fake-drop``: starts streaming, then drops the connection mid-stream;
* ``fake-stall``: starts streaming, then goes silent forever (connection kept open);
* ``fake-inband-error``: answers HTTP 200, then sends an error chunk mid-stream, as OpenAI, vLLM
  and llama.cpp do for a failure after the stream started;
* ``fake-garbage``: answers HTTP 200, then a chunk that is not JSON;
* ``fake-loop``: calls ``get_weather`` every time, whatever came back (a model that never stops);
* ``fake-specialist-hang`` / ``fake-specialist-500`` / ``fake-specialist-garbage``: the specialist's
  requests (offered ``lookup_fact``, not ``research_specialist``) never answer / answer HTTP 500 /
  answer garbage; the parent's are answered as ``scripted``.

Requests whose bearer key is not ``API_KEY`` get 401, like a real provider's. ``received`` counts
requests by model and ``refused`` keeps every 400 it sent, so a test can see that no request of a
run was invalid.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.config import Settings
from deploy.loopback import LOOPBACK, loopback_socket
from runtimes.script_endpoint import error_body, frames_for, is_specialist, read_request, sse

API_KEY = "test-key"
received: Counter[str] = Counter()
"""Requests received so far, by model name (a test can wait for a call to be in flight)."""
refused: list[dict] = []
"""Every HTTP 400 the endpoint answered, as ``{"request": ..., "error": ...}``."""
MID_STREAM_FAILURES = frozenset({"fake-drop", "fake-stall", "fake-inband-error"})
"""Models that fail after two chunks have gone out."""


async def completions(request: Request) -> Response:
    body = await read_request(request, API_KEY)
    if isinstance(body, Response):
        if body.status_code == 400:
            refused.append({"request": (await request.body()).decode(errors="replace"), "error": body.body.decode()})
        return body
    model = body["model"]
    received[model] += 1
    specialist = is_specialist(body)
    if model == "fake-hang" or (model == "fake-specialist-hang" and specialist):
        await asyncio.Event().wait()  # never answers
    if model == "fake-500" or (model == "fake-specialist-500" and specialist):
        return JSONResponse(error_body("The server had an error processing your request.", "server_error"), 500)
    if model == "fake-loop":
        body = {**body, "messages": [{"role": "user", "content": "What's the weather in Oslo?"}]}
    frames = frames_for(body)

    async def stream() -> AsyncIterator[bytes]:
        if model == "fake-garbage" or (model == "fake-specialist-garbage" and specialist):
            yield b"data: {this is not json\n\n"
            return
        sent = 0
        async for frame in sse(iter(frames), delay_s=0.002):
            if sent == 2 and model in MID_STREAM_FAILURES:
                if model == "fake-drop":
                    raise ConnectionResetError("fake model dropped the connection")
                if model == "fake-stall":
                    await asyncio.Event().wait()
                error = error_body("The model produced invalid content.", "server_error", code="model_error")
                yield f"data: {json.dumps(error)}\n\n".encode()
                return
            sent += 1
            yield frame

    return StreamingResponse(stream(), media_type="text/event-stream")


@contextmanager
def fake_openai_server() -> Iterator[str]:
    """Serve the endpoint on a free loopback port; yields its base URL (``.../v1``)."""
    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    sock = loopback_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:  # until it listens (no /ok here to poll)
            if not thread.is_alive():
                raise RuntimeError("the fake model endpoint did not start")
            threading.Event().wait(0.01)
        yield f"http://{LOOPBACK}:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()


def real_model_settings(endpoint: str, model: str = "scripted", **overrides: object) -> Settings:
    """Settings that switch every runtime to this endpoint, as a user's environment would."""
    values: dict[str, object] = {
        "agui_model": "openai",
        "openai_base_url": endpoint,
        "openai_api_key": API_KEY,
        "agui_model_id": model,
    }
    return Settings(**{**values, **overrides})
