"""POST /msaf/agent on a real model: MAF's Chat Completions client against a local OpenAI-compatible
server (real HTTP, real client library). Model failures on every route: tests/test_hardening_models.py."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from runtimes import script
from tests import fake_openai
from tests.fake_openai import real_model_settings
from tests.test_msaf_route import parent_text, results_for, run_ok, tool_calls
from tests.wire import live_server, run_input


def test_text_and_backend_tool_on_a_real_model(endpoint: str) -> None:
    with live_server(real_model_settings(endpoint)) as base:
        text = run_ok(base, run_input("Hello there!"))
        weather = run_ok(base, run_input("What's the weather like?"))
    assert len(text.of_type("TEXT_MESSAGE_CONTENT")) >= 2
    assert parent_text(text) == "Fake model reply to: Hello there!"
    [call] = tool_calls(weather, "get_weather")
    [result] = results_for(weather, call["toolCallId"])
    assert json.loads(result["content"])["city"] == "Oslo"
    assert parent_text(weather) == f"Fake model read the tool result: {result['content']}"


def delegating_script(body: dict) -> Iterator[bytes]:
    """The fake model, taught to delegate: the parent calls research_specialist for "research",
    the specialist calls lookup_fact; everything else is the stock fake's behaviour."""
    tools = {tool["function"]["name"] for tool in body.get("tools") or []}
    messages = body.get("messages", [])
    if messages and messages[-1].get("role") != "tool":
        request = next(m["content"] for m in reversed(messages) if m.get("role") == "user")
        if "research_specialist" in tools and "research" in request.lower():
            return fake_openai._tool_call("research_specialist", {"task": request})
        if "lookup_fact" in tools:
            return fake_openai._tool_call("lookup_fact", {"topic": request})
    return stock_script(body)


stock_script = fake_openai._script


def test_delegation_on_a_real_model(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fake_openai, "_script", delegating_script)
    with live_server(real_model_settings(endpoint)) as base:
        run = run_ok(base, run_input("Research Lisbon"))
    [call] = tool_calls(run, "research_specialist")
    [started] = run.of_type("SUBAGENT_STARTED")
    assert started["parentToolCallId"] == call["toolCallId"]
    own = [e for e in run.events if e.get("subagentRunId") == started["subagentRunId"]]
    [lookup] = [e for e in own if e["type"] == "TOOL_CALL_START"]
    assert lookup["toolCallName"] == "lookup_fact"
    assert lookup["toolCallId"] != call["toolCallId"], "the fake reuses call ids; the emitter namespaces them"
    finding = f"Fake model read the tool result: {script.fact_about('Research Lisbon')}"
    assert run.text(subagent=True) == finding
    [result] = results_for(run, call["toolCallId"])
    assert result["content"] == finding
    assert parent_text(run) == f"Fake model read the tool result: {finding}"
