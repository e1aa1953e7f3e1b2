"""Request guard for the runtime routes: bad input gets a clear 4xx JSON error before any bridge.

Every route has one input contract, whatever its bridge would accept: the protocol's own model
decides what is valid, the optional fields get their defaults (ag-ui-protocol 0.1.22 still
requires ``tools``, ``context``, ``forwardedProps`` and ``state``), and errors name the field in
its wire form. What passes is parsed once, here, into the ``RunAgentInput`` the pipeline runs.

One legacy shape is accepted at this edge for every route: a resume sent the older way, as
``forwardedProps.command.resume`` entries naming their interrupts, becomes the protocol's
top-level ``resume``, so no runtime reads resume shapes of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

MESSAGE_ROLES = frozenset({"developer", "system", "assistant", "user", "tool", "activity", "reasoning"})
OPTIONAL_DEFAULTS: dict[str, object] = {"tools": [], "context": [], "forwardedProps": {}, "state": {}}
INTERRUPT_ID_KEYS = ("interruptId", "interrupt_id", "id", "toolCallId")
"""Where a legacy resume entry names its interrupt."""


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


def parse_run_input(raw: bytes, content_type: str | None) -> RunAgentInput:
    """Check one request body and return the run it asks for, protocol defaults filled in."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    is_json = media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )
    if not is_json:
        raise BadRequest(415, "unsupported_media_type", "Content-Type must be application/json.")
    if not raw.strip():
        raise BadRequest(400, "empty_body", "The request body is empty; send a RunAgentInput JSON object.")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(400, "invalid_json", f"The body is not valid JSON: {exc}.") from exc
    if not isinstance(body, dict):
        raise BadRequest(422, "not_an_object", f"The body must be a JSON object (RunAgentInput), not {_kind(body)}.")
    for key, default in OPTIONAL_DEFAULTS.items():
        if body.get(key) is None:
            body[key] = default
    if body.get("resume") is None:
        legacy = _legacy_resume(body["forwardedProps"])
        if legacy is not None:
            body["resume"] = legacy
    try:
        return RunAgentInput.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = _field_path(error["loc"])
        raise BadRequest(422, "invalid_field", f"{where}: {error['msg']}", field=where) from exc


async def read_run_input(request: Request, max_body_bytes: int) -> RunAgentInput:
    """Read the body (refusing more than ``max_body_bytes``, before reading it when the length is
    declared) and parse it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
        raise _too_large(max_body_bytes)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body_bytes:
                raise _too_large(max_body_bytes)
            chunks.append(chunk)
    except ClientDisconnect:
        raise BadRequest(400, "client_disconnected", "The client went away before sending the body.") from None
    return parse_run_input(b"".join(chunks), request.headers.get("content-type"))


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
