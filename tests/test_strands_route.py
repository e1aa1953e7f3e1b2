"""Every AG-UI surface of ``POST /strands/agent`` over real HTTP/SSE, on the offline model.

Each stream is checked by the protocol verifier (a thread's runs together when a resume follows
an interrupt) and by content: the tool result reached the reply, the state the client ends with,
who the specialist's events are attributed to.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

from app.config import Settings
from runtimes.script import fact_about, weather_report
from tests.wire import Run, answered_tool_call, live_server, post_run, run_input
from verifier import verify_events, verify_thread

ROUTE = "/strands/agent"
FRONTEND_TOOL = {
    "name": "change_background",
    "description": "Change the page background colour.",
    "parameters": {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]},
}


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=2)) as url:
        yield url


def run(base: str, message: str | None = None, **body: object) -> Run:
    result = post_run(base, ROUTE, run_input(message, **body))
    assert result.status == 200
    assert verify_events(result.events) == []
    return result


def resume(base: str, first: Run, payload: object = None, *, status: str = "resolved", **body: object) -> Run:
    """Answer every interrupt ``first`` ended with, on its thread; checks both runs as a thread."""
    entries = [{"interruptId": i["id"], "status": status, "payload": payload} for i in first.interrupts()]
    second = post_run(
        base, ROUTE, run_input(thread_id=first.events[0]["threadId"], messages=[], resume=entries, **body)
    )
    assert second.status == 200
    assert verify_thread([first.events, second.events]) == []
    return second


def client_state(result: Run, initial: dict) -> dict:
    """The state a client holds after applying every STATE_SNAPSHOT as a replacement."""
    state = initial
    for event in result.of_type("STATE_SNAPSHOT"):
        state = event["snapshot"]
    return state


# --- text and tools ------------------------------------------------------------------------


def test_text_streams_in_several_chunks(base: str) -> None:
    result = run(base, "Hello there!")
    assert result.types()[0] == "RUN_STARTED" and result.terminal["type"] == "RUN_FINISHED"
    assert len(result.of_type("TEXT_MESSAGE_CONTENT")) >= 3
    assert 'You said: "Hello there!"' in result.text()


def test_backend_tool_result_reaches_the_reply(base: str) -> None:
    result = run(base, "What's the weather in Tokyo?")
    (call,) = result.of_type("TOOL_CALL_START")
    assert call["toolCallName"] == "get_weather"
    (tool_result,) = result.of_type("TOOL_CALL_RESULT")
    assert tool_result["toolCallId"] == call["toolCallId"]
    report = weather_report("Tokyo")
    assert report["conditions"] in tool_result["content"]
    assert report["conditions"] in result.text() and str(report["temperature_c"]) in result.text()


def test_frontend_tool_is_called_for_the_client_and_its_result_continues_the_thread(base: str) -> None:
    first = run(base, "Please call change_background", tools=[FRONTEND_TOOL])
    (call,) = first.of_type("TOOL_CALL_START")
    assert call["toolCallName"] == "change_background"
    assert not first.of_type("TOOL_CALL_RESULT")  # the client runs it
    assert first.terminal["outcome"] == {"type": "success"}
    arguments = "".join(event["delta"] for event in first.of_type("TOOL_CALL_ARGS"))
    history = [
        {"id": "u1", "role": "user", "content": "Please call change_background"},
        *answered_tool_call(call, arguments, "the background is blue now"),
    ]
    second = post_run(
        base, ROUTE, run_input(thread_id=first.events[0]["threadId"], messages=history, tools=[FRONTEND_TOOL])
    )
    assert verify_thread([first.events, second.events]) == []
    assert "the background is blue now" in second.text()
    assert not second.of_type("TOOL_CALL_START")


# --- approval -------------------------------------------------------------------------------


def test_delete_file_asks_for_approval_and_runs_when_approved(base: str) -> None:
    first = run(base, "delete notes.txt")
    (interrupt,) = first.interrupts()
    (call,) = first.of_type("TOOL_CALL_START")
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == call["toolCallId"]
    assert interrupt["metadata"]["tool_input"] == {"path": "notes.txt"}
    assert not first.of_type("TOOL_CALL_RESULT")
    second = resume(base, first, {"approved": True})
    (tool_result,) = second.of_type("TOOL_CALL_RESULT")
    assert tool_result["toolCallId"] == call["toolCallId"] and "Deleted notes.txt." in tool_result["content"]
    assert "Done: Deleted notes.txt." in second.text()
    assert second.terminal["outcome"] == {"type": "success"}


@pytest.mark.parametrize(
    ("payload", "status"), [({"approved": False}, "resolved"), (None, "cancelled")], ids=["rejected", "cancelled"]
)
def test_delete_file_does_not_run_when_rejected_or_cancelled(base: str, payload: object, status: str) -> None:
    first = run(base, "delete notes.txt")
    second = resume(base, first, payload, status=status)
    (tool_result,) = second.of_type("TOOL_CALL_RESULT")
    assert "denied" in tool_result["content"] and "Deleted" not in tool_result["content"]
    assert "I did not delete notes.txt" in second.text()


def _bad_resume(base: str, first: Run, resume_entries: list[dict] | None, message: str | None = None) -> Run:
    body = run_input(message, thread_id=first.events[0]["threadId"])
    if resume_entries is not None:
        body["resume"] = resume_entries
    result = post_run(base, ROUTE, body)
    assert verify_events(result.events) == []
    assert result.types() == ["RUN_STARTED", "RUN_ERROR"]
    return result


def test_bad_resumes_are_run_errors_with_the_bridges_codes_and_the_approval_stays_open(base: str) -> None:
    first = run(base, "delete notes.txt")
    (interrupt,) = first.interrupts()
    unknown = _bad_resume(base, first, [{"interruptId": "nope", "status": "resolved", "payload": {"approved": True}}])
    assert unknown.terminal["code"] == "INTERRUPT_RESUME_ERROR" and "nope" in unknown.terminal["message"]
    wrong = _bad_resume(base, first, [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"ok": 1}}])
    assert wrong.terminal["code"] == "INVALID_PAYLOAD"
    parked = _bad_resume(base, first, None, message="Hello again")
    assert parked.terminal["code"] == "PENDING_INTERRUPTS"
    second = resume(base, first, {"approved": True})  # the checkpoint survived every bad answer
    assert "Done: Deleted notes.txt." in second.text()


@pytest.mark.parametrize(
    "message",
    ["delete a.txt and b.txt", "Compare delete a.txt and delete b.txt"],
    ids=["two-parent-approvals", "two-specialist-approvals"],
)
def test_partial_resume_of_two_pending_approvals_is_a_run_error(base: str, message: str) -> None:
    first = run(base, message)
    assert len(first.interrupts()) == 2
    one = first.interrupts()[0]
    partial = _bad_resume(
        base, first, [{"interruptId": one["id"], "status": "resolved", "payload": {"approved": True}}]
    )
    assert partial.terminal["code"] == "PARTIAL_RESUME"
    second = resume(base, first, {"approved": True})
    assert "Deleted a.txt." in second.text() and "Deleted b.txt." in second.text()


def test_two_approvals_answered_differently_run_only_the_approved_call(base: str) -> None:
    first = run(base, "delete a.txt and b.txt")
    by_path = {i["metadata"]["tool_input"]["path"]: i for i in first.interrupts()}
    approve, reject = by_path["a.txt"], by_path["b.txt"]
    entries = [
        {"interruptId": approve["id"], "status": "resolved", "payload": {"approved": True}},
        {"interruptId": reject["id"], "status": "resolved", "payload": {"approved": False}},
    ]
    second = post_run(base, ROUTE, run_input(thread_id=first.events[0]["threadId"], messages=[], resume=entries))
    assert verify_thread([first.events, second.events]) == []
    results = {e["toolCallId"]: e["content"] for e in second.of_type("TOOL_CALL_RESULT")}
    assert "Deleted" in results[approve["toolCallId"]] and "denied" in results[reject["toolCallId"]]
    assert "Done: Deleted a.txt." in second.text() and "Not done:" in second.text()


# --- shared state ---------------------------------------------------------------------------


def test_recipe_update_never_erases_sibling_state_keys(base: str) -> None:
    initial = {"keep": "me", "theme": {"dark": True}}
    result = run(base, "Make me a recipe for pancakes", state=initial)
    snapshots = [event["snapshot"] for event in result.of_type("STATE_SNAPSHOT")]
    assert len(snapshots) >= 3  # initial, the tool's update, final
    for snapshot in snapshots:
        assert snapshot["keep"] == "me" and snapshot["theme"] == {"dark": True}
    final = client_state(result, initial)
    assert final["recipe"]["title"] == "Pancakes" and "flour" in final["recipe"]["ingredients"]
    update_index = next(
        i for i, e in enumerate(result.events) if e["type"] == "STATE_SNAPSHOT" and "recipe" in e["snapshot"]
    )
    assert update_index < result.types().index("TEXT_MESSAGE_START")  # the update arrives before the reply


def test_write_document_predicts_state_from_the_streamed_argument(base: str) -> None:
    result = run(base, "Write a story about dragons", state={"keep": "me"})
    (predict,) = [e for e in result.of_type("CUSTOM") if e["name"] == "PredictState"]
    assert predict["value"] == [{"state_key": "document", "tool": "write_document", "tool_argument": "document"}]
    types = result.types()
    assert types.index("CUSTOM") < types.index("TOOL_CALL_START")
    assert len(result.of_type("TOOL_CALL_ARGS")) >= 3  # the argument streams, so the client can predict
    final = client_state(result, {"keep": "me"})
    assert "tale about dragons" in final["document"] and final["keep"] == "me"
    assert all(event["snapshot"]["keep"] == "me" for event in result.of_type("STATE_SNAPSHOT"))


# --- delegation -----------------------------------------------------------------------------


def _subagent_events(result: Run, subagent_id: str) -> list[dict]:
    """The specialist's content events (lifecycle events excluded)."""
    return [
        event
        for event in result.events
        if event.get("subagentRunId") == subagent_id and not event["type"].startswith("SUBAGENT_")
    ]


