"""The Microsoft Agent Framework dialect of the subagent emitter (a thin layer on emitters.core).

Why it exists: agent-framework-ag-ui 1.7.0 shows a delegation to an agent used as a tool
(``Agent.as_tool``) as one parent tool call with nothing on the wire while the specialist runs;
the specialist's own text and tool calls never reach the client, and the parent TOOL_CALL_END is
held back until the result. MAF offers two seams, and this module hooks both:

* :class:`DelegationMiddleware`, a ``FunctionMiddleware`` on the parent agent, is the only place
  that sees the parent tool call id (``context.metadata["call_id"]``). It starts the subagent in
  the core, publishes the delegation in a ContextVar, and finishes or fails it (how a failure
  then ends the tool call is the runtime's own middleware's business, not the emitter's).
* :func:`forward_specialist_update`, the ``stream_callback`` of ``specialist.as_tool(...)``, sees
  every specialist update live and maps it onto the shared translator (``emitters.delegation``),
  which puts the specialist's text and tool calls on the wire, attributed.

All bookkeeping (ids, ordering, the early parent TOOL_CALL_END, closing on terminal events) is the
core's and the translator's. Which delegation an update belongs to lives in a ContextVar: MAF runs
each tool call in its own task with a copied context, so parallel delegations never mix.

When to delete it: the day agent-framework-ag-ui emits SUBAGENT_* itself. The core's native latch
then stands this dialect down on its own, and ``tests/test_native_probe.py`` fails so the team
removes this module, the middleware and the stream callback on purpose.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field

from agent_framework import AgentResponseUpdate, Content, FunctionInvocationContext, FunctionMiddleware

from emitters.core import current_run
from emitters.delegation import Delegation

APPROVAL_NOT_PROPAGATED = "SUBAGENT_APPROVAL_UNSUPPORTED"
"""SUBAGENT_ERROR code when a specialist asks for an approval MAF cannot carry to the parent."""
SPECIALIST_ERROR = "SPECIALIST_ERROR"
"""SUBAGENT_ERROR code of any other failure of the specialist."""


@dataclass
class _Specialist:
    """One running delegation, as this dialect follows it: the translator, and the approvals its
    specialist asked for (which ``as_tool`` cannot carry to the parent)."""

    delegation: Delegation
    approvals_requested: list[Content] = field(default_factory=list)

    def forward(self, update: AgentResponseUpdate) -> None:
        for content in update.contents:
            if content.type == "text" and content.text:
                self.delegation.text(content.text, source=update.message_id or update.response_id)
            elif content.type == "function_call" and content.call_id:
                if content.name:
                    self.delegation.tool_call(content.call_id, content.name)
                arguments = content.arguments
                if arguments:
                    delta = arguments if isinstance(arguments, str) else json.dumps(arguments)
                    self.delegation.tool_args(delta, content.call_id)
            elif content.type == "function_result" and content.call_id:
                self.delegation.tool_result(content.call_id, result_text(content.result))
            elif content.type == "function_approval_request" and content.function_call is not None:
                self.approvals_requested.append(content.function_call)

    def settle(self) -> None:
        """A call that waited for an approval gets a result saying it was not run."""
        for call in self.approvals_requested:
            if call.call_id:
                self.delegation.tool_result(call.call_id, "Not run: it needs an approval.")


_CURRENT: contextvars.ContextVar[_Specialist | None] = contextvars.ContextVar("agui_msaf_delegation", default=None)


def forward_specialist_update(update: AgentResponseUpdate) -> None:
    """``stream_callback`` for ``specialist.as_tool``: put one specialist update on the wire."""
    specialist = _CURRENT.get()
    if specialist is not None:
        specialist.forward(update)


class DelegationMiddleware(FunctionMiddleware):
    """Brackets every call of a delegation tool with SUBAGENT_STARTED and FINISHED/ERROR.

    Only the wire: a specialist that fails closes its subagent with SUBAGENT_ERROR and the failure
    goes on up unchanged (what the parent makes of it is the runtime's policy, in a middleware
    outside this one). The code says why: ``SUBAGENT_APPROVAL_UNSUPPORTED`` when the specialist
    asked for an approval, which ``as_tool`` cannot carry to the parent; what ``failure_code``
    names (the runtime's model failures); ``SPECIALIST_ERROR`` otherwise.
    """

    def __init__(
        self,
        delegation_tools: Collection[str],
        *,
        failure_code: Callable[[BaseException], str | None] = lambda exc: None,
    ) -> None:
        self._names = frozenset(delegation_tools)
        self._failure_code = failure_code

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        run = current_run()
        call_id = context.metadata.get("call_id")
        name = context.function.name
        if run is None or run.native or name not in self._names or not call_id:
            await call_next()
            return
        specialist = _Specialist(Delegation.of(run, call_id, name))
        token = _CURRENT.set(specialist)
        try:
            await call_next()
        except Exception as exc:
            specialist.settle()
            specialist.delegation.fail(*self._failure(name, specialist, exc))
            raise
        finally:
            _CURRENT.reset(token)
        specialist.delegation.finish(result=result_text(context.result))

    def _failure(self, name: str, specialist: _Specialist, exc: Exception) -> tuple[str, str]:
        if specialist.approvals_requested:
            tools = ", ".join(sorted({call.name or "a tool" for call in specialist.approvals_requested}))
            return (
                f"{name} asked for approval to run {tools}, and Microsoft Agent Framework does not carry "
                "approvals out of an agent used as a tool; nothing was run.",
                APPROVAL_NOT_PROPAGATED,
            )
        return f"{name} could not finish: {str(exc) or type(exc).__name__}", self._failure_code(exc) or SPECIALIST_ERROR


def result_text(result: object) -> str:
    """A tool result as the text a client shows."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(isinstance(item, Content) for item in result):
        return "".join(item.text or "" for item in result)
    return json.dumps(result, default=str)
