"""Optional bearer-token gate and CORS, both from settings.

The token gate protects everything but ``/ok`` (a platform's health probe carries no secret).
The comparison is constant-time. CORS is the app's job: neither bridge implements it.
"""

from __future__ import annotations

import hmac

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import Settings

OPEN_PATHS = frozenset({"/ok"})


class TokenGate:
    """ASGI middleware: ``Authorization: Bearer <token>`` or 401 JSON."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # No exception for OPTIONS: a CORS preflight is answered by the CORS layer outside this one.
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        scheme, _, presented = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
        # The scheme is case-insensitive (RFC 9110 11.1); the token is compared in constant time.
        if not (hmac.compare_digest(presented, self.expected) and scheme.lower() == b"bearer"):
            response = JSONResponse(
                {"detail": "Missing or wrong bearer token.", "code": "unauthorized"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def add_security(app: FastAPI, settings: Settings) -> None:
    """Install the token gate (if a token is set) and CORS (if origins are set).

    Added last, so CORS is outermost: a browser's preflight is answered before the gate.
    """
    if settings.agui_token:
        app.add_middleware(TokenGate, token=settings.agui_token)
    if settings.agui_cors_origins:
        wildcard = "*" in settings.agui_cors_origins
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.agui_cors_origins,
            allow_credentials=not wildcard,  # browsers refuse credentials with a wildcard origin
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["authorization", "content-type", "accept"],
        )
