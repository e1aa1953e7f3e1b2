"""The offline script as an OpenAI-compatible Chat Completions endpoint, as strict as OpenAI's.

Why: some runtimes can reach a model only over HTTP (a runtime in another language, in a sidecar);
served here, the one script (``runtimes.script``) drives them exactly as it drives the Python
runtimes' in-process scripted models. And the tests drive every route's *real-model* path (the
runtimes' own OpenAI clients, over real HTTP) against it, with the scripted results as the
expected ones. So it must refuse what OpenAI refuses, or a conversation a strict provider rejects
would pass here:

* roles other than system, developer, user, assistant and tool;
* an assistant message with ``tool_calls`` not followed at once by one tool message per call id,
  a tool message answering no call, an empty ``tool_calls`` list;
* a tool whose name or ``parameters`` schema OpenAI would not accept.

Each refusal is HTTP 400 with OpenAI's error shape. It streams as OpenAI does: a tool call's
arguments in several chunks, parallel calls by ``index``, a usage chunk when
``stream_options.include_usage`` asks for it, then ``[DONE]``. With the model name
``scripted-whole-calls`` it streams as Ollama and llama.cpp do instead: every tool call whole, in
one final chunk. Which agent the script plays is read from the tools it is offered (the parent is
offered ``research_specialist``, the specialist ``lookup_fact``); offered tools the server does not
run are the client's frontend tools.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import jsonschema
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from runtimes import script
from runtimes.script import BACKEND_TOOLS, CallTools, Reply, Step, Turn

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
WHOLE_CALLS_MODEL = "scripted-whole-calls"
"""The model name that makes tool calls arrive whole, in one final chunk (Ollama's way)."""


class InvalidRequest(Exception):
    """What OpenAI answers with HTTP 400 ``invalid_request_error``."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict:
    """OpenAI's error shape."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# --- strictness ---------------------------------------------------------------------------------


def check_request(body: object) -> None:
    """Raise :class:`InvalidRequest` for what OpenAI's Chat Completions API refuses."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("you must provide a model parameter", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty array.", "messages")
    for index, tool in enumerate(body.get("tools") or []):
        _check_tool(index, tool)
    unanswered: list[str] = []  # the ids the latest assistant tool_calls still waits for
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            raise InvalidRequest(f"Invalid value for '{where}.role': {role!r}.", f"{where}.role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in unanswered:
                raise InvalidRequest(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    f"{where}.role",
                )
            unanswered.remove(call_id)
            continue
        if unanswered:
            raise InvalidRequest(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(unanswered)}",
                f"{where}.role",
            )
        if role == "assistant" and "tool_calls" in message and message["tool_calls"] is not None:
            unanswered = _check_tool_calls(where, message["tool_calls"])
        elif role == "user" and message.get("content") is None:
            raise InvalidRequest(f"Missing required parameter: '{where}.content'.", f"{where}.content")


def _check_tool(index: int, tool: object) -> None:
    where = f"tools[{index}]"
    function = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
    if not isinstance(function, dict):
        raise InvalidRequest(f"Invalid value for '{where}.type': only 'function' tools are supported.", where)
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise InvalidRequest(
            f"Invalid '{where}.function.name': string does not match pattern '^[a-zA-Z0-9_-]+$'.",
            f"{where}.function.name",
        )
    parameters = function.get("parameters")
    if parameters is None:
        return
    try:
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise jsonschema.SchemaError("schema must be a JSON Schema of 'type: \"object\"'")
        jsonschema.Draft202012Validator.check_schema(parameters)
    except jsonschema.SchemaError as exc:
        raise InvalidRequest(
            f"Invalid schema for function '{name}': {exc.message}.", f"{where}.function.parameters"
        ) from None


def _check_tool_calls(where: str, calls: object) -> list[str]:
    if not isinstance(calls, list) or not calls:
        raise InvalidRequest(
            f"Invalid '{where}.tool_calls': empty array. Expected an array with minimum length 1.",
            f"{where}.tool_calls",
        )
    ids = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        named = isinstance(function, dict) and isinstance(function.get("name"), str)
        if not (named and isinstance(call.get("id"), str)):
            raise InvalidRequest(f"Invalid '{where}.tool_calls': each needs an id and a function name.", where)
        if not isinstance(function.get("arguments"), str):
            raise InvalidRequest(f"Invalid '{where}.tool_calls': arguments must be a string.", where)
        ids.append(call["id"])
    return ids


# --- what the script says ----------------------------------------------------------------------


def step_for(body: dict) -> Step:
    """The script's next step for this conversation, as the agent the offered tools say it is."""
    offered = [tool["function"]["name"] for tool in body.get("tools") or []]
    turn = turn_from_openai(body["messages"], [name for name in offered if name not in BACKEND_TOOLS])
    if is_specialist(body):
        return script.specialist_step(turn)
    return script.parent_step(turn)


def is_specialist(body: dict) -> bool:
    """The specialist is offered ``lookup_fact`` and no delegation; the parent, ``research_specialist``."""
    offered = {tool["function"]["name"] for tool in body.get("tools") or []}
    return script.LOOKUP_FACT in offered and script.RESEARCH_SPECIALIST not in offered


def turn_from_openai(messages: list[dict], frontend_tools: list[str]) -> Turn:
    """The script's view of an OpenAI conversation: the latest user text and the tool results
    since it, oldest first, each named by the call it answers."""
    names: dict[str, str] = {}
    user_text, results = "", []
    for message in messages:
        if message["role"] == "user":
            user_text, results = _text(message.get("content")), []
        elif message["role"] == "assistant":
            names.update({call["id"]: call["function"]["name"] for call in message.get("tool_calls") or []})
        elif message["role"] == "tool":
            results.append((names.get(message["tool_call_id"], "unknown"), _text(message.get("content"))))
    return Turn(user_text=user_text, results=results, frontend_tools=tuple(frontend_tools))


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))


