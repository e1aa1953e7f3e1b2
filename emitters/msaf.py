"""The Microsoft Agent Framework dialect of the subagent emitter (a thin layer on emitters.core).

Why it exists: agent-framework-ag-ui 1.7.0 shows a delegation to an agent used as a tool
(``Agent.as_tool``) as one parent tool call with nothing on the wire while the specialist runs;
the specialist's own text and tool calls never reach the client, and the parent TOOL_CALL_END is
held back until the result. MAF offers two seams, and this module hooks both:

* :class:`DelegationMiddleware`, a ``FunctionMiddleware`` on the parent agent, is the only place
  that sees the parent tool call id (``context.metadata["call_id"]``). It starts the subagent in
  the core, publishes the delegation in a ContextVar, and finishes or fails it.
* :func:`forward_specialist_update`, the ``stream_callback`` of ``specialist.as_tool(...)``, sees
  every specialist update live and turns it into attributed TEXT_MESSAGE_* / TOOL_CALL_* events.

All bookkeeping (ids, ordering, the early parent TOOL_CALL_END, closing on terminal events) is the
core's. Per-delegation state lives in a ContextVar: MAF runs each tool call in its own task with
a copied context, so parallel delegations never see each other's state.

When to delete it: the day agent-framework-ag-ui emits SUBAGENT_* itself. The core's native latch
then stands this dialect down on its own, and ``tests/test_native_probe.py`` fails so the team
removes this module, the middleware and the stream callback on purpose.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field

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
from agent_framework import (
    AgentResponseUpdate,
    Content,
    FunctionInvocationContext,
    FunctionMiddleware,
    MiddlewareFailure,
    MiddlewareTermination,
    UserInputRequiredException,
)

from emitters.core import SubagentRun, current_run

APPROVAL_NOT_PROPAGATED = "SUBAGENT_APPROVAL_UNSUPPORTED"
"""SUBAGENT_ERROR code when a specialist asks for an approval MAF cannot carry to the parent."""


@dataclass
class _Delegation:
    """One running delegation: its subagent id and how far its specialist's stream has got."""

    run: SubagentRun
    subagent_id: str
    text_id: str | None = None
    text_source: str | None = None
    open_calls: set[str] = field(default_factory=set)
    approvals_requested: list[Content] = field(default_factory=list)
    messages: int = 0

    def forward(self, update: AgentResponseUpdate) -> None:
        for content in update.contents:
            if content.type == "text" and content.text:
                self._text(content.text, update.message_id or update.response_id)
            elif content.type == "function_call" and content.call_id:
                self._call(content)
            elif content.type == "function_result" and content.call_id:
                self._result(content)
            elif content.type == "function_approval_request" and content.function_call is not None:
                self.approvals_requested.append(content.function_call)

    def close(self) -> None:
        """End whatever the specialist left open, so the subagent closes on a valid stream; a
        call that waited for an approval gets a result saying it was not run."""
        self._end_text()
        for call in self.approvals_requested:
            if call.call_id:
                self._result(Content.from_function_result(call.call_id, result="Not run: it needs an approval."))
        for wire_id in sorted(self.open_calls):
            self._emit(ToolCallEndEvent(tool_call_id=wire_id))
        self.open_calls.clear()

    def _text(self, delta: str, source: str | None) -> None:
        if self.text_id is not None and source != self.text_source:
            self._end_text()
        if self.text_id is None:
            self.messages += 1
            self.text_id, self.text_source = f"{self.subagent_id}:msg-{self.messages}", source
            self._emit(TextMessageStartEvent(message_id=self.text_id, role="assistant"))
        self._emit(TextMessageContentEvent(message_id=self.text_id, delta=delta))

    def _end_text(self) -> None:
        if self.text_id is not None:
            self._emit(TextMessageEndEvent(message_id=self.text_id))
            self.text_id = self.text_source = None

    def _call(self, content: Content) -> None:
        wire_id = self._wire_id(content.call_id)
        if content.name and wire_id not in self.open_calls:
            self._end_text()
            self.open_calls.add(wire_id)
            self._emit(ToolCallStartEvent(tool_call_id=wire_id, tool_call_name=content.name))
        arguments = content.arguments
        if arguments and wire_id in self.open_calls:
            delta = arguments if isinstance(arguments, str) else json.dumps(arguments)
            self._emit(ToolCallArgsEvent(tool_call_id=wire_id, delta=delta))

    def _result(self, content: Content) -> None:
        wire_id = self._wire_id(content.call_id)
        if wire_id in self.open_calls:
            self.open_calls.discard(wire_id)
            self._emit(ToolCallEndEvent(tool_call_id=wire_id))
        self.messages += 1
        self._emit(
            ToolCallResultEvent(
                message_id=f"{self.subagent_id}:msg-{self.messages}",
                tool_call_id=wire_id,
                content=result_text(content.result),
                role="tool",
            )
        )

    def _wire_id(self, call_id: str | None) -> str:
        """The specialist's call id, namespaced: two specialists may mint the same ids."""
        return f"{self.subagent_id}:{call_id}"

    def _emit(self, event: BaseEvent) -> None:
        self.run.emit(event, self.subagent_id)


