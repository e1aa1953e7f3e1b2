"""The Pydantic AI dialect of the subagent emitter (a thin layer on ``emitters.core``).

Why it exists: Pydantic AI's AG-UI adapter (pydantic-ai-slim 2.31) streams one agent run. Its
documented way to delegate is to run a second agent inside a tool of the first; the adapter then
shows one parent tool call and its result, and nothing of the specialist: not its text, not its
tool calls, nothing saying a subagent ran. The delegation tool, though, runs the specialist with
``run_stream_events`` and so sees every event of its run live, and knows the parent call it serves
(``RunContext.tool_call_id``). :class:`SpecialistStream` is what such a tool feeds them to:

* it opens the subagent for the parent call (SUBAGENT_STARTED, through the core);
* :meth:`SpecialistStream.feed` maps each Pydantic AI event of the specialist (part starts, deltas
  and ends for text and tool calls, tool results) onto the shared translator
  (``emitters.delegation``), which puts them on the wire live, attributed;
* the tool then closes it: :meth:`finish` (SUBAGENT_FINISHED), :meth:`fail` (SUBAGENT_ERROR with a
  code), or :meth:`suspend` when the specialist waits for an approval (the core closes it as
  ``suspended`` with the run's interrupt outcome).

Outside a route (the bare benchmark app, a unit test) or once the core stood down, it does nothing.

When to delete it: the day Pydantic AI's AG-UI adapter emits SUBAGENT_* itself. The core's native
latch then stands this dialect down on its own, and ``tests/test_native_probe.py`` fails so the
team removes this module and its use in the delegation tool on purpose.
"""

from __future__ import annotations

from pydantic_ai.messages import (
    AgentStreamEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
)
from pydantic_core import to_json

from emitters.core import current_run
from emitters.delegation import Delegation


class SpecialistStream:
    """One delegation call's subagent, fed with its specialist's Pydantic AI events."""

    def __init__(self, parent_tool_call_id: str | None, name: str, description: str | None = None) -> None:
        run = current_run()
        active = run is not None and not run.native and bool(parent_tool_call_id)
        self._delegation = Delegation.of(run, parent_tool_call_id, name, description) if active else None

    def feed(self, event: AgentStreamEvent) -> None:
        """Translate one event of the specialist's run."""
        delegation = self._delegation
        if delegation is None:
            return
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                delegation.end_text()
                delegation.text(part.content)
            elif isinstance(part, ToolCallPart):
                delegation.tool_call(part.tool_call_id, part.tool_name)
                delegation.tool_args(_args_text(part.args), part.tool_call_id)
        elif isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                delegation.text(delta.content_delta)
            elif isinstance(delta, ToolCallPartDelta) and delta.tool_call_id:
                delegation.tool_args(_args_text(delta.args_delta), delta.tool_call_id)
        elif isinstance(event, PartEndEvent):
            if isinstance(event.part, TextPart):
                delegation.end_text()
            elif isinstance(event.part, ToolCallPart):
                delegation.end_tool_call(event.part.tool_call_id)
        elif isinstance(event, FunctionToolResultEvent):
            part = event.part
            text = part.model_response_str() if isinstance(part, ToolReturnPart) else part.model_response()
            delegation.tool_result(part.tool_call_id, text)

    def finish(self, result: object | None = None) -> None:
        if self._delegation is not None:
            self._delegation.finish(result=result)

    def fail(self, message: str, code: str) -> None:
        if self._delegation is not None:
            self._delegation.fail(message, code=code)

    def suspend(self) -> None:
        """The specialist waits for an approval: end what it left open and leave the subagent to the
        core, which closes it ``suspended`` before the run's interrupt outcome."""
        if self._delegation is not None:
            self._delegation.close()


def _args_text(args: str | dict | None) -> str:
    if args is None:
        return ""
    return args if isinstance(args, str) else to_json(args).decode()