def test_research_delegates_to_a_specialist_shown_as_a_subagent(base: str) -> None:
    result = run(base, "Research the history of Lisbon")
    (call,) = [e for e in result.of_type("TOOL_CALL_START") if e["toolCallName"] == "research_specialist"]
    (started,) = result.of_type("SUBAGENT_STARTED")
    assert started["name"] == "research_specialist" and started["parentToolCallId"] == call["toolCallId"]
    subagent = started["subagentRunId"]
    finding = fact_about("the history of Lisbon")
    assert finding in result.text(subagent=True)
    own = _subagent_events(result, subagent)
    assert {e["type"] for e in own} >= {
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    }
    inner = [e for e in own if e["type"] == "TOOL_CALL_START"]
    assert [e["toolCallName"] for e in inner] == ["lookup_fact"]
    assert inner[0]["toolCallId"].startswith(f"{call['toolCallId']}::")
    (finished,) = result.of_type("SUBAGENT_FINISHED")
    assert finished["outcome"] == {"type": "success"} and finding in finished["result"]
    parent_result = next(
        i
        for i, e in enumerate(result.events)
        if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == call["toolCallId"]
    )
    assert max(result.events.index(e) for e in own) < result.events.index(finished) < parent_result
    assert f"According to the research specialist: Specialist finding: {finding}" in result.text(subagent=False)


