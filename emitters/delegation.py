"""The one delegation translator every dialect uses: a specialist's stream as attributed events.

A dialect knows how its runtime reports what a specialist is doing (Strands forwards the
specialist's ``stream_async`` dicts, Microsoft Agent Framework calls back with response updates);
it maps that onto the calls below, and this class keeps the wire valid:

* text: one TEXT_MESSAGE_START / CONTENT... / END per message, a new ``source`` (the runtime's
  message identity) closing the previous message; starting a tool call closes the open text;
* tool calls: TOOL_CALL_START / ARGS... / END, then TOOL_CALL_RESULT; a result closes its call if
  the runtime never did;
* ids: every specialist tool call is ``<parent tool call id>::<specialist's id>`` on the wire
  (:func:`~emitters.core.specialist_tool_call_id`: two specialists may mint the same ids), the same
  id the emitter core puts in an interrupt a specialist raises;
* attribution: everything goes through :meth:`SubagentRun.emit`, so it carries ``subagentRunId``.

One instance per delegation tool call, kept in ``run.delegations`` under the parent tool call id
while it is open (:meth:`Delegation.of`), so a dialect whose hooks are called once per specialist
event finds it again, and nothing outlives the run.
"""

from __future__ import annotations

import uuid

from ag_ui.core import (
    BaseEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from emitters.core import SubagentRun, specialist_tool_call_id


class Delegation:
    """One delegation tool call's subagent, and what of its specialist's stream is open."""

    def __init__(self, run: SubagentRun, parent_tool_call_id: str, name: str, description: str | None = None) -> None:
        self.run = run
        self.parent_tool_call_id = parent_tool_call_id
        self.subagent_id = run.start(parent_tool_call_id, name, description)
        self._text_id: str | None = None
        self._text_source: object = None
        self._open_calls: dict[str, None] = {}  # wire ids, in start order

    @classmethod
    def of(cls, run: SubagentRun, parent_tool_call_id: str, name: str, description: str | None = None) -> Delegation:
        """The run's open delegation for this tool call, started on first use."""
        delegation = run.delegations.get(parent_tool_call_id)
        if delegation is None:
            delegation = run.delegations[parent_tool_call_id] = cls(run, parent_tool_call_id, name, description)
        return delegation

    # --- what the specialist does ---------------------------------------------------------------

    def text(self, delta: str, source: object = None) -> None:
        """A piece of the specialist's text; a different ``source`` starts a new message."""
        if not delta:
            return
        if self._text_id is not None and source != self._text_source:
            self.end_text()
        if self._text_id is None:
            self.end_tool_calls()
            self._text_id, self._text_source = f"{self.subagent_id}:msg-{uuid.uuid4().hex[:12]}", source
            self._emit(TextMessageStartEvent(message_id=self._text_id, role="assistant"))
        self._emit(TextMessageContentEvent(message_id=self._text_id, delta=delta))

    def end_text(self) -> None:
        if self._text_id is not None:
            self._emit(TextMessageEndEvent(message_id=self._text_id))
            self._text_id = self._text_source = None

    def tool_call(self, inner_id: str | None, name: str) -> str:
        """The specialist starts calling a tool; returns the call's id on the wire."""
        wire_id = self.wire_id(inner_id)
        if wire_id not in self._open_calls:
            self.end_text()
            self._open_calls[wire_id] = None
            self._emit(ToolCallStartEvent(tool_call_id=wire_id, tool_call_name=name))
        return wire_id

    def tool_args(self, delta: str, inner_id: str | None = None) -> None:
        """A piece of a call's JSON arguments; without ``inner_id``, of the call started last."""
        wire_id = self.wire_id(inner_id) if inner_id else next(reversed(self._open_calls), None)
        if delta and wire_id in self._open_calls:
            self._emit(ToolCallArgsEvent(tool_call_id=wire_id, delta=delta))

    def end_tool_call(self, inner_id: str | None) -> None:
        wire_id = self.wire_id(inner_id)
        if wire_id in self._open_calls:
            del self._open_calls[wire_id]
            self._emit(ToolCallEndEvent(tool_call_id=wire_id))

    def end_tool_calls(self) -> None:
        for wire_id in list(self._open_calls):
            del self._open_calls[wire_id]
            self._emit(ToolCallEndEvent(tool_call_id=wire_id))

    def tool_result(self, inner_id: str | None, content: str) -> None:
        self.end_tool_call(inner_id)
        self._emit(
            ToolCallResultEvent(
                message_id=f"{self.subagent_id}:result-{uuid.uuid4().hex[:12]}",
                tool_call_id=self.wire_id(inner_id),
                content=content,
                role="tool",
            )
        )

    # --- how the delegation ends --------------------------------------------------------------

    def close(self) -> None:
        """End whatever the specialist left open, so the subagent closes on a valid stream."""
        self.end_text()
        self.end_tool_calls()

    def finish(self, result: object | None = None) -> None:
        self._done()
        self.run.finish(self.subagent_id, result=result)

    def fail(self, message: str, code: str | None = None) -> None:
        self._done()
        self.run.fail(self.subagent_id, message, code=code)

    def wire_id(self, inner_id: str | None) -> str:
        """The id the client sees for one of the specialist's tool calls."""
        return specialist_tool_call_id(self.parent_tool_call_id, inner_id or uuid.uuid4().hex)

    def _done(self) -> None:
        self.close()
        self.run.delegations.pop(self.parent_tool_call_id, None)

    def _emit(self, event: BaseEvent) -> None:
        self.run.emit(event, self.subagent_id)
