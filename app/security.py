"""Optional bearer-token gate and CORS, both from settings.

The token gate protects everything but ``/ok`` (a platform's health probe carries no secret).
The comparison is constant-time. With several named tokens (``AGUI_TOKENS``), the gate also says
who called: the name of the token, the request's principal, whose threads are its own
(``app.principals``). CORS is the app's job: no bridge implements it.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import Settings

OPEN_PATHS = frozenset({"/ok"})


PRINCIPAL = "agui_principal"
"""Where the gate leaves the caller's name in the request's ``scope["state"]``."""


class TokenGate:
    """ASGI middleware: ``Authorization: Bearer <token>`` or 401 JSON. ``tokens`` maps each
    accepted token to the principal it names ("" when there is only one)."""

    def __init__(self, app: ASGIApp, *, tokens: Mapping[str, str]) -> None:
        self.app = app
        self.tokens = [(token.encode(), principal) for token, principal in tokens.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # No exception for OPTIONS: a CORS preflight is answered by the CORS layer outside this one.
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        scheme, _, presented = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
        # The scheme is case-insensitive (RFC 9110 11.1); every token is compared, in constant time.
        matches = [principal for token, principal in self.tokens if hmac.compare_digest(presented, token)]
        if not matches or scheme.lower() != b"bearer":
            response = JSONResponse(
                {"detail": "Missing or wrong bearer token.", "code": "unauthorized"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})[PRINCIPAL] = matches[0]
        await self.app(scope, receive, send)


def principal_of(scope: Scope) -> str:
    """The caller's principal ("" without named tokens)."""
    return scope.get("state", {}).get(PRINCIPAL, "")


def add_security(app: FastAPI, settings: Settings) -> None:
    """Install the token gate (if a token is set) and CORS (if origins are set).

    Added last, so CORS is outermost: a browser's preflight is answered before the gate.
    """
    tokens = settings.tokens()
    if tokens:
        app.add_middleware(TokenGate, tokens=tokens)
    if settings.agui_cors_origins:
        wildcard = "*" in settings.agui_cors_origins
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.agui_cors_origins,
            allow_credentials=not wildcard,  # browsers refuse credentials with a wildcard origin
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["authorization", "content-type", "accept"],
        )
