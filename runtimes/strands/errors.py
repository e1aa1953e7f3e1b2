"""Model failures on the Strands route as RUN_ERROR codes a client can act on.

ag-ui-strands turns any failure of the model call into ``RUN_ERROR`` itself, with the code
``STRANDS_FORCE_STOP`` and the provider's raw text ("Error code: 401 - {...}"). This module names
the failure where it happens and keeps that name for the run: ``NamingOpenAIModel`` raises a
readable message and records the code; ``name_model_errors`` puts the code on the bridge's
RUN_ERROR. The codes match the other runtime's: MODEL_TIMEOUT, MODEL_AUTH_ERROR,
MODEL_UNREACHABLE, MODEL_ERROR.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx
import openai
from ag_ui.core import BaseEvent, EventType
from strands.models.openai import OpenAIModel
from strands.types.streaming import StreamEvent


class ModelError(Exception):
    """A failed model call, with the RUN_ERROR ``code`` it becomes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


_FAILURES: contextvars.ContextVar[list[ModelError] | None] = contextvars.ContextVar(
    "agui_strands_model_failures", default=None
)


def begin_run() -> None:
    """Give the run about to start its own failure record (set before the run's context is copied,
    so the parent's and the specialists' model calls all record into it)."""
    _FAILURES.set([])


def describe(exc: BaseException) -> ModelError | None:
    """The model failure behind ``exc`` (searched along its causes), or None."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__
    for error in seen:
        if isinstance(error, openai.APITimeoutError):
            return ModelError("MODEL_TIMEOUT", "The model endpoint did not answer in time (AGUI_MODEL_TIMEOUT_S).")
        if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
            return ModelError(
                "MODEL_AUTH_ERROR",
                f"The model endpoint refused the API key (HTTP {error.status_code}); check OPENAI_API_KEY.",
            )
        if isinstance(error, openai.APIConnectionError):
            return ModelError(
                "MODEL_UNREACHABLE", f"Could not reach the model endpoint; check OPENAI_BASE_URL ({error})."
            )
        if isinstance(error, openai.APIStatusError):
            return ModelError("MODEL_ERROR", f"The model endpoint answered HTTP {error.status_code}: {error.message}")
        if isinstance(error, httpx.TransportError):
            return ModelError("MODEL_ERROR", f"The connection to the model endpoint broke mid-answer ({error}).")
    return None


class NamingOpenAIModel(OpenAIModel):
    """``OpenAIModel`` whose failures carry a readable message and a RUN_ERROR code."""

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[StreamEvent, None]:
        try:
            async for event in super().stream(*args, **kwargs):
                yield event
        except Exception as exc:
            named = describe(exc)
            if named is None:
                raise
            failures = _FAILURES.get()
            if failures is not None:
                failures.append(named)
            raise named from exc


async def name_model_errors(events: AsyncIterator[BaseEvent]) -> AsyncIterator[BaseEvent]:
    """Put the recorded model failure's code (and message) on the run's RUN_ERROR."""
    async with aclosing(events):
        async for event in events:
            failures = _FAILURES.get()
            if event.type == EventType.RUN_ERROR and failures:
                event = event.model_copy(update={"code": failures[-1].code, "message": str(failures[-1])})
            yield event
