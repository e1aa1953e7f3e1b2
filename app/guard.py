"""Request guard for the runtime routes: bad input gets a clear 4xx JSON error before any bridge.

Every route has one input contract, whatever its bridge would accept: the protocol's own model
decides what is valid, the optional fields get their defaults (ag-ui-protocol 0.1.22 still
requires ``tools``, ``context``, ``forwardedProps`` and ``state``), and errors name the field in
its wire form. What passes is parsed once, here, into the ``RunAgentInput`` the pipeline runs.

What one request may cost is bounded here too, before any runtime sees it (:class:`Limits`, one
setting each): the body's size and how long it may take to arrive, JSON nesting and number size,
how many messages and tools, how large the tool schemas, how long an id. Upstream frameworks do
work per tool or per message that is quadratic and runs on the event loop (one request with
20,000 tools stalled every stream of the server for a minute); with these bounds it cannot.
Strings that are not valid Unicode (a lone surrogate escape) and numbers JSON cannot hold are
refused here, since no event that echoes them could be encoded.

One legacy shape is accepted at this edge for every route: a resume sent the older way, as
``forwardedProps.command.resume`` entries naming their interrupts, becomes the protocol's
top-level ``resume``, so no runtime reads resume shapes of its own.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

MESSAGE_ROLES = frozenset({"developer", "system", "assistant", "user", "tool", "activity", "reasoning"})
OPTIONAL_DEFAULTS: dict[str, object] = {"tools": [], "context": [], "forwardedProps": {}, "state": {}}
INTERRUPT_ID_KEYS = ("interruptId", "interrupt_id", "id", "toolCallId")
"""Where a legacy resume entry names its interrupt."""
OBJECT_FIELDS = ("state", "forwardedProps")
"""Fields the protocol leaves as any JSON that every route here needs to be an object."""
FREE_FORM = ("state", "forwardedProps", "context", "tools")
"""Fields whose nesting no schema bounds (the rest of RunAgentInput has a fixed shape)."""
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""How a surrogate gets into a JSON text at all (UTF-8 cannot carry one; the decoder refuses it)."""


@dataclass(frozen=True)
class Limits:
    """What one request may cost (``AGUI_MAX_*``, ``AGUI_BODY_TIMEOUT_S``; docs/errors.md lists them)."""

    max_body_bytes: int
    body_timeout_s: float
    max_json_depth: int
    max_number_digits: int
    max_messages: int
    max_tools: int
    max_tools_bytes: int
    max_id_length: int


