"""The Strands models: the offline scripted model and the OpenAI-compatible one.

``ScriptedModel`` is a real ``strands.models.Model``: it reads the conversation Strands hands it,
asks the runtime-neutral script (``runtimes.script``) what to do next, and streams that as
Bedrock-shaped ``StreamEvent`` chunks, so the agent loop, tools, bridge and emitter downstream
all run their real code. One instance serves every thread, so it keeps no per-call state.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from runtimes import script
from runtimes.config import RuntimeSettings
from runtimes.model_calls import model_call
from runtimes.script import (
    BACKEND_TOOLS,
    CallTools,
    Reply,
    Step,
    Turn,
    chunk_json,
    parent_step,
    specialist_step,
)
from runtimes.strands.errors import NamingOpenAIModel

ScriptStep = Callable[[Turn], Step]


class ScriptedModel(Model):
    """A deterministic Strands model driven by one of the script's step functions."""

    def __init__(self, step: ScriptStep, *, delay_s: float) -> None:
        self._step = step
        self._config: dict[str, Any] = {"model_id": f"scripted:{step.__name__}", "delay_s": delay_s}

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self._config)

    def structured_output(self, output_model: Any, prompt: Messages, system_prompt: str | None = None, **kwargs: Any):
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        offered = [spec["name"] for spec in tool_specs or []]
        step = self._step(turn_from_messages(messages, frontend_tools=[n for n in offered if n not in BACKEND_TOOLS]))
        paced = script.paced(_stream_events(step), float(self._config["delay_s"]), is_chunk=_is_delta)
        async for event in model_call(paced):
            yield event


def _is_delta(event: StreamEvent) -> bool:
    return "contentBlockDelta" in event


def turn_from_messages(messages: Messages, frontend_tools: Sequence[str] = ()) -> Turn:
    """The script's view of a Strands conversation: the latest user text and the tool results
    that arrived after it, oldest first, each named by the assistant tool use it answers."""
    names: dict[str, str] = {}
    user_text, results = "", []
    for message in messages:
        blocks = message.get("content") or []
        for block in blocks:
            if "toolUse" in block:
                names[block["toolUse"]["toolUseId"]] = block["toolUse"]["name"]
        if message.get("role") != "user":
            continue
        texts = [block["text"] for block in blocks if "text" in block]
        if texts:
            user_text, results = "\n".join(texts), []
        for block in blocks:
            if "toolResult" in block:
                result = block["toolResult"]
                results.append((names.get(result.get("toolUseId", ""), "unknown"), _result_text(result)))
    return Turn(user_text=user_text, results=results, frontend_tools=tuple(frontend_tools))


def _result_text(result: dict) -> str:
    parts = []
    for block in result.get("content") or []:
        if "text" in block:
            parts.append(block["text"])
        elif "json" in block:
            parts.append(json.dumps(block["json"]))
    return "".join(parts)


def _stream_events(step: Step) -> list[StreamEvent]:
    """One model turn as Bedrock ``StreamEvent`` chunks."""
    events: list[StreamEvent] = [{"messageStart": {"role": "assistant"}}]
    if isinstance(step, Reply):
        events.append({"contentBlockStart": {"start": {}}})
        events.extend({"contentBlockDelta": {"delta": {"text": chunk}}} for chunk in step.chunks)
        events.append({"contentBlockStop": {}})
        events.append({"messageStop": {"stopReason": "end_turn"}})
        return events
    assert isinstance(step, CallTools)
    for call in step.calls:
        tool_use_id = f"tooluse_{uuid.uuid4().hex[:16]}"
        events.append({"contentBlockStart": {"start": {"toolUse": {"toolUseId": tool_use_id, "name": call.name}}}})
        events.extend(
            {"contentBlockDelta": {"delta": {"toolUse": {"input": piece}}}} for piece in chunk_json(call.arguments)
        )
        events.append({"contentBlockStop": {}})
    events.append({"messageStop": {"stopReason": "tool_use"}})
    return events


def models_for(settings: RuntimeSettings) -> tuple[Model, Model]:
    """The parent's and the specialist's model for ``settings.agui_model``."""
    if settings.agui_model == "openai":
        model = openai_model(settings)
        return model, model
    delay_s = settings.agui_script_delay_ms / 1000
    return ScriptedModel(parent_step, delay_s=delay_s), ScriptedModel(specialist_step, delay_s=delay_s)


def openai_model(settings: RuntimeSettings) -> NamingOpenAIModel:
    """An OpenAI-compatible Chat Completions model. Built without contacting the endpoint, so a
    missing or wrong key surfaces as a RUN_ERROR on the first request, never at startup."""
    return NamingOpenAIModel(
        client_args={
            "base_url": settings.openai_base_url,
            "api_key": settings.openai_api_key or "not-set",
            "timeout": settings.agui_model_timeout_s,
            "max_retries": 0,
        },
        model_id=settings.agui_model_id,
    )
