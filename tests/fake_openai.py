"""A small OpenAI-compatible Chat Completions server on 127.0.0.1, for real-model tests.

It speaks the real wire format (``POST /v1/chat/completions`` with ``stream: true`` and SSE
chunks), so the runtimes' real OpenAI client libraries are exercised end to end. Its behaviour
is chosen by the model name, which is just the ``AGUI_MODEL_ID`` setting:

* ``fake-chat``: streams a text reply; calls ``get_weather`` (if offered) when the last user
  message mentions weather and no tool result has arrived yet, then answers with the result.
* ``fake-hang``: accepts the request and never answers.
* ``fake-500``: answers HTTP 500.
* ``fake-drop``: starts streaming, then drops the connection mid-stream.
* ``fake-stall``: starts streaming, then goes silent forever (connection kept open).
* ``fake-delegate``: ``fake-chat`` taught to delegate: the parent (offered ``research_specialist``)
  calls it when the user asks to research; the specialist (offered ``lookup_fact``) calls
  ``lookup_fact``; both then answer with the tool result.
* ``fake-specialist-hang`` / ``fake-specialist-500``: ``fake-delegate`` whose specialist's requests
  (those offered ``lookup_fact`` but not ``research_specialist``) never answer / answer HTTP 500,
  while the parent's are answered.

Requests whose bearer key is not ``api_key`` get 401, like a real provider.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.config import Settings
from tests.wire import free_port

API_KEY = "test-key"
received: Counter[str] = Counter()
"""Requests received so far, by model name (a test can wait for a call to be in flight)."""


def _chunk(delta: dict, finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _text_reply(text: str) -> Iterator[bytes]:
    yield _chunk({"role": "assistant", "content": ""})
    for start in range(0, len(text), 8):
        yield _chunk({"content": text[start : start + 8]})
    yield _chunk({}, finish="stop")
    yield b"data: [DONE]\n\n"


def _tool_call(name: str, arguments: dict) -> Iterator[bytes]:
    args = json.dumps(arguments)
    opening = {"index": 0, "id": "call_fake_1", "type": "function", "function": {"name": name, "arguments": ""}}
    yield _chunk({"role": "assistant", "tool_calls": [opening]})
    for start in range(0, len(args), 6):
        yield _chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[start : start + 6]}}]})
    yield _chunk({}, finish="tool_calls")
    yield b"data: [DONE]\n\n"


def _script(body: dict) -> Iterator[bytes]:
    messages = body.get("messages", [])
    tools = {tool["function"]["name"] for tool in body.get("tools") or []}
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    user_text = last_user.get("content") if isinstance(last_user.get("content"), str) else json.dumps(last_user)
    tool_results = [m for m in messages if m.get("role") == "tool"]
    if tool_results and messages[-1].get("role") == "tool":
        return _text_reply(f"Fake model read the tool result: {tool_results[-1].get('content')}")
    if "weather" in user_text.lower() and "get_weather" in tools:
        return _tool_call("get_weather", {"city": "Oslo"})
    return _text_reply(f"Fake model reply to: {user_text}")


def _user_text(message: dict) -> str:
    """A user message's text, whether its content is a string or a list of parts (Strands)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return " ".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))


def _offered(body: dict) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or []}


def _is_specialist(body: dict) -> bool:
    offered = _offered(body)
    return "lookup_fact" in offered and "research_specialist" not in offered


def _delegating_script(body: dict) -> Iterator[bytes]:
    """``fake-delegate``: research goes to the specialist, the specialist looks the fact up."""
    messages = body.get("messages", [])
    offered = _offered(body)
    if messages and messages[-1].get("role") != "tool":
        request = _user_text(next((m for m in reversed(messages) if m.get("role") == "user"), {}))
        if "research_specialist" in offered and "research" in request.lower():
            return _tool_call("research_specialist", {"task": request})
        if _is_specialist(body):
            return _tool_call("lookup_fact", {"topic": request})
    return _script(body)


DELEGATING_MODELS = frozenset({"fake-delegate", "fake-specialist-hang", "fake-specialist-500"})


async def completions(request: Request) -> Response:
    if request.headers.get("authorization") != f"Bearer {API_KEY}":
        return JSONResponse({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}, 401)
    body = await request.json()
    model = body.get("model", "")
    received[model] += 1
    if model == "fake-500":
        return JSONResponse({"error": {"message": "upstream exploded", "type": "server_error"}}, 500)
    if model == "fake-hang" or (model == "fake-specialist-hang" and _is_specialist(body)):
        await asyncio.sleep(3600)
    if model == "fake-specialist-500" and _is_specialist(body):
        return JSONResponse({"error": {"message": "specialist upstream exploded", "type": "server_error"}}, 500)
    frames = list(_delegating_script(body) if model in DELEGATING_MODELS else _script(body))

    async def stream() -> AsyncIterator[bytes]:
        for index, frame in enumerate(frames):
            if model == "fake-drop" and index == 2:
                raise ConnectionResetError("fake model dropped the connection")
            if model == "fake-stall" and index == 2:
                await asyncio.sleep(3600)
            yield frame
            await asyncio.sleep(0.005)

    return StreamingResponse(stream(), media_type="text/event-stream")


@contextmanager
def fake_openai_server() -> Iterator[str]:
    """Serve the fake endpoint on a free loopback port; yields its base URL (``.../v1``)."""
    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)  # a poll for the condition (no /ok here), not a wait for time to pass
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=5)


def real_model_settings(endpoint: str, model: str = "fake-chat", **overrides: object) -> Settings:
    """Settings that switch every runtime to this fake endpoint, as a user's environment would."""
    values: dict[str, object] = {
        "agui_model": "openai",
        "openai_base_url": endpoint,
        "openai_api_key": API_KEY,
        "agui_model_id": model,
    }
    return Settings(**{**values, **overrides})
