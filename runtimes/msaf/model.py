"""The chat clients behind the MAF route: the offline scripted model, or a real endpoint.

The scripted client is a genuine Microsoft Agent Framework chat client: it composes the same
layers as the shipped clients (function invocation, chat middleware, telemetry), so tools really
run and the AG-UI bridge's native approval execution recognises it. It only decides *what* to
say (``runtimes.script``); everything downstream of the model is the real code path.

With ``AGUI_MODEL=openai`` the route uses MAF's Chat Completions client (not its Responses
client, which local servers such as Ollama, LM Studio and vLLM do not implement).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
)
from agent_framework.observability import ChatTelemetryLayer
from agent_framework_openai import OpenAIChatCompletionClient
from openai import AsyncOpenAI

from runtimes import script
from runtimes.config import RuntimeSettings
from runtimes.script import CallTools, Reply, Step, Turn, chunk_json

ScriptStep = Callable[[Turn], Step]


def turn_from_messages(messages: Sequence[Message], tools: Sequence[Any] = ()) -> Turn:
    """The script's view of a conversation: the latest user request and the results since."""
    user_text = ""
    start = 0
    for index, message in enumerate(messages):
        text = message.text.strip()
        if message.role == "user" and text:
            user_text, start = text, index + 1
    names: dict[str, str] = {}
    results: list[tuple[str, str]] = []
    for message in messages[start:]:
        for content in message.contents:
            if content.type == "function_call" and content.call_id:
                names[content.call_id] = content.name or ""
            elif content.type == "function_result" and content.call_id:
                results.append((names.get(content.call_id, ""), str(content.result or "")))  # the result's text
    frontend = [tool.name for tool in tools if getattr(tool, "declaration_only", False)]
    return Turn(user_text=user_text, results=results, frontend_tools=frontend)


class ScriptedChatClient(FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer, BaseChatClient):
    """A deterministic model that streams what ``step`` decides. Stateless per call."""

    OTEL_PROVIDER_NAME = "agui-scripted"

    def __init__(self, step: ScriptStep, *, delay_s: float = 0.0) -> None:
        super().__init__()
        self._step = step
        self._delay_s = delay_s

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse] | Awaitable[ChatResponse]:
        step = self._step(turn_from_messages(messages, options.get("tools") or ()))
        updates = self._stream(step)
        if stream:
            return self._build_response_stream(updates)
        return self._collect(updates)

    async def _collect(self, updates: AsyncIterator[ChatResponseUpdate]) -> ChatResponse:
        return ChatResponse.from_updates([update async for update in updates])

    async def _stream(self, step: Step) -> AsyncIterator[ChatResponseUpdate]:
        response_id = f"scripted-{uuid.uuid4().hex[:12]}"
        message_id = f"msg-{uuid.uuid4().hex[:12]}"

        def update(content: Content, finish: str | None = None) -> ChatResponseUpdate:
            return ChatResponseUpdate(
                role="assistant",
                contents=[content],
                message_id=message_id,
                response_id=response_id,
                finish_reason=finish,
            )

        pieces: list[tuple[Content, str | None]] = []
        if isinstance(step, Reply):
            last = len(step.chunks) - 1
            pieces = [(Content.from_text(chunk), "stop" if i == last else None) for i, chunk in enumerate(step.chunks)]
        elif isinstance(step, CallTools):
            for call in step.calls:
                pieces.extend(_function_call_pieces(call.name, call.arguments))
            pieces[-1] = (pieces[-1][0], "tool_calls")
        async for content, finish in script.paced(pieces, self._delay_s):
            yield update(content, finish)


def _function_call_pieces(name: str, arguments: dict) -> list[tuple[Content, str | None]]:
    """One tool call as a model streams it: the name first, then the JSON arguments in pieces."""
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    occurrence = f"af-call-{uuid.uuid4().hex}"  # as MAF's OpenAI clients mint; approval interrupt ids use it
    return [
        (Content.from_function_call(call_id, name if index == 0 else "", arguments=chunk, id=occurrence), None)
        for index, chunk in enumerate(chunk_json(arguments))
    ]


def chat_client(settings: RuntimeSettings, step: ScriptStep) -> BaseChatClient:
    """The client one agent of this route talks to. Building it never touches the network.

    ``step`` is the script the offline model follows for this agent; a real model ignores it.
    A missing or wrong key is only discovered by the first request, which ends in RUN_ERROR.
    """
    if settings.agui_model == "scripted":
        return ScriptedChatClient(step, delay_s=settings.agui_script_delay_ms / 1000)
    endpoint = AsyncOpenAI(
        api_key=settings.openai_api_key or "not-set",
        base_url=settings.openai_base_url,
        timeout=settings.agui_model_timeout_s,
        max_retries=0,  # the timeout bounds the whole call, as the setting promises
    )
    return OpenAIChatCompletionClient(model=settings.agui_model_id, async_client=endpoint)
