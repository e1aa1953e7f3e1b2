"""The models behind the Pydantic AI route: the offline scripted model, or a real endpoint.

The scripted model is Pydantic AI's own ``FunctionModel`` with a stream function: it reads the
conversation the agent hands it, asks ``runtimes.script`` what to say, and streams that as text
chunks or tool-call deltas through ``script.paced``. Everything downstream of the model (the agent
loop, tool execution, deferred approvals, the AG-UI adapter) is the real code path.

With ``AGUI_MODEL=openai`` both agents use Pydantic AI's Chat Completions model (not its Responses
model, which local servers such as Ollama, LM Studio and vLLM do not implement).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence

from openai import AsyncOpenAI
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from runtimes import script
from runtimes.config import RuntimeSettings
from runtimes.script import CallTools, Reply, Step, Turn, chunk_json

ScriptStep = Callable[[Turn], Step]


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


def openai_model(settings: RuntimeSettings) -> OpenAIChatModel:
    """An OpenAI-compatible Chat Completions model. Built without contacting the endpoint, so a
    missing or wrong key surfaces as a RUN_ERROR on the first request, never at startup."""
    client = AsyncOpenAI(
        api_key=settings.openai_api_key or "not-set",
        base_url=settings.openai_base_url,
        timeout=settings.agui_model_timeout_s,
        max_retries=0,  # the timeout bounds the whole call, as the setting promises
    )
    return OpenAIChatModel(settings.agui_model_id, provider=OpenAIProvider(openai_client=client))


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
