"""What the MAF route does when its research specialist fails: the parent is told, or the run ends.

agent-framework runs an agent used as a tool (``as_tool``) like any function: an exception from
it fails the tool call. Two outcomes are wanted instead:

* a model failure (``errors.describe`` names it) ends the whole run with that code: the endpoint
  the parent would ask next is the one that just failed. ``MiddlewareFailure`` is how a function
  middleware aborts a run (agent-framework never turns it into a tool result);
* any other failure becomes the tool's result, saying why, so the parent model can tell the user.
  One cause is MAF's own: ``as_tool`` cannot carry a specialist's approval request to the parent
  run (agent-framework-core 1.23 raises instead), so the result says the action needs asking for
  directly. Which approvals the specialist asked for is seen in its stream (:func:`observing`).

This middleware sits outside the subagent emitter's (``emitters.msaf.DelegationMiddleware``), so
the emitter sees the specialist's failure first and closes its subagent; standing the emitter down
changes nothing here.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Collection

from agent_framework import (
    AgentResponseUpdate,
    FunctionInvocationContext,
    FunctionMiddleware,
    MiddlewareFailure,
    MiddlewareTermination,
    UserInputRequiredException,
)

from runtimes.msaf.errors import describe

StreamCallback = Callable[[AgentResponseUpdate], None]

_APPROVALS: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("agui_msaf_approvals", default=None)
"""The tools this delegation's specialist asked approval for (set per call by the middleware;
MAF runs each tool call in its own task with a copied context)."""


def observing(forward: StreamCallback) -> StreamCallback:
    """The ``stream_callback`` for ``as_tool``: note the specialist's approval requests, then ``forward``."""

    def callback(update: AgentResponseUpdate) -> None:
        approvals = _APPROVALS.get()
        if approvals is not None:
            approvals.update(
                content.function_call.name or "a tool"
                for content in update.contents
                if content.type == "function_approval_request" and content.function_call is not None
            )
        forward(update)

    return callback


class SpecialistFailures(FunctionMiddleware):
    """A failed delegation becomes a tool result, or ends the run when the model failed."""

    def __init__(self, delegation_tools: Collection[str]) -> None:
        self._names = frozenset(delegation_tools)

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        name = context.function.name
        if name not in self._names:
            await call_next()
            return
        approvals: set[str] = set()
        token = _APPROVALS.set(approvals)
        try:
            await call_next()
        except (MiddlewareTermination, MiddlewareFailure, UserInputRequiredException):
            raise
        except Exception as exc:  # noqa: BLE001 - a failed specialist becomes a tool result, not a crash
            named = describe(exc)
            if named is not None:
                raise MiddlewareFailure(str(named)) from exc
            context.result = _told(name, approvals, exc)
        finally:
            _APPROVALS.reset(token)


def failure_code(exc: BaseException) -> str | None:
    """The SUBAGENT_ERROR code of a specialist's failure, when the model is what failed."""
    named = describe(exc)
    return named.code if named is not None else None


def _told(name: str, approvals: set[str], exc: Exception) -> str:
    if approvals:
        return (
            f"{name} could not finish: it asked for approval to run {', '.join(sorted(approvals))}, and Microsoft "
            "Agent Framework does not carry approvals out of an agent used as a tool. Nothing was run; ask for "
            "that action directly instead."
        )
    return f"{name} could not finish: {str(exc) or type(exc).__name__}"