def test_compare_runs_two_specialists_in_parallel_each_attributed_by_its_tool_call(base: str) -> None:
    result = run(base, "Compare Lisbon and Porto")
    calls = [e["toolCallId"] for e in result.of_type("TOOL_CALL_START") if e["toolCallName"] == "research_specialist"]
    started = result.of_type("SUBAGENT_STARTED")
    assert len(calls) == 2 and sorted(s["parentToolCallId"] for s in started) == sorted(calls)
    for start in started:
        own = _subagent_events(result, start["subagentRunId"])
        text = "".join(e["delta"] for e in own if e["type"] == "TEXT_MESSAGE_CONTENT")
        inner_calls = [e["toolCallId"] for e in own if e["type"].startswith("TOOL_CALL")]
        assert inner_calls and all(i.startswith(f"{start['parentToolCallId']}::") for i in inner_calls)
        assert text.count("Specialist finding:") == 1  # one specialist's text, not both
    texts = {
        "".join(e["delta"] for e in _subagent_events(result, s["subagentRunId"]) if e["type"] == "TEXT_MESSAGE_CONTENT")
        for s in started
    }
    assert {("Lisbon" in t, "Porto" in t) for t in texts} == {(True, False), (False, True)}
    assert len(result.of_type("SUBAGENT_FINISHED")) == 2
    assert fact_about("Lisbon") in result.text(subagent=False) and fact_about("Porto") in result.text(subagent=False)


