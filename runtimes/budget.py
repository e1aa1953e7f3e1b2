"""A bounded agent loop on every route: at most ``AGUI_MAX_MODEL_CALLS`` model calls per run.

Why: a model that keeps calling tools never stops on its own, and some runtimes have no limit of
their own (Strands called a model 316 times in 43 s, with a growing context, until Python's
recursion limit ended it under a misleading code). The pipeline gives each run its budget before
the bridge starts (:func:`limit_model_calls`, in the run's own context, so the specialists' calls
count against their run's budget too); every runtime's model layer calls :func:`spend` before
each call, and the call that would go over fails with ``TOO_MANY_MODEL_CALLS``, which ends the
run like any model failure.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

from ag_ui.core import BaseEvent

from runtimes.model_errors import ModelError

TOO_MANY_MODEL_CALLS = "TOO_MANY_MODEL_CALLS"


@dataclass
class _Budget:
    left: int
    allowed: int


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("agui_model_call_budget", default=None)


def spend() -> None:
    """One model call of the current run; raises ``ModelError(TOO_MANY_MODEL_CALLS)`` past the budget.
    Outside a run (a unit test calling a model directly) there is no budget."""
    budget = _BUDGET.get()
    if budget is None:
        return
    if budget.left <= 0:
        raise ModelError(
            TOO_MANY_MODEL_CALLS,
            f"The run stopped after {budget.allowed} model calls (AGUI_MAX_MODEL_CALLS): the model kept calling tools.",
        )
    budget.left -= 1


async def limit_model_calls(events: AsyncIterator[BaseEvent], max_calls: int) -> AsyncIterator[BaseEvent]:
    """A stage: give the run ``max_calls`` model calls, then pass its events through."""
    _BUDGET.set(_Budget(left=max_calls, allowed=max_calls))
    async with aclosing(events):
        async for event in events:
            yield event
