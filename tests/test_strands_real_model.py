"""POST /strands/agent on a real model: Strands' ``OpenAIModel`` against a local OpenAI-compatible
server (real HTTP, real client library). Model failures on every route: tests/test_hardening_models.py."""

from __future__ import annotations

import json

from tests.fake_openai import real_model_settings
from tests.wire import live_server, post_run, run_input
from verifier import verify_events

ROUTE = "/strands/agent"


def test_text_and_backend_tool_on_a_real_model(endpoint: str) -> None:
    with live_server(real_model_settings(endpoint)) as base:
        text = post_run(base, ROUTE, run_input("Hello there!"))
        weather = post_run(base, ROUTE, run_input("What's the weather like?"))
    for run in (text, weather):
        assert verify_events(run.events) == [] and run.terminal["type"] == "RUN_FINISHED"
    assert len(text.of_type("TEXT_MESSAGE_CONTENT")) >= 2
    # Strands sends content as a list of parts; the fake server echoes it verbatim.
    assert text.text().startswith("Fake model reply to:") and "Hello there!" in text.text()
    (call,) = weather.of_type("TOOL_CALL_START")
    (result,) = weather.of_type("TOOL_CALL_RESULT")
    assert call["toolCallName"] == "get_weather" and result["toolCallId"] == call["toolCallId"]
    assert json.loads(result["content"])["city"] == "Oslo"
    assert weather.text().startswith("Fake model read the tool result:") and "Oslo" in weather.text()
