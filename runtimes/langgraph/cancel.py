"""Stop a run's model calls when the run ends, however it ends.

Why: when a run's client goes away mid-delegation, the app closes the run's stream and the
bridge's ``astream_events``, but the specialist's model call (a subgraph of the parent's tool task,
in a task of LangGraph's own) streams on to the end of its answer: LangGraph 1.2 does not cancel it
with the parent run. So every model call records its task for the run (``track``), and the stage
``cancel_model_calls`` cancels those still running once the run is over.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, RunAgentInput

_MODEL_CALLS: contextvars.ContextVar[set[asyncio.Task] | None] = contextvars.ContextVar(
    "agui_langgraph_model_calls", default=None
)


def track() -> None:
    """Called by a model as it starts streaming: its task belongs to the current run."""
    calls, task = _MODEL_CALLS.get(), asyncio.current_task()
    if calls is not None and task is not None:
        calls.add(task)
        task.add_done_callback(calls.discard)


async def cancel_model_calls(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """The stage: opens the run's record before the bridge starts (the graph's tasks inherit it),
    and cancels every model call still running when the run's stream ends."""
    calls: set[asyncio.Task] = set()
    _MODEL_CALLS.set(calls)
    try:
        async with aclosing(events):
            async for event in events:
                yield event
    finally:
        for task in list(calls):
            task.cancel()
