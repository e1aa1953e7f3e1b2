"""Model failures on the LangGraph route as RUN_ERROR codes a client can act on.

ag-ui-langgraph 0.0.47 catches whatever the graph raises and answers it itself: SUBAGENT_ERROR
for every open subagent, then RUN_ERROR, both with ``str(exc)`` as the message and no code. So
the failure is named where it happens: ``NamingChatOpenAI`` raises a readable
:class:`~runtimes.model_errors.ModelError` (that message is what the bridge then puts on the
wire) and records it for the run; the stage ``name_model_errors`` gives each run its own record
and puts the code on the bridge's SUBAGENT_ERROR and RUN_ERROR. The codes are shared with every
runtime (``runtimes.model_errors``).

A model failure anywhere ends the run: LangGraph's ToolNode re-raises what a tool raised, so a
specialist's failed model call fails its delegation, the parent's graph and the run.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, EventType, RunAgentInput
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from runtimes.langgraph import cancel
from runtimes.model_errors import ModelError, describe

_FAILURES: contextvars.ContextVar[list[ModelError] | None] = contextvars.ContextVar(
    "agui_langgraph_model_failures", default=None
)
_NAMED = frozenset({EventType.RUN_ERROR, EventType.SUBAGENT_ERROR})


def _named(exc: Exception) -> ModelError | None:
    """The model failure behind ``exc``, recorded for the run; None when the model is not what failed."""
    named = describe(exc)
    failures = _FAILURES.get()
    if named is not None and failures is not None:
        failures.append(named)
    return named


class NamingChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose failures carry a readable message and a RUN_ERROR code."""

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        cancel.track()
        try:
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk
        except Exception as exc:
            named = _named(exc)
            if named is None or named is exc:
                raise
            raise named from exc

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        cancel.track()
        try:
            return await super()._agenerate(*args, **kwargs)
        except Exception as exc:
            named = _named(exc)
            if named is None or named is exc:
                raise
            raise named from exc


async def name_model_errors(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """Give the run its own failure record, then put the recorded model failure's code on the
    bridge's SUBAGENT_ERROR and RUN_ERROR. The record is set before the bridge starts, in the run's
    own context, so the parent's and the specialists' model calls all record into it."""
    _FAILURES.set([])
    async with aclosing(events):
        async for event in events:
            failures = _FAILURES.get()
            if event.type in _NAMED and failures:
                event = event.model_copy(update={"code": failures[-1].code, "message": str(failures[-1])})
            yield event
