"""Model failures on the MAF route as RUN_ERROR codes a client can act on.

MAF wraps every provider failure in ``ChatClientException`` whose text starts with a class repr;
the cause chain still holds the OpenAI SDK error, which the shared classifier
(``runtimes.model_errors``) names. What is MAF's own: a ``ChatClientException`` with nothing
recognisable underneath is still a model failure (MODEL_ERROR), and the failure reaches the
RUN_ERROR by being re-raised from the bridge's stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ag_ui.core import BaseEvent
from agent_framework.exceptions import ChatClientException

from runtimes import model_errors
from runtimes.model_errors import ModelError, causes

__all__ = ["ModelError", "describe", "error_code", "name_model_errors"]


def describe(exc: BaseException) -> ModelError | None:
    """The model failure behind ``exc``, or None when the model is not what failed."""
    named = model_errors.describe(exc)
    if named is not None:
        return named
    chain = causes(exc)
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
        if named is None or named is exc:
            raise
        raise ModelError(named.code, str(named)) from exc


def error_code(exc: BaseException) -> str:
    """RUN_ERROR code for an exception that escaped the bridge."""
    return exc.code if isinstance(exc, ModelError) else type(exc).__name__