class BadRequest(Exception):
    """A request the guard refuses; becomes ``{"detail", "code", "field"?}`` with ``status``."""

    def __init__(self, status: int, code: str, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.field = status, code, detail, field

    def response(self) -> JSONResponse:
        body: dict[str, object] = {"detail": self.detail, "code": self.code}
        if self.field is not None:
            body["field"] = self.field
        return JSONResponse(body, status_code=self.status)


def parse_run_input(raw: bytes, content_type: str | None, limits: Limits) -> RunAgentInput:
    """Check one request body and return the run it asks for, protocol defaults filled in."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    is_json = media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )
    if not is_json:
        raise BadRequest(415, "unsupported_media_type", "Content-Type must be application/json.")
    if not raw.strip():
        raise BadRequest(400, "empty_body", "The request body is empty; send a RunAgentInput JSON object.")
    body = _load_json(raw, limits)
    if not isinstance(body, dict):
        raise BadRequest(422, "not_an_object", f"The body must be a JSON object (RunAgentInput), not {_kind(body)}.")
    _check_depth([body.get(key) for key in FREE_FORM], limits)
    if SURROGATE_ESCAPE.search(raw):  # rare: only then is every string worth a look
        _check_unicode(body)
    for key, default in OPTIONAL_DEFAULTS.items():
        if body.get(key) is None:
            body[key] = default
    for key in OBJECT_FIELDS:
        if not isinstance(body[key], dict):
            raise BadRequest(422, "invalid_field", f"{key}: must be a JSON object, not {_kind(body[key])}", field=key)
    if body.get("resume") is None:
        legacy = _legacy_resume(body["forwardedProps"])
        if legacy is not None:
            body["resume"] = legacy
    _check_counts(body, limits)
    try:
        run_input = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = _field_path(error["loc"])
        raise BadRequest(422, "invalid_field", f"{where}: {error['msg']}", field=where) from exc
    _check_ids(run_input, limits)
    return run_input


async def read_run_input(request: Request, limits: Limits) -> RunAgentInput:
    """Read the body (refusing more than ``max_body_bytes``, before reading it when the length is
    declared, and a body that trickles in for longer than ``body_timeout_s``) and parse it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise _too_large(limits.max_body_bytes)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(limits.body_timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body_bytes:
                    raise _too_large(limits.max_body_bytes)
                chunks.append(chunk)
    except ClientDisconnect:
        raise BadRequest(400, "client_disconnected", "The client went away before sending the body.") from None
    except TimeoutError:
        raise BadRequest(408, "body_timeout", f"The body did not arrive within {limits.body_timeout_s:g} s.") from None
    return parse_run_input(b"".join(chunks), request.headers.get("content-type"), limits)


def _load_json(raw: bytes, limits: Limits) -> object:
    """``json.loads``, refusing numbers JSON cannot carry faithfully (more digits than the limit,
    ``Infinity``/``NaN``, an exponent past float range) and nesting Python cannot parse."""

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > limits.max_number_digits:
            raise BadRequest(422, "number_too_large", f"A number has more than {limits.max_number_digits} digits.")
        return int(text)

    def real(text: str) -> float:
        value = float(text)
        if len(text) > limits.max_number_digits + 8 or not math.isfinite(value):
            raise BadRequest(422, "number_too_large", f"The number {text[:32]} is out of range.")
        return value

    def constant(name: str) -> float:
        raise BadRequest(422, "number_too_large", f"{name} is not a JSON number.")

    try:
        return json.loads(raw, parse_int=integer, parse_float=real, parse_constant=constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(400, "invalid_json", f"The body is not valid JSON: {exc}.") from exc
    except RecursionError:
        raise BadRequest(422, "too_deep", f"The JSON nests deeper than {limits.max_json_depth} levels.") from None


def _check_depth(values: list[object], limits: Limits) -> None:
    """No nesting deeper than the limit in the free-form fields."""
    stack: list[tuple[object, int]] = [(value, 2) for value in values]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > limits.max_json_depth:
                raise BadRequest(422, "too_deep", f"The JSON nests deeper than {limits.max_json_depth} levels.")
            stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))


def _check_unicode(value: object) -> None:
    """Every string valid Unicode: a lone UTF-16 surrogate could never be encoded back out."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if LONE_SURROGATE.search(value):
                raise BadRequest(422, "invalid_string", "A string holds a lone UTF-16 surrogate: not valid Unicode.")
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _check_counts(body: dict, limits: Limits) -> None:
    messages, tools = body.get("messages"), body.get("tools")
    if isinstance(messages, list) and len(messages) > limits.max_messages:
        raise BadRequest(422, "too_many_messages", f"More than {limits.max_messages} messages.", field="messages")
    if isinstance(tools, list):
        if len(tools) > limits.max_tools:
            raise BadRequest(422, "too_many_tools", f"More than {limits.max_tools} tools.", field="tools")
        if len(json.dumps(tools, separators=(",", ":"))) > limits.max_tools_bytes:
            raise BadRequest(
                422, "tools_too_large", f"The tools take more than {limits.max_tools_bytes} bytes.", field="tools"
            )


def _check_ids(run_input: RunAgentInput, limits: Limits) -> None:
    """No id longer than the limit: ids are echoed in every event and kept per thread."""
    ids = {"threadId": run_input.thread_id, "runId": run_input.run_id, "parentRunId": run_input.parent_run_id or ""}
    for index, message in enumerate(run_input.messages):
        ids[f"messages.{index}.id"] = message.id
        ids[f"messages.{index}.toolCallId"] = getattr(message, "tool_call_id", None) or ""
        for number, call in enumerate(getattr(message, "tool_calls", None) or []):
            ids[f"messages.{index}.toolCalls.{number}.id"] = call.id
    for index, entry in enumerate(run_input.resume or []):
        ids[f"resume.{index}.interruptId"] = entry.interrupt_id
    for where, value in ids.items():
        if len(value) > limits.max_id_length:
            raise BadRequest(
                422, "id_too_long", f"{where}: longer than {limits.max_id_length} characters.", field=where
            )


def _too_large(max_body_bytes: int) -> BadRequest:
    return BadRequest(413, "body_too_large", f"The body is larger than {max_body_bytes} bytes.")


def _legacy_resume(forwarded_props: object) -> list[dict] | None:
    """``forwardedProps.command.resume`` as top-level resume entries, when its entries name their
    interrupts (a bare value without ids is a runtime's own convention, left where it is)."""
    command = forwarded_props.get("command") if isinstance(forwarded_props, dict) else None
    value = command.get("resume") if isinstance(command, dict) else None
    if isinstance(value, dict):
        value = value.get("interrupts") or value.get("interrupt") or [value]
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(entry, dict) and any(entry.get(key) for key in INTERRUPT_ID_KEYS) for entry in value):
        return None
    return [_legacy_entry(entry) for entry in value]


def _legacy_entry(entry: dict) -> dict:
    """One entry: its id, its status (resolved unless it says), and its answer under ``payload``,
    ``value`` or ``response``, or else the rest of its fields."""
    interrupt_id = next(entry[key] for key in INTERRUPT_ID_KEYS if entry.get(key))
    converted = {"interruptId": str(interrupt_id), "status": entry.get("status", "resolved")}
    answer_key = next((key for key in ("payload", "value", "response") if key in entry), None)
    rest = {key: value for key, value in entry.items() if key not in {*INTERRUPT_ID_KEYS, "type", "status"}}
    payload = entry[answer_key] if answer_key else rest or None
    if payload is not None:
        converted["payload"] = payload
    return converted


def _kind(value: object) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _field_path(loc: Iterable[object]) -> str:
    """pydantic's location as the wire names it: ``messages.0.content`` (aliases, not snake_case;
    without the union tag pydantic inserts after a message's index, e.g. ``messages.0.user``)."""
    aliases = {name: field.alias or name for name, field in RunAgentInput.model_fields.items()}
    parts: list[str] = []
    for part in loc:
        if parts and parts[-1].isdigit() and str(part) in MESSAGE_ROLES:
            continue
        parts.append(aliases.get(str(part), str(part)))
    return ".".join(parts) or "body"
