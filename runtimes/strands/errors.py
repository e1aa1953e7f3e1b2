"""Model failures on the Strands route as RUN_ERROR codes a client can act on.

ag-ui-strands turns any failure of the model call into ``RUN_ERROR`` itself, with the code
``STRANDS_FORCE_STOP`` and the provider's raw text ("Error code: 401 - {...}"). This module names
the failure where it happens and keeps that name for the run: ``NamingOpenAIModel`` raises a
readable message and records the code; the stage ``name_model_errors`` gives each run its own
record and puts the code on the bridge's RUN_ERROR. The codes and their meaning are shared with
every runtime (``runtimes.model_errors``).

A model failure anywhere ends the run: Strands hands a specialist's failure to the parent as an
error tool result and would let the parent's model carry on, so once a model call of the run has
failed, the run's next model call fails the same way at once, without asking the endpoint again.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, EventType, RunAgentInput
from strands.models.openai import OpenAIModel
from strands.types.streaming import StreamEvent

from runtimes import budget
from runtimes.model_errors import ModelError, describe

_FAILURES: contextvars.ContextVar[list[ModelError] | None] = contextvars.ContextVar(
    "agui_strands_model_failures", default=None
)


def recorded_failure_code() -> str | None:
    """The code of the latest model failure of the current run, if any."""
    failures = _FAILURES.get()
    return failures[-1].code if failures else None


async def model_call(
    events: AsyncIterator[StreamEvent], *, unreadable_is_the_model: bool = False
) -> AsyncGenerator[StreamEvent, None]:
    """One model call of the run: refused at once when a call of the run already failed or the
    run's budget is spent (``runtimes.budget``); a failure named and recorded for the run. With
    ``unreadable_is_the_model``, an answer the client library could not read (garbage on the wire)
    is the model's failure too (``MODEL_ERROR``), not a crash."""
    failures = _FAILURES.get()
    try:
        if failures:  # a model call of this run already failed (e.g. a specialist's): end the run
            raise ModelError(failures[-1].code, str(failures[-1]))
        budget.spend()
        async for event in events:
            yield event
    except Exception as exc:
        named = describe(exc)
        if named is None and unreadable_is_the_model:
            named = ModelError("MODEL_ERROR", f"The model endpoint's answer could not be read ({type(exc).__name__}).")
        if named is None:
            raise
        if failures is not None and named not in failures:
            failures.append(named)
        if named is exc:
            raise
        raise named from exc


class NamingOpenAIModel(OpenAIModel):
    """``OpenAIModel`` whose calls count against the run's budget and whose failures carry a
    readable message and a RUN_ERROR code."""

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[StreamEvent, None]:
        async for event in model_call(super().stream(*args, **kwargs), unreadable_is_the_model=True):
            yield event


async def name_model_errors(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """Give the run its own failure record, then put the recorded model failure's code (and
    message) on the run's RUN_ERROR. The record is set before the bridge starts, in the run's own
    context, so the parent's and the specialists' model calls all record into it."""
    _FAILURES.set([])
    async with aclosing(events):
        async for event in events:
            failures = _FAILURES.get()
            if event.type == EventType.RUN_ERROR and failures:
                event = event.model_copy(update={"code": failures[-1].code, "message": str(failures[-1])})
            yield event
