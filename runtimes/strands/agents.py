"""The Strands agents: the parent template the bridge clones per thread, and the specialist.

The specialist is built fresh for every delegation call. The bridge shares tool objects between
all threads, so a specialist held by a tool (a shared ``as_tool()``) would refuse a second user
("already processing") and, with ``preserve_context=True``, leak one user's history to another.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui_strands import ToolBehavior
from ag_ui_strands.agent import StrandsInterruptHook
from strands import Agent
from strands.models.model import Model
from strands.types.tools import AgentTool, ToolGenerator, ToolSpec, ToolUse

from runtimes.script import DELETE_FILE, PARENT_INSTRUCTIONS, RESEARCH_SPECIALIST, SPECIALIST_INSTRUCTIONS
from runtimes.strands.tools import delete_file, get_weather, lookup_fact, update_recipe, write_document

APPROVAL = ToolBehavior(interrupt_on_call=True)
"""Approval before the tool runs: the run ends with an interrupt outcome until the user answers."""

SPECIALIST_DESCRIPTION = "Delegate a research task to the research specialist, which looks facts up and reports back."
"""What the parent's model reads about the delegation tool."""
SUBAGENT_DESCRIPTION = "Looks one fact up with lookup_fact and reports back in a sentence or two."
"""What a client reads about the subagent (SUBAGENT_STARTED.description)."""

_OPEN_SPECIALISTS: contextvars.ContextVar[set[AsyncIterator] | None] = contextvars.ContextVar(
    "agui_strands_open_specialists", default=None
)


async def close_abandoned_specialists(events: AsyncIterator, run_input: object) -> AsyncIterator:
    """A stage: when the run ends, close every specialist stream it left open.

    Why: when a run is cancelled (its client went away) while two delegations run in parallel,
    Strands 1.62's concurrent tool executor cancels the tool tasks while they wait for their turn,
    outside the tool's stream, and never closes the streams: each specialist's ``stream_async``
    keeps its cancel-signal watcher task polling until the garbage collector finds the stream.
    Closing them here ends the specialists now.
    """
    open_streams: set[AsyncIterator] = set()
    _OPEN_SPECIALISTS.set(open_streams)
    try:
        async with aclosing(events):
            async for event in events:
                yield event
    finally:
        for stream in list(open_streams):
            if not getattr(stream, "ag_running", False):  # one still running is its task's to finish
                await stream.aclose()


def specialist_agent(model: Model) -> Agent:
    """A new research specialist. Its ``delete_file`` asks for approval through the same hook the
    bridge installs on the parent, so the pause has the same contract at both levels."""
    return Agent(
        name=RESEARCH_SPECIALIST,
        model=model,
        system_prompt=SPECIALIST_INSTRUCTIONS,
        tools=[lookup_fact, delete_file],
        hooks=[StrandsInterruptHook({DELETE_FILE: APPROVAL})],
        callback_handler=None,
    )


class SpecialistDelegation(AgentTool):
    """``research_specialist(task)``: runs a fresh specialist for every call.

    Each call wraps its own specialist in its own ``Agent.as_tool()`` and streams through it,
    which is what carries the specialist's approvals to the parent: Strands namespaces the
    specialist's interrupts ``v1:agent_as_tool:<toolUseId>:`` on the parent, stores the paused
    specialist turn in the parent's interrupt checkpoint, and on resume restores that turn into
    the next call's fresh specialist. (A specialist merely run inside a ``@tool`` loses its pause:
    the parent sees an ordinary result and the approval is never asked.)
    """

    def __init__(self, model: Model) -> None:
        super().__init__()
        self._model = model

    @property
    def tool_name(self) -> str:
        return RESEARCH_SPECIALIST

    @property
    def tool_type(self) -> str:
        return "agent"

    @property
    def tool_spec(self) -> ToolSpec:
        return {
            "name": RESEARCH_SPECIALIST,
            "description": SPECIALIST_DESCRIPTION,
            "inputSchema": {
                "json": {
                    "type": "object",
                    "properties": {"task": {"type": "string", "description": "What to research, in plain words."}},
                    "required": ["task"],
                }
            },
        }

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> ToolGenerator:
        arguments = tool_use.get("input")
        task = arguments.get("task", "") if isinstance(arguments, dict) else str(arguments or "")
        delegation = specialist_agent(self._model).as_tool(name=RESEARCH_SPECIALIST)
        stream = delegation.stream({**tool_use, "input": {"input": task}}, invocation_state, **kwargs)
        open_streams = _OPEN_SPECIALISTS.get()
        if open_streams is not None:
            open_streams.add(stream)
        try:
            async with aclosing(stream):
                async for event in stream:
                    yield event
        finally:
            if open_streams is not None:
                open_streams.discard(stream)


def parent_template(parent_model: Model, specialist_model: Model) -> Agent:
    """The agent the bridge clones for every thread (model, prompt and tool objects are shared)."""
    return Agent(
        name="demo_assistant",
        model=parent_model,
        system_prompt=PARENT_INSTRUCTIONS,
        tools=[get_weather, delete_file, update_recipe, write_document, SpecialistDelegation(specialist_model)],
        callback_handler=None,
    )
