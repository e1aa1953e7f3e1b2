"""Model failures as RUN_ERROR codes a client can act on, for every runtime.

Every runtime talks to an OpenAI-compatible endpoint through the OpenAI SDK (over httpx), so the
same failure looks the same underneath, whatever the runtime wraps it in. :func:`describe` walks
an exception's causes and names the failure:

============================  ==========================================================
code                          when
============================  ==========================================================
``MODEL_TIMEOUT``             the endpoint stayed silent longer than AGUI_MODEL_TIMEOUT_S
                              (no answer at all, or a stall mid-stream)
``MODEL_AUTH_ERROR``          the endpoint refused the key (HTTP 401/403)
``MODEL_UNREACHABLE``         nothing answered at OPENAI_BASE_URL
``MODEL_ERROR``               any other failure of the call (HTTP 5xx, a dropped stream, an
                              error the endpoint sent inside an HTTP 200 stream)
============================  ==========================================================

A bridge that swallows the exception into a RUN_ERROR of its own (with a code of its own and the
provider's raw text) uses the per-run record here: the model layer records the named
failure (``runtimes.model_calls`` does it for every call), and the stage :func:`name_model_errors`
puts the code on the RUN_ERROR. A bridge that lets the exception reach the pipeline needs neither:
``Bridge.describe_error`` names it there.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import aclosing

import httpx
import openai
from ag_ui.core import BaseEvent, EventType, RunAgentInput

MODEL_CODES = frozenset(
    {"MODEL_TIMEOUT", "MODEL_AUTH_ERROR", "MODEL_UNREACHABLE", "MODEL_ERROR", "TOO_MANY_MODEL_CALLS"}
)
"""Every code a failed model call gets (``TOO_MANY_MODEL_CALLS``: the run's budget, ``runtimes.budget``)."""


class ModelError(Exception):
    """A failed model call, with the RUN_ERROR ``code`` it becomes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from, outermost first (``__cause__``, or a runtime's
    ``inner_exception``)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or getattr(current, "inner_exception", None)
    return chain


def describe(exc: BaseException) -> ModelError | None:
    """The model failure behind ``exc``, or None when the model is not what failed."""
    for error in causes(exc):
        named = _name(error)
        if named is not None:
            return named
    return None


def _name(error: BaseException) -> ModelError | None:
    if isinstance(error, ModelError):
        return error
    if isinstance(error, openai.APITimeoutError | httpx.TimeoutException):
        return ModelError("MODEL_TIMEOUT", "The model endpoint did not answer in time (AGUI_MODEL_TIMEOUT_S).")
    if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        return ModelError(
            "MODEL_AUTH_ERROR",
            f"The model endpoint refused the API key (HTTP {error.status_code}); check OPENAI_API_KEY.",
        )
    if isinstance(error, openai.APIConnectionError):
        return ModelError("MODEL_UNREACHABLE", f"Could not reach the model endpoint; check OPENAI_BASE_URL ({error}).")
    if isinstance(error, openai.APIStatusError):
        return ModelError("MODEL_ERROR", f"The model endpoint answered HTTP {error.status_code}: {error.message}")
    if isinstance(error, httpx.TransportError):
        return ModelError("MODEL_ERROR", f"The connection to the model endpoint broke mid-answer ({error}).")
    if isinstance(error, openai.APIError):  # the base class: an error chunk inside a streamed answer
        return ModelError("MODEL_ERROR", f"The model endpoint reported an error mid-answer: {error.message}")
    return None


_FAILURES: contextvars.ContextVar[list[ModelError] | None] = contextvars.ContextVar("agui_model_failures", default=None)


def failure() -> ModelError | None:
    """The latest model failure recorded for the current run, if any."""
    failures = _FAILURES.get()
    return failures[-1] if failures else None


def remember(named: ModelError) -> None:
    """Record a named model failure for the current run (a no-op outside a run: the record is the
    run's own once :func:`name_model_errors` has started)."""
    failures = _FAILURES.get()
    if failures is not None and named not in failures:
        failures.append(named)


async def name_model_errors(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """A stage: give the run its own failure record (set before the bridge starts, in the run's own
    context, which the bridge's tasks copy), then put the recorded failure's code and message on
    the run's RUN_ERROR."""
    _FAILURES.set([])
    async with aclosing(events):
        async for event in events:
            failures = _FAILURES.get()
            if event.type == EventType.RUN_ERROR and failures:
                event = event.model_copy(update={"code": failures[-1].code, "message": str(failures[-1])})
            yield event
