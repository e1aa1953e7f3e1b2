"""Model failures on the LangGraph route as RUN_ERROR codes a client can act on.

ag-ui-langgraph 0.0.47 catches whatever the graph raises and answers it itself: SUBAGENT_ERROR
for every open subagent, then RUN_ERROR, both with ``str(exc)`` as the message and no code. So
the failure is named where it happens: every model call of the route goes through
``runtimes.model_calls.model_call`` (counted against the run's budget, named, recorded for the
run; ``NamingChatOpenAI`` here, the scripted model in ``model``), the shared stage
``runtimes.model_errors.name_model_errors`` puts the recorded code on the bridge's RUN_ERROR, and
:func:`name_subagent_errors` puts it on the bridge's SUBAGENT_ERROR, which only this bridge emits
itself.

A model failure anywhere ends the run: LangGraph's ToolNode re-raises what a tool raised, so a
specialist's failed model call fails its delegation, the parent's graph and the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, EventType, RunAgentInput
from langchain_core.language_models.chat_models import agenerate_from_stream
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from runtimes import model_errors
from runtimes.langgraph import cancel
from runtimes.model_calls import model_call


class NamingChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose calls count against the run's budget and whose failures carry a
    readable message and a RUN_ERROR code."""

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        cancel.track()
        async for chunk in model_call(super()._astream(*args, **kwargs), unreadable_is_the_model=True):
            yield chunk

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        """Streamed as well, so ``AGUI_MODEL_TIMEOUT_S`` bounds every chunk and the call is one
        :func:`model_call` however LangChain asks for it."""
        return await agenerate_from_stream(self._astream(*args, **kwargs))


async def name_subagent_errors(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """A stage inside ``name_model_errors`` (which opens the run's record): the recorded model
    failure's code and message on the bridge's SUBAGENT_ERROR."""
    async with aclosing(events):
        async for event in events:
            failed = model_errors.failure()
            if event.type == EventType.SUBAGENT_ERROR and failed is not None:
                event = event.model_copy(update={"code": failed.code, "message": str(failed)})
            yield event
