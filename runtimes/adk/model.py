"""The ADK route's models: the offline scripted model and the OpenAI-compatible one.

``ScriptedLlm`` is a real ``google.adk.models.BaseLlm``: it reads the conversation ADK hands it
(``LlmRequest.contents``), asks the runtime-neutral script (``runtimes.script``) what to say next,
and yields ``LlmResponse`` chunks the way ADK's own model classes do (partial chunks, then the
aggregated final response), so the ADK runner, tools, bridge and emitter all run their real code.
One instance serves every thread and call, so it keeps no per-call state.

Arguments stream only for the tools named in ``streamed_args`` (the predictive-state tool), as
Gemini 3 streams them (``FunctionCall.partial_args``): ag-ui-adk 0.7.1 follows one streamed call at
a time and mints its own wire id for it, which parallel calls, approvals and frontend tools cannot
live with; every other call arrives whole.

The real model is ADK's own OpenAI Chat Completions class (``google.adk.integrations.openai``, over
the ``openai`` SDK), not ``LiteLlm`` (docs/dependencies.md says why), in :class:`StreamingOpenAILlm`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from ag_ui_adk.client_proxy_tool import ClientProxyTool
from google.adk.integrations.openai import OpenAILlm
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.models._capabilities import LlmCapabilities
from google.genai import types
from openai import AsyncOpenAI

from runtimes import script
from runtimes.config import RuntimeSettings
from runtimes.model_calls import model_call
from runtimes.script import WRITE_DOCUMENT, CallTools, Reply, Step, ToolCall, Turn, chunk_text

ScriptStep = Callable[[Turn], Step]


class ScriptedLlm(BaseLlm):
    """A deterministic ADK model driven by one of the script's step functions."""

    step: ScriptStep
    delay_s: float = 0.0
    streamed_args: frozenset[str] = frozenset()
    input_field: str | None = None
    """For an agent with an ``input_schema``: its input arrives as that schema's JSON document, and
    the script reads this field of it."""

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=False)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        # the client's tools: ag-ui-adk offers each one as a ClientProxyTool
        offered = [name for name, tool in llm_request.tools_dict.items() if isinstance(tool, ClientProxyTool)]
        turn = turn_from_contents(llm_request.contents, frontend_tools=offered)
        if self.input_field:
            turn.user_text = _field_of(turn.user_text, self.input_field)
        step = self.step(turn)
        responses = self._streamed(step) if stream else [_final(step)]
        responses[-1].usage_metadata = _usage(llm_request.contents, responses[-1])
        async for response in model_call(script.paced(responses, self.delay_s)):
            yield response

    def _streamed(self, step: Step) -> list[LlmResponse]:
        """One model turn in streaming mode: partial chunks, then the aggregated turn."""
        if isinstance(step, Reply):
            return [*(_text(chunk, partial=True) for chunk in step.chunks), _final(step)]
        assert isinstance(step, CallTools)
        calls = [(_call_id(), call) for call in step.calls]
        partials = [
            chunk
            for call_id, call in calls
            if len(calls) == 1 and call.name in self.streamed_args
            for chunk in _streamed_arguments(call_id, call)
        ]
        return [*partials, _calls(calls)]


def turn_from_contents(contents: Sequence[types.Content], frontend_tools: Sequence[str] = ()) -> Turn:
    """The script's view of an ADK conversation: the latest user text and the function responses
    that arrived after it, oldest first. A call answered twice (ADK's placeholder for a call waiting
    for confirmation, then the answer it got when it ran or was refused) counts with its last answer."""
    user_text, results = "", {}
    for content in contents:
        parts = content.parts or []
        texts = [part.text for part in parts if part.text and not part.thought]
        if content.role == "user" and texts:
            user_text, results = "\n".join(texts), {}
        for part in parts:
            response = part.function_response
            if response is not None and response.name:
                results[response.id or str(len(results))] = (response.name, result_text(response.response))
    return Turn(user_text=user_text, results=list(results.values()), frontend_tools=tuple(frontend_tools))


def _field_of(text: str, name: str) -> str:
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return text
    value = document.get(name) if isinstance(document, dict) else None
    return value if isinstance(value, str) else text


def result_text(response: Any) -> str:
    """A function response as text: ADK wraps a tool's plain return value in ``{"result": ...}``."""
    if isinstance(response, dict) and set(response) == {"result"}:
        response = response["result"]
    return response if isinstance(response, str) else json.dumps(response, default=str)


def _usage(contents: Sequence[types.Content], response: LlmResponse) -> types.GenerateContentResponseUsageMetadata:
    """What the turn cost, counted in words (ADK's telemetry asks every model for it)."""

    def words(content: types.Content | None) -> int:
        parts = content.parts or [] if content is not None else []
        return sum(len(part.model_dump_json(exclude_none=True).split()) for part in parts)

    prompt, answer = sum(words(content) for content in contents), words(response.content)
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=answer, total_token_count=prompt + answer
    )


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _final(step: Step) -> LlmResponse:
    if isinstance(step, Reply):
        return _text(step.text, partial=False)
    assert isinstance(step, CallTools)
    return _calls([(_call_id(), call) for call in step.calls])