def test_specialist_approval_suspends_the_subagent_and_the_resume_continues_it(base: str) -> None:
    first = run(base, "Research old logs and delete logs.txt")
    (started,) = first.of_type("SUBAGENT_STARTED")
    subagent = started["subagentRunId"]
    (interrupt,) = first.interrupts()
    assert interrupt["subagentRunId"] == subagent and interrupt["message"] == "Approve call to delete_file?"
    assert interrupt["id"].startswith(f"v1:agent_as_tool:{started['parentToolCallId']}:")
    (finished,) = first.of_type("SUBAGENT_FINISHED")
    assert finished["outcome"] == {"type": "suspended", "interruptIds": [interrupt["id"]]}
    assert first.types().index("SUBAGENT_FINISHED") < len(first.events) - 1
    inner_delete = [e for e in _subagent_events(first, subagent) if e["type"] == "TOOL_CALL_START"]
    assert [e["toolCallName"] for e in inner_delete] == ["delete_file"]

    second = resume(base, first, {"approved": True})
    (again,) = second.of_type("SUBAGENT_STARTED")
    assert again["subagentRunId"] == subagent and again["parentToolCallId"] == started["parentToolCallId"]
    inner_result = [e for e in _subagent_events(second, subagent) if e["type"] == "TOOL_CALL_RESULT"]
    assert [e["toolCallId"] for e in inner_result] == [inner_delete[0]["toolCallId"]]
    assert "Deleted logs.txt." in inner_result[0]["content"]
    assert "Specialist finding: Deleted logs.txt." in second.text(subagent=True)
    assert second.of_type("SUBAGENT_FINISHED")[0]["outcome"] == {"type": "success"}
    assert "According to the research specialist: Specialist finding: Deleted logs.txt." in second.text(subagent=False)


def test_specialist_approval_rejected_is_reported_by_the_specialist(base: str) -> None:
    first = run(base, "Research old logs and delete logs.txt")
    second = resume(base, first, {"approved": False})
    assert "the deletion was not approved" in second.text(subagent=True)
    assert "Deleted logs.txt." not in second.text()


def test_subagent_events_off_per_request_keeps_the_specialists_text_unattributed(base: str) -> None:
    result = run(base, "Research the history of Lisbon", forwardedProps={"subagentEvents": False})
    assert not [t for t in result.types() if t.startswith("SUBAGENT_")]
    assert not [e for e in result.events if "subagentRunId" in e]
    assert f"Specialist finding: {fact_about('the history of Lisbon')}" in result.text()
    assert [e["toolCallName"] for e in result.of_type("TOOL_CALL_START")] == ["research_specialist", "lookup_fact"]


def test_subagent_events_off_also_strips_attribution_from_a_specialists_interrupt(base: str) -> None:
    first = run(base, "Research old logs and delete logs.txt", forwardedProps={"subagentEvents": False})
    (interrupt,) = first.interrupts()
    assert "subagentRunId" not in interrupt and not first.of_type("SUBAGENT_FINISHED")
    second = resume(base, first, {"approved": True}, forwardedProps={"subagentEvents": False})
    assert not [t for t in second.types() if t.startswith("SUBAGENT_")]
    assert "Specialist finding: Deleted logs.txt." in second.text()


# --- logs -----------------------------------------------------------------------------------


def test_no_opentelemetry_detach_tracebacks_in_the_logs(base: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    for message in ("Hello", "What's the weather in Oslo?", "Research Lisbon", "Compare Lisbon and Porto"):
        run(base, message)
    resume(base, run(base, "Research old logs and delete logs.txt"), {"approved": True})
    frontend = [{"name": "change_background", "description": "Paints the page.", "parameters": {"type": "object"}}]
    run(base, "Please call change_background", tools=frontend)
    gc.collect()  # the frontend-tool stop leaves Strands' generators to the collector
    assert not [r for r in caplog.records if "Failed to detach context" in r.getMessage()]
