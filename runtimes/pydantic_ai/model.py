"""The models behind the Pydantic AI route: the offline scripted model, or a real endpoint.

The scripted model is Pydantic AI's own ``FunctionModel`` with a stream function: it reads the
conversation the agent hands it, asks ``runtimes.script`` what to say, and streams that as text
chunks or tool-call deltas through ``script.paced``. Everything downstream of the model (the agent
loop, tool execution, deferred approvals, the AG-UI adapter) is the real code path.

With ``AGUI_MODEL=openai`` both agents use Pydantic AI's Chat Completions model (not its Responses
model, which local servers such as Ollama, LM Studio and vLLM do not implement).

Either way every model call counts against its run's budget (``runtimes.budget``):
:class:`CountedModelCalls` is a capability on both agents. The real model is
:class:`NamingOpenAIChatModel`: an answer its client library cannot read (garbage on the wire,
when the stream opens or mid-stream) is the model's failure (``MODEL_ERROR``), not a crash.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from openai import AsyncOpenAI
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponseStreamEvent, ToolReturnPart, UserPromptPart
from pydantic_ai.models import Model, ModelRequestContext, StreamedResponse
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIStreamedResponse
from pydantic_ai.providers.openai import OpenAIProvider

from runtimes import budget, script
from runtimes.config import RuntimeSettings
from runtimes.model_errors import ModelError, describe
from runtimes.script import CallTools, Reply, Step, Turn, chunk_json

ScriptStep = Callable[[Turn], Step]


@dataclass
class CountedModelCalls(AbstractCapability[Any]):
    """Every model call counts against its run's budget; the one past it fails the run with
    ``TOO_MANY_MODEL_CALLS`` (a specialist's calls count against its parent run's budget too)."""

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        budget.spend()
        return request_context


def turn_from_messages(messages: Sequence[ModelMessage], info: AgentInfo) -> Turn:
    """The script's view of a conversation: the latest user text, the tool results since, and the
    tools the client declared (Pydantic AI offers them as ``external`` tools)."""
    user_text, results = "", []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                content = part.content if isinstance(part.content, str) else " ".join(map(str, part.content))
                if content.strip():
                    user_text, results = content, []
            elif isinstance(part, ToolReturnPart):
                results.append((part.tool_name, part.model_response_str()))
    frontend = tuple(tool.name for tool in info.function_tools if tool.kind == "external")
    return Turn(user_text=user_text, results=results, frontend_tools=frontend)


def _pieces(step: Step) -> list[str | DeltaToolCalls]:
    """One model turn as ``FunctionModel`` stream items: text chunks, or tool-call deltas (the name
    and id first, then the JSON arguments in pieces)."""
    if isinstance(step, Reply):
        return list(step.chunks)
    assert isinstance(step, CallTools)
    pieces: list[str | DeltaToolCalls] = []
    for index, call in enumerate(step.calls):
        call_id = f"pai_call_{uuid.uuid4().hex[:16]}"
        for n, chunk in enumerate(chunk_json(call.arguments)):
            first = n == 0
            pieces.append(
                {
                    index: DeltaToolCall(
                        name=call.name if first else None, json_args=chunk, tool_call_id=call_id if first else None
                    )
                }
            )
    return pieces


def scripted_model(step: ScriptStep, *, delay_s: float) -> FunctionModel:
    """A deterministic ``FunctionModel`` that streams what ``step`` decides. Stateless per call."""

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        async for piece in script.paced(_pieces(step(turn_from_messages(messages, info))), delay_s):
            yield piece

    return FunctionModel(stream_function=stream, model_name=f"scripted:{step.__name__}")


class NamingOpenAIChatModel(OpenAIChatModel):
    """``OpenAIChatModel`` whose unreadable answers are named model failures, when the stream opens
    (``request_stream``) and while it streams (``_streamed_response_cls``, which Pydantic AI
    documents as the hook for subclasses)."""

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StreamedResponse]:
        try:
            async with super().request_stream(*args, **kwargs) as response:
                yield response
        except Exception as exc:
            if describe(exc) is None:
                raise _unreadable(exc) from exc
            raise

    @property
    def _streamed_response_cls(self) -> type[OpenAIStreamedResponse]:
        return _NamingStreamedResponse


class _NamingStreamedResponse(OpenAIStreamedResponse):
    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        try:
            async for event in super()._get_event_iterator():
                yield event
        except Exception as exc:
            if describe(exc) is None:
                raise _unreadable(exc) from exc
            raise


def _unreadable(exc: Exception) -> ModelError:
    """An answer the client library could not read, and no classifier names, as ``MODEL_ERROR``."""
    return ModelError("MODEL_ERROR", f"The model endpoint's answer could not be read ({type(exc).__name__}).")


def openai_model(settings: RuntimeSettings) -> OpenAIChatModel:
    """An OpenAI-compatible Chat Completions model. Built without contacting the endpoint, so a
    missing or wrong key surfaces as a RUN_ERROR on the first request, never at startup."""
    client = AsyncOpenAI(
        api_key=settings.openai_api_key or "not-set",
        base_url=settings.openai_base_url,
        timeout=settings.agui_model_timeout_s,
        max_retries=0,  # the timeout bounds the whole call, as the setting promises
    )
    return NamingOpenAIChatModel(settings.agui_model_id, provider=OpenAIProvider(openai_client=client))


def models_for(settings: RuntimeSettings) -> tuple[Model, Model]:
    """The parent's and the specialist's model for ``settings.agui_model``."""
    if settings.agui_model == "openai":
        model = openai_model(settings)
        return model, model
    delay_s = settings.agui_script_delay_ms / 1000
    return (
        scripted_model(script.parent_step, delay_s=delay_s),
        scripted_model(script.specialist_step, delay_s=delay_s),
    )