# --- how it streams ----------------------------------------------------------------------------


def chunks(step: Step, *, model: str, whole_calls: bool) -> Iterator[dict]:
    """One model turn as Chat Completions chunks (the ``choices[0].delta`` of each)."""
    completion_id, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    if isinstance(step, Reply):
        yield chunk({"role": "assistant", "content": ""})
        for piece in step.chunks:
            yield chunk({"content": piece})
        yield chunk({}, finish="stop")
        return
    assert isinstance(step, CallTools)
    calls = [(index, f"call_{uuid.uuid4().hex[:24]}", call) for index, call in enumerate(step.calls)]
    if whole_calls:
        whole = [_call_delta(index, call_id, call.name, json.dumps(call.arguments)) for index, call_id, call in calls]
        yield chunk({"role": "assistant", "content": None, "tool_calls": whole}, finish="tool_calls")
        return
    yield chunk({"role": "assistant", "content": None})
    for index, call_id, call in calls:
        yield chunk({"tool_calls": [_call_delta(index, call_id, call.name, "")]})
        for piece in script.chunk_json(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, finish="tool_calls")


def _call_delta(index: int, call_id: str, name: str, arguments: str) -> dict:
    return {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def usage_chunk(model: str) -> dict:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def completion(step: Step, model: str) -> dict:
    """The same turn as one (non-streamed) ChatCompletion."""
    message: dict = {"role": "assistant", "content": None}
    if isinstance(step, Reply):
        message["content"], finish = step.text, "stop"
    else:
        message["tool_calls"] = [
            _call_delta(index, f"call_{uuid.uuid4().hex[:24]}", call.name, json.dumps(call.arguments))
            for index, call in enumerate(step.calls)
        ]
        for call in message["tool_calls"]:
            del call["index"]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


async def sse(frames: Iterator[dict], *, delay_s: float) -> AsyncIterator[bytes]:
    async for frame in script.paced(frames, delay_s, is_chunk=lambda frame: bool(frame["choices"])):
        yield f"data: {json.dumps(frame)}\n\n".encode()
    yield b"data: [DONE]\n\n"


# --- the endpoint ------------------------------------------------------------------------------


async def read_request(request: Request, api_key: str | None) -> dict | Response:
    """The request's body, checked; or the error response a provider would send."""
    if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
        body = error_body("Incorrect API key provided.", "invalid_request_error", code="invalid_api_key")
        return JSONResponse(body, status_code=401)
    try:
        body = json.loads(await request.body())
        check_request(body)
    except json.JSONDecodeError:
        return JSONResponse(error_body("The body is not valid JSON.", "invalid_request_error"), status_code=400)
    except InvalidRequest as refused:
        return JSONResponse(error_body(str(refused), "invalid_request_error", refused.param), status_code=400)
    return body


def frames_for(body: dict) -> list[dict]:
    """Every chunk of the streamed answer to ``body``, the usage chunk last when asked for."""
    model = body["model"]
    frames = list(chunks(step_for(body), model=model, whole_calls=model == WHOLE_CALLS_MODEL))
    if (body.get("stream_options") or {}).get("include_usage"):
        frames.append(usage_chunk(model))
    return frames


def scripted_completions(*, api_key: str | None = None, delay_s: float = 0.0) -> Starlette:
    """``POST /v1/chat/completions`` (clients use ``<base>/v1``). With ``api_key`` set, other keys
    get HTTP 401 as from a real provider."""

    async def completions(request: Request) -> Response:
        body = await read_request(request, api_key)
        if isinstance(body, Response):
            return body
        if not body.get("stream"):
            return JSONResponse(completion(step_for(body), body["model"]))
        return StreamingResponse(sse(iter(frames_for(body)), delay_s=delay_s), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