_CURRENT: contextvars.ContextVar[_Delegation | None] = contextvars.ContextVar("agui_msaf_delegation", default=None)


def forward_specialist_update(update: AgentResponseUpdate) -> None:
    """``stream_callback`` for ``specialist.as_tool``: put one specialist update on the wire."""
    delegation = _CURRENT.get()
    if delegation is not None:
        delegation.forward(update)


class DelegationMiddleware(FunctionMiddleware):
    """Brackets every call of a delegation tool with SUBAGENT_STARTED and FINISHED/ERROR.

    A specialist that fails (including one that asked for an approval, which ``as_tool``
    cannot carry to the parent) closes with SUBAGENT_ERROR, and the parent model receives a
    tool result that says why, so it can tell the user instead of the run crashing. A failure
    ``fatal`` names (the runtime's model failures: the endpoint the parent would ask next is the
    one that just failed) closes the subagent with SUBAGENT_ERROR and its code, then aborts the
    whole run with ``MiddlewareFailure``, which MAF never turns into a tool result.
    """

    def __init__(
        self,
        delegation_tools: Collection[str],
        *,
        fatal: Callable[[BaseException], Exception | None] = lambda exc: None,
    ) -> None:
        self._names = frozenset(delegation_tools)
        self._fatal = fatal

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        run = current_run()
        call_id = context.metadata.get("call_id")
        name = context.function.name
        if run is None or name not in self._names or not call_id:
            await call_next()
            return
        delegation = _Delegation(run, run.start(call_id, name))
        token = _CURRENT.set(delegation)
        try:
            await call_next()
        except (MiddlewareTermination, MiddlewareFailure, UserInputRequiredException) as exc:
            delegation.close()
            run.fail(delegation.subagent_id, str(exc) or type(exc).__name__, code=type(exc).__name__)
            raise
        except Exception as exc:  # noqa: BLE001 - a failed specialist becomes a tool result, not a crash
            delegation.close()
            fatal = self._fatal(exc)
            if fatal is not None:
                run.fail(delegation.subagent_id, str(fatal), code=getattr(fatal, "code", None) or type(fatal).__name__)
                raise MiddlewareFailure(str(fatal)) from exc
            message, code = _failure(name, delegation, exc)
            run.fail(delegation.subagent_id, message, code=code)
            context.result = message
            return
        finally:
            _CURRENT.reset(token)
        delegation.close()
        run.finish(delegation.subagent_id, result=result_text(context.result))


def _failure(name: str, delegation: _Delegation, exc: Exception) -> tuple[str, str]:
    if delegation.approvals_requested:
        tools = ", ".join(sorted({call.name or "a tool" for call in delegation.approvals_requested}))
        return (
            f"{name} could not finish: it asked for approval to run {tools}, and Microsoft Agent Framework "
            "does not carry approvals out of an agent used as a tool. Nothing was run; ask for that "
            "action directly instead.",
            APPROVAL_NOT_PROPAGATED,
        )
    return f"{name} could not finish: {str(exc) or type(exc).__name__}", type(exc).__name__


def result_text(result: object) -> str:
    """A tool result as the text a client shows."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(isinstance(item, Content) for item in result):
        return "".join(item.text or "" for item in result)
    return json.dumps(result, default=str)
