"""Model failures as RUN_ERROR codes a client can act on.

MAF wraps every provider failure in ``ChatClientException`` whose text starts with a class repr;
the cause chain still holds the OpenAI SDK error. This names the failure (MODEL_TIMEOUT,
MODEL_AUTH_ERROR, MODEL_UNREACHABLE, MODEL_ERROR) and says what to check, at request time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
from ag_ui.core import BaseEvent
from agent_framework.exceptions import ChatClientException


class ModelError(Exception):
    """A failed model call, with the RUN_ERROR ``code`` it becomes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def describe(exc: BaseException) -> ModelError | None:
    """The model failure behind ``exc``, or None when the model is not what failed."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or getattr(current, "inner_exception", None)
    for error in chain:
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
    if any(isinstance(error, ChatClientException) for error in chain):
        return ModelError("MODEL_ERROR", f"The model call failed: {chain[-1]}")
    return None


async def name_model_errors(events: AsyncIterator[BaseEvent]) -> AsyncIterator[BaseEvent]:
    """Re-raise a model failure from the bridge as :class:`ModelError` (the emitter core turns
    any exception into RUN_ERROR; this gives it a stable code and a readable message)."""
    try:
        async for event in events:
            yield event
    except Exception as exc:
        named = describe(exc)
        if named is None:
            raise
        raise named from exc


def error_code(exc: BaseException) -> str:
    """RUN_ERROR code for an exception that escaped the bridge."""
    return exc.code if isinstance(exc, ModelError) else type(exc).__name__
