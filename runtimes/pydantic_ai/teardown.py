"""End what a Pydantic AI run leaves parked when it is cancelled just as it starts.

Upstream bug (pydantic-ai-slim 2.31.1; the same code is in 2.68): an agent run executes its
capabilities' ``wrap_run`` chain in a task of its own (``agent._run_lifecycle_hooks``), and each
streamed model request its ``wrap_model_request`` chain (``_agent_graph.ModelRequestNode.stream``);
the handler inside waits on an event the run sets when the body it hands over to ends. When the
run is cancelled in the short window after that handler started and before the body began (the
run awaits the draining of a helper task there), the event is never set and the task stays pending
forever, holding the run (and, for a model request, its open model stream). A client that leaves
right as its run starts does exactly that (``tests/test_hardening_disconnect.py`` caught it about
one time in six).

The workaround uses public API only: :class:`NoteRunTasks`, a capability on every agent of the
route, notes the tasks its ``wrap_run`` and ``wrap_model_request`` run in, in a set of the route run
(:func:`run_tasks`, published in the run's context, so the runs of its specialists note theirs
there too). When the route run has ended every one of those tasks is done, except a parked one:
:func:`cancel_parked` ends it. Delete this module when Pydantic AI sets the event on that path.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapModelRequestHandler, WrapRunHandler
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult

_RUN_TASKS: contextvars.ContextVar[set[asyncio.Task] | None] = contextvars.ContextVar(
    "agui_pydantic_ai_run_tasks", default=None
)


def run_tasks() -> set[asyncio.Task]:
    """A new set for the agent runs of this route run, published in the run's context."""
    tasks: set[asyncio.Task] = set()
    _RUN_TASKS.set(tasks)
    return tasks


def cancel_parked(tasks: set[asyncio.Task]) -> None:
    """Cancel the noted tasks still pending once the route run has ended (never the caller's own)."""
    for task in tasks:
        if not task.done() and task is not asyncio.current_task():
            task.cancel()
    tasks.clear()


@dataclass
class NoteRunTasks(AbstractCapability[Any]):
    """Notes the tasks an agent run's ``wrap_run`` and ``wrap_model_request`` chains run in (see the
    module docstring)."""

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        _note_current_task()
        return await handler()

    async def wrap_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, handler: WrapModelRequestHandler
    ) -> ModelResponse:
        _note_current_task()
        return await handler(request_context)


def _note_current_task() -> None:
    tasks, task = _RUN_TASKS.get(), asyncio.current_task()
    if tasks is not None and task is not None:
        tasks.add(task)
