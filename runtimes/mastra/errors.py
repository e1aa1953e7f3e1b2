"""Failures on the Mastra route, named for the RUN_ERROR a client can act on.

The model is called from the Node sidecar (the AI SDK's fetch), so a failure reaches the app as the
sidecar's RUN_ERROR, whose ``rawEvent.errors`` describes the error and its causes as data (name,
message, HTTP status, system error code: ``sidecar/server.mjs``). :func:`describe_chain` names it
with the codes of ``runtimes.model_errors``; :func:`name_model_errors` is the stage that puts the
name on the wire (and drops the raw description). The sidecar itself failing (not running, gone
mid-run) is ``RUNTIME_UNAVAILABLE`` (:func:`describe`). Mastra's storage failing (with shared state,
the engine: @mastra/redis, and the sidecar's thread index beside it) is the state store's failure,
raised as ``store.StoreUnavailable`` (the pipeline's ``STATE_UNAVAILABLE``): its chain carries a
system error code too ("read ECONNRESET"), which would otherwise read as the model's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

import httpx
from ag_ui.core import BaseEvent, EventType, RunAgentInput

from runtimes import model_errors
from runtimes.model_errors import ModelError
from store import StoreUnavailable

RUNTIME_UNAVAILABLE = "RUNTIME_UNAVAILABLE"
STORAGE_CODE = "MASTRA_STORAGE_"
"""How the code of every Mastra storage error begins (@mastra/core's ``createStorageErrorId``)."""
UNREACHABLE_CODES = frozenset({"ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"})


def storage_failed(errors: list[dict]) -> bool:
    """Whether a sidecar error chain (outermost first) is Mastra's storage failing."""
    return any(str(error.get("code", "")).startswith(STORAGE_CODE) for error in errors)


def describe_chain(errors: list[dict]) -> ModelError | None:
    """The model failure a sidecar error chain describes (outermost first), or None."""
    names = {str(error.get("name")) for error in errors}
    codes = {str(error.get("code")) for error in errors if error.get("code")}
    statuses = [error["statusCode"] for error in errors if isinstance(error.get("statusCode"), int)]
    if "TimeoutError" in names:
        return ModelError("MODEL_TIMEOUT", "The model endpoint did not answer in time (AGUI_MODEL_TIMEOUT_S).")
    if any(status in (401, 403) for status in statuses):
        return ModelError(
            "MODEL_AUTH_ERROR",
            f"The model endpoint refused the API key (HTTP {statuses[0]}); check OPENAI_API_KEY.",
        )
    if codes & UNREACHABLE_CODES:
        return ModelError("MODEL_UNREACHABLE", "Could not reach the model endpoint; check OPENAI_BASE_URL.")
    if statuses:
        return ModelError("MODEL_ERROR", f"The model endpoint answered HTTP {statuses[0]}.")
    if any(name.startswith("AI_") for name in names) or codes or "TypeError" in names:
        reason = "; ".join(str(error.get("message")) for error in errors if error.get("message"))
        return ModelError("MODEL_ERROR", f"The model call failed: {reason[:300]}")
    return None


def describe(exc: BaseException) -> ModelError | None:
    """What ended a run with an exception: the sidecar gone, or a model failure."""
    if isinstance(exc, httpx.TransportError):
        return ModelError(RUNTIME_UNAVAILABLE, "The Mastra runtime stopped during the run; it is being restarted.")
    return model_errors.describe(exc)


async def name_model_errors(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """The sidecar's RUN_ERROR with the failure's code and message (its raw description dropped);
    a storage failure raised as ``StoreUnavailable``."""
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.RUN_ERROR and isinstance(event.raw_event, dict):
                chain = list(event.raw_event.get("errors") or [])
                if storage_failed(chain):
                    raise StoreUnavailable(f"Mastra's storage failed: {event.message}")
                named = describe_chain(chain)
                update = {"raw_event": None} | ({"code": named.code, "message": str(named)} if named else {})
                event = event.model_copy(update=update)
            yield event
