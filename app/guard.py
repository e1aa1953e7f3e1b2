"""Request guard for the runtime routes: bad input gets a clear 4xx JSON error before any bridge.

The two upstream bridges parse ``RunAgentInput`` differently (ag-ui-strands strictly, with
``tools``/``context``/``forwardedProps`` required on protocol 0.1.22; agent-framework-ag-ui
leniently, inventing ids). This guard gives every route one contract: the protocol's own model
decides what is valid, the optional fields get their defaults, and the bridge receives a body it
accepts. Errors name the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Optional in protocol 1.0; some bridges on 0.1.22 still require them.
MESSAGE_ROLES = frozenset({"developer", "system", "assistant", "user", "tool", "activity", "reasoning"})
OPTIONAL_DEFAULTS: dict[str, object] = {"tools": [], "context": [], "forwardedProps": {}, "state": {}}


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


def normalize_run_input(raw: bytes, content_type: str | None) -> bytes:
    """Check one request body and return it with protocol defaults filled in."""
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
    try:
        RunAgentInput.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = _field_path(error["loc"])
        raise BadRequest(422, "invalid_field", f"{where}: {error['msg']}", field=where) from exc
    return json.dumps(body).encode()


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


class RunInputGuard:
    """ASGI middleware: validate and normalize POST bodies on ``paths``; pass others through."""

    def __init__(self, app: ASGIApp, *, paths: frozenset[str], max_body_bytes: int) -> None:
        self.app = app
        self.paths = paths
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        try:
            raw = await self._read_body(scope, receive)
            headers = dict(scope["headers"])
            content_type = headers.get(b"content-type", b"").decode("latin-1") or None
            body = normalize_run_input(raw, content_type)
        except BadRequest as refused:
            await refused.response()(scope, receive, send)
            return
        await self.app(_with_length(scope, len(body)), _replay(body, receive), send)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise BadRequest(400, "client_disconnected", "The client went away before sending the body.")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self) -> BadRequest:
        return BadRequest(413, "body_too_large", f"The body is larger than {self.max_body_bytes} bytes.")


def _with_length(scope: Scope, length: int) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
    headers.append((b"content-length", str(length).encode()))
    return {**scope, "headers": headers}


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields the normalized body once, then the real channel (disconnects)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
