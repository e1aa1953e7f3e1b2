"""One model call of a run, as every runtime's model layer makes it.

Why one place: a model call is where a run's budget is spent and where a failure can still be
named. :func:`model_call` wraps the call's stream; each call

* is refused at once when a call of the run already failed: a runtime that hands a specialist's
  failure to the parent as a tool result (Strands) would otherwise let the parent's model carry
  on, so a model failure anywhere ends the run, without asking the endpoint again;
* counts against the run's budget (``runtimes.budget.spend``);
* has its failure named and recorded for the run (``runtimes.model_errors.remember``), so the
  run's RUN_ERROR gets the ``MODEL_*`` code whatever the bridge makes of the exception.

A runtime whose bridge lets the exception reach the pipeline (Microsoft Agent Framework) needs
only the budget, which its middleware spends itself.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

from runtimes import budget, model_errors
from runtimes.model_errors import ModelError

Chunk = TypeVar("Chunk")


async def model_call(
    chunks: AsyncIterator[Chunk], *, unreadable_is_the_model: bool = False
) -> AsyncGenerator[Chunk, None]:
    """Pass one model call's chunks through (see the module docstring). With
    ``unreadable_is_the_model``, an answer the client library could not read (garbage on the
    wire) is the model's failure too (``MODEL_ERROR``), not a crash."""
    try:
        failed = model_errors.failure()
        if failed is not None:
            raise failed
        budget.spend()
        async for chunk in chunks:
            yield chunk
    except Exception as exc:
        named = model_errors.describe(exc)
        if named is None and unreadable_is_the_model:
            named = ModelError("MODEL_ERROR", f"The model endpoint's answer could not be read ({type(exc).__name__}).")
        if named is None:
            raise
        model_errors.remember(named)
        if named is exc:
            raise
        raise named from exc