def _calls(calls: list[tuple[str, ToolCall]]) -> LlmResponse:
    parts = [
        types.Part(function_call=types.FunctionCall(id=call_id, name=call.name, args=call.arguments))
        for call_id, call in calls
    ]
    return LlmResponse(content=types.Content(role="model", parts=parts), partial=False, turn_complete=True)


def _streamed_arguments(call_id: str, call: ToolCall) -> list[LlmResponse]:
    """A call whose string arguments stream: the name, each argument in pieces, the end marker."""
    pieces = [
        types.PartialArg(json_path=f"$.{name}", string_value=piece)
        for name, value in call.arguments.items()
        if isinstance(value, str)
        for piece in chunk_text(value, size=24)
    ]
    chunks = [
        types.FunctionCall(id=call_id, name=call.name, will_continue=True),
        *(types.FunctionCall(id=call_id, partial_args=[piece], will_continue=True) for piece in pieces),
        types.FunctionCall(id=call_id, will_continue=False),
    ]
    return [
        LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=chunk)]), partial=True)
        for chunk in chunks
    ]


def _text(text: str, *, partial: bool) -> LlmResponse:
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part.from_text(text=text)]),
        partial=partial,
        turn_complete=None if partial else True,
    )


class StreamingOpenAILlm(OpenAILlm):
    """ADK's ``OpenAILlm``, always streaming from the endpoint and naming its failures.

    * Streams even when ADK asks for a unary answer (an ``AgentTool`` runs its agent unary) and
      yields only the aggregated final response then: ``AGUI_MODEL_TIMEOUT_S`` bounds every wait
      for a chunk, so a model that streams steadily is never cut off.
    * Passes on the partial function-call chunks (``partial_args``) of one call per answer, the
      first one named in ``streamed_args`` (the predictive-state tool), and ends it with the end
      marker ``OpenAILlm`` never sends, as soon as another call starts or the answer is complete:
      ag-ui-adk 0.7.1 follows one streamed call at a time, under an id of its own, and matches the
      complete call to it by name. Every other call arrives whole.
    * Counts the call against the run's budget and records its failure for the run
      (``runtimes.model_calls``), so the run's RUN_ERROR gets a ``MODEL_*`` code.
    """

    streamed_args: frozenset[str] = frozenset()

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        responses = super().generate_content_async(llm_request, stream=True)
        streaming: str | None = None  # the call whose argument chunks are passed on, until it ends
        streamed = False  # one streamed call per answer
        async for response in model_call(responses, unreadable_is_the_model=True):
            call = _partial_call(response)
            if streaming is not None and (call is None or call.id != streaming):
                yield _end_of_call(streaming)
                streaming = None
            if call is not None and call.id and stream and not streamed and call.name in self.streamed_args:
                streaming, streamed = call.id, True
            passed_on = _is_text(response) or (streaming is not None and call is not None and call.id == streaming)
            if response.partial and not (stream and passed_on):
                continue
            yield response


def _partial_call(response: LlmResponse) -> types.FunctionCall | None:
    """The call a partial function-call chunk of ``OpenAILlm`` belongs to (one call per chunk)."""
    parts = response.content.parts if response.content and response.partial else None
    return parts[0].function_call if parts and len(parts) == 1 else None


def _end_of_call(call_id: str) -> LlmResponse:
    """The end marker of a streamed call's arguments, as Gemini sends it."""
    end = types.FunctionCall(id=call_id, will_continue=False)
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=end)]), partial=True)


def _is_text(response: LlmResponse) -> bool:
    parts = response.content.parts if response.content else None
    return bool(parts) and all(part.function_call is None for part in parts)


def models_for(settings: RuntimeSettings) -> tuple[BaseLlm, BaseLlm]:
    """The parent's and the specialist's model for ``settings.agui_model``. Building them never
    touches the network: a missing or wrong key fails the first run with RUN_ERROR, not the boot."""
    if settings.agui_model == "openai":
        endpoint = AsyncOpenAI(
            api_key=settings.openai_api_key or "not-set",
            base_url=settings.openai_base_url,
            timeout=settings.agui_model_timeout_s,
            max_retries=0,  # the timeout bounds the whole call, as the setting promises
        )
        model = StreamingOpenAILlm(
            model=settings.agui_model_id, client=endpoint, streamed_args=frozenset({WRITE_DOCUMENT})
        )
        return model, model
    delay_s = settings.agui_script_delay_ms / 1000
    return (
        ScriptedLlm(
            model="scripted:parent", step=script.parent_step, delay_s=delay_s, streamed_args=frozenset({WRITE_DOCUMENT})
        ),
        ScriptedLlm(model="scripted:specialist", step=script.specialist_step, delay_s=delay_s, input_field="task"),
    )
