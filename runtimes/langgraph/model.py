"""The chat models behind the LangGraph route: the offline scripted model, or a real endpoint.

``ScriptedChatModel`` is a real LangChain chat model (``BaseChatModel``): it reads the conversation
the agent loop hands it, asks the runtime-neutral script (``runtimes.script``) what to say next, and
streams that as ``AIMessageChunk`` pieces, text or tool-call chunks, through ``script.paced``, as
one ``runtimes.model_calls.model_call`` (counted against the run's budget). So the agent graph,
its ToolNode, the checkpointer, the bridge and the emitter downstream all run their real code.
One instance serves every thread, so it keeps no per-call state.

With ``AGUI_MODEL=openai`` the route uses langchain-openai's ``ChatOpenAI`` (Chat Completions,
which local servers such as Ollama, LM Studio and vLLM implement), as :class:`EndpointChatModel`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import agenerate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI

from runtimes import script
from runtimes.config import RuntimeSettings
from runtimes.model_calls import model_call
from runtimes.script import CallTools, Reply, Step, Turn, chunk_json

ScriptStep = Callable[[Turn], Step]


def turn_from_messages(messages: Sequence[BaseMessage], frontend_tools: Sequence[str] = ()) -> Turn:
    """The script's view of a LangChain conversation: the latest user text and the tool results
    that arrived after it, oldest first, each named by the assistant tool call it answers."""
    names: dict[str, str] = {}
    user_text, results = "", []
    for message in messages:
        if isinstance(message, AIMessage):
            names.update((call["id"], call["name"]) for call in message.tool_calls if call.get("id"))
        elif isinstance(message, HumanMessage) and message.text.strip():
            user_text, results = message.text, []
        elif isinstance(message, ToolMessage):
            results.append((names.get(message.tool_call_id, "unknown"), message.text))
    return Turn(user_text=user_text, results=results, frontend_tools=tuple(frontend_tools))


class ScriptedChatModel(BaseChatModel):
    """A deterministic chat model driven by one of the script's step functions."""

    step: ScriptStep
    delay_s: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "agui-scripted"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: object = None, **kwargs: Any) -> Any:
        """The tools offered, in the OpenAI function format a real chat model would send."""
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("the scripted model only runs on the event loop (it streams)")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message: AIMessageChunk | None = None
        async for chunk in self._astream(messages, stop, run_manager, **kwargs):
            message = chunk.message if message is None else message + chunk.message
        assert message is not None
        return ChatResult(generations=[ChatGeneration(message=AIMessage(**message.model_dump(exclude={"type"})))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        offered = [tool["function"]["name"] for tool in kwargs.get("tools") or ()]
        frontend = [name for name in offered if name not in script.BACKEND_TOOLS]
        step = self.step(turn_from_messages(messages, frontend_tools=frontend))
        async for chunk in model_call(script.paced(_chunks(step), self.delay_s)):
            yield ChatGenerationChunk(message=chunk)


def _chunks(step: Step) -> list[AIMessageChunk]:
    """One model turn as the chunks a streaming chat model yields, closed by an empty chunk with the
    finish reason (as OpenAI-compatible endpoints stream it)."""
    if isinstance(step, Reply):
        chunks = [AIMessageChunk(content=piece) for piece in step.chunks]
    else:
        assert isinstance(step, CallTools)
        chunks = []
        for index, call in enumerate(step.calls):
            call_id = f"call_{uuid.uuid4().hex[:24]}"  # named first, then the arguments, as OpenAI streams a call
            chunks.append(_call_chunk(index, name=call.name, call_id=call_id, args=""))
            chunks.extend(_call_chunk(index, args=piece) for piece in chunk_json(call.arguments))
    finish = "stop" if isinstance(step, Reply) else "tool_calls"
    chunks.append(AIMessageChunk(content="", response_metadata={"finish_reason": finish}, chunk_position="last"))
    return chunks


def _call_chunk(
    index: int | None, *, args: str, name: str | None = None, call_id: str | None = None, message_id: str | None = None
) -> AIMessageChunk:
    piece = tool_call_chunk(name=name, args=args, id=call_id, index=index)
    return AIMessageChunk(content="", id=message_id, tool_call_chunks=[piece])


class EndpointChatModel(ChatOpenAI):
    """``ChatOpenAI`` as the route needs it, on any OpenAI-compatible endpoint:

    * each call is one ``runtimes.model_calls.model_call``: counted against the run's budget, its
      failure named (a readable message and a ``MODEL_*`` code, ``errors`` says why) and recorded;
    * always streamed, so ``AGUI_MODEL_TIMEOUT_S`` bounds every chunk;
    * its chunks reach the bridge one piece at a time, as OpenAI streams them
      (:func:`_as_openai_streams`): ag-ui-langgraph 0.0.47 reads one tool call per chunk, drops the
      arguments that arrive with a call's name, and drops a chunk with a ``finish_reason`` whole,
      so a call that arrives whole in the final chunk (Ollama, llama.cpp) would lose its arguments
      on the wire, a second call its start, and a frontend tool's call (never run in the graph,
      so never told again) would not reach the client at all.
    """

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        async for chunk in model_call(super()._astream(*args, **kwargs), unreadable_is_the_model=True):
            for piece in _as_openai_streams(chunk):
                yield piece

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        return await agenerate_from_stream(self._astream(*args, **kwargs))


def _as_openai_streams(chunk: ChatGenerationChunk) -> list[ChatGenerationChunk]:
    """``chunk`` as the pieces OpenAI streams one per chunk: its text, each tool call's name, each
    call's arguments, and its end (finish reason, usage) on its own. A chunk of one piece stays."""
    message = chunk.message
    if not isinstance(message, AIMessageChunk):
        return [chunk]
    pieces = [AIMessageChunk(content=message.content, id=message.id)] if message.content else []
    for call in message.tool_call_chunks:
        index, name, call_id, args = call.get("index"), call.get("name"), call.get("id"), call.get("args") or ""
        if name:
            pieces.append(_call_chunk(index, name=name, call_id=call_id, args="", message_id=message.id))
        if args:
            pieces.append(_call_chunk(index, args=args, message_id=message.id))
    ends = bool((chunk.generation_info or {}).get("finish_reason"))
    if not pieces or (len(pieces) == 1 and not ends):
        return [chunk]
    end = AIMessageChunk(
        content="",
        id=message.id,
        response_metadata=dict(message.response_metadata),
        usage_metadata=message.usage_metadata,
        chunk_position=message.chunk_position,
    )
    ended = ChatGenerationChunk(message=end, generation_info=chunk.generation_info)
    return [*(ChatGenerationChunk(message=piece) for piece in pieces), ended]


def chat_model(settings: RuntimeSettings, step: ScriptStep) -> BaseChatModel:
    """The chat model one agent of this route talks to. Building it never touches the network.

    ``step`` is the script the offline model follows for this agent; a real model ignores it. A
    missing or wrong key is only discovered by the first request, which ends in RUN_ERROR.
    """
    if settings.agui_model == "scripted":
        return ScriptedChatModel(step=step, delay_s=settings.agui_script_delay_ms / 1000)
    return EndpointChatModel(
        model=settings.agui_model_id,
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key or "not-set",
        timeout=settings.agui_model_timeout_s,
        max_retries=0,  # the timeout bounds the whole call, as the setting promises
        streaming=True,
        # Not langchain-openai's own per-chunk timer as well (120 s): the timeout above bounds every
        # chunk, and its asyncio.wait_for can swallow the run's cancellation on Python 3.11 when a
        # chunk arrives at that moment (the call then waits on, and holds, a stalled connection).
        stream_chunk_timeout=None,
    )
