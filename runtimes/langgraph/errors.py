"""Model failures on the LangGraph route as RUN_ERROR codes a client can act on.

ag-ui-langgraph 0.0.47 catches whatever the graph raises and answers it itself: SUBAGENT_ERROR
for every open subagent, then RUN_ERROR, both with ``str(exc)`` as the message and no code. So
the failure is named where it happens: every model call of the route (both models in ``model``)
goes through ``runtimes.model_calls.model_call``, which counts it against the run's budget, names
its failure and records it for the run; the shared stage ``runtimes.model_errors.name_model_errors``
puts the recorded code on the bridge's RUN_ERROR, and :func:`name_subagent_errors` puts it on the
bridge's SUBAGENT_ERROR, which only this bridge emits itself.

A model failure anywhere ends the run: LangGraph's ToolNode re-raises what a tool raised, so a
specialist's failed model call fails its delegation, the parent's graph and the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType, RunAgentInput

from runtimes import model_errors


async def name_subagent_errors(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """A stage inside ``name_model_errors`` (which opens the run's record): the recorded model
    failure's code and message on the bridge's SUBAGENT_ERROR."""
    async with aclosing(events):
        async for event in events:
            failed = model_errors.failure()
            if event.type == EventType.SUBAGENT_ERROR and failed is not None:
                event = event.model_copy(update={"code": failed.code, "message": str(failed)})
            yield event
