"""POST /msaf/agent over real HTTP/SSE on the offline model: text, tools, state, delegation.

Every stream must pass the protocol verifier; the assertions check content (what the client
would show and the state a strict JSON-Patch client ends with), not only event types.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import jsonpatch
import pytest

from app.config import Settings
from runtimes import script
from runtimes.msaf.cancel import GatedCall, PendingApprovals
from tests.wire import Run, answered_tool_call, live_server, post_run, run_input
from verifier import verify_events, verify_thread

ROUTE = "/msaf/agent"
DELAY_MS = 10


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=DELAY_MS)) as url:
        yield url


def run_ok(base: str, body: dict) -> Run:
    """POST one run; the stream must be valid and end in RUN_FINISHED."""
    run = post_run(base, ROUTE, body)
    assert run.status == 200, run.raw
    assert verify_events(run.events) == [], run.types()
    assert run.terminal["type"] == "RUN_FINISHED", run.terminal
    return run


def final_state(events: list[dict], state: dict | None = None) -> dict:
    """The state a client ends with: snapshots replace, deltas apply as strict RFC 6902 patches."""
    current = copy.deepcopy(state or {})
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            current = copy.deepcopy(event["snapshot"])
        elif event["type"] == "STATE_DELTA":
            current = jsonpatch.apply_patch(current, event["delta"], in_place=False)
    return current


def parent_text(run: Run) -> str:
    return run.text(subagent=False)


def tool_calls(run: Run, name: str) -> list[dict]:
    return [event for event in run.of_type("TOOL_CALL_START") if event["toolCallName"] == name]


def results_for(run: Run, tool_call_id: str) -> list[dict]:
    return [event for event in run.of_type("TOOL_CALL_RESULT") if event["toolCallId"] == tool_call_id]


# --- text and tools ----------------------------------------------------------------------------


def test_plain_message_streams_text_in_several_chunks(base: str) -> None:
    run = run_ok(base, run_input("Hello there!"))
    assert run.types()[0] == "RUN_STARTED"
    assert len(run.of_type("TEXT_MESSAGE_CONTENT")) >= 3
    assert 'You said: "Hello there!"' in parent_text(run)
    assert not run.of_type("SUBAGENT_STARTED")


def test_backend_tool_result_reaches_the_reply(base: str) -> None:
    run = run_ok(base, run_input("What's the weather in Tokyo?"))
    [call] = tool_calls(run, script.GET_WEATHER)
    args = json.loads(
        "".join(e["delta"] for e in run.of_type("TOOL_CALL_ARGS") if e["toolCallId"] == call["toolCallId"])
    )
    assert args == {"city": "Tokyo"}
    [result] = results_for(run, call["toolCallId"])
    assert json.loads(result["content"]) == script.weather_report("Tokyo")
    assert f"Here is the weather report: {result['content']}" in parent_text(run)


def test_frontend_tool_is_called_for_the_client_then_its_answer_is_used(base: str) -> None:
    declared = {
        "name": "change_background",
        "description": "Change the page background colour.",
        "parameters": {"type": "object", "properties": {"request": {"type": "string"}}},
    }
    first_body = run_input("Please call change_background", tools=[declared])
    first = run_ok(base, first_body)
    [call] = tool_calls(first, "change_background")
    assert not results_for(first, call["toolCallId"]), "the client runs a frontend tool, not the server"
    assert call["toolCallId"] in {e["toolCallId"] for e in first.of_type("TOOL_CALL_END")}
    arguments = "".join(e["delta"] for e in first.of_type("TOOL_CALL_ARGS") if e["toolCallId"] == call["toolCallId"])

    history = [*first_body["messages"], *answered_tool_call(call, arguments, "background is now blue")]
    second = run_ok(base, run_input(thread_id=first_body["threadId"], messages=history, tools=[declared]))
    assert "The tool change_background answered: background is now blue" in parent_text(second)


def test_missing_optional_fields_are_accepted(base: str) -> None:
    body = run_input("Hello there!")
    for key in ("tools", "context", "forwardedProps", "state"):
        body.pop(key)
    run_ok(base, body)


# --- shared and predictive state ---------------------------------------------------------------


def test_recipe_snapshot_is_the_full_merged_state(base: str) -> None:
    state = {"keep": "me", "document": "draft"}
    run = run_ok(base, run_input("Make me a recipe for pancakes", state=state))
    assert final_state(run.events, state) == {
        "keep": "me",
        "document": "draft",
        "recipe": script.recipe_for("pancakes"),
    }
    assert all("keep" in snapshot["snapshot"] for snapshot in run.of_type("STATE_SNAPSHOT")), "no partial snapshot"
    assert "The recipe is in the shared state now." in parent_text(run)


def test_document_streams_as_json_patch_a_strict_client_can_apply(base: str) -> None:
    run = run_ok(base, run_input("Write a story about dragons"))
    deltas = run.of_type("STATE_DELTA")
    assert len(deltas) >= 3, "the document should fill in while the argument streams"
    [call] = tool_calls(run, script.WRITE_DOCUMENT)
    types = run.types()
    end = next(
        i for i, e in enumerate(run.events) if e["type"] == "TOOL_CALL_END" and e["toolCallId"] == call["toolCallId"]
    )
    assert types.index("STATE_DELTA") < end, "predictive deltas arrive before the call ends"
    # Replay only what precedes the first delta plus the deltas themselves: patches alone must work.
    before = [e for e in run.events[: types.index("STATE_DELTA")] if e["type"] == "STATE_SNAPSHOT"]
    predicted = final_state([*before, *deltas])
    expected = script.document_about("dragons")
    assert predicted["document"] == expected
    growing = [patch["delta"][0]["value"] for patch in deltas]
    assert growing == sorted(growing, key=len) and expected.startswith(growing[0])
    assert final_state(run.events)["document"] == expected


def test_document_patches_apply_to_client_state_with_other_keys(base: str) -> None:
    state = {"keep": [1, 2]}
    run = run_ok(base, run_input("Write a story about harbours", state=state))
    end = final_state(run.events, state)
    assert end["keep"] == [1, 2]
    assert end["document"] == script.document_about("harbours")


# --- delegation --------------------------------------------------------------------------------


def subagent_events(run: Run, subagent_id: str) -> list[dict]:
    return [event for event in run.events if event.get("subagentRunId") == subagent_id]


def test_research_streams_an_attributed_live_subagent(base: str) -> None:
    run = run_ok(base, run_input("Research the history of Lisbon"))
    [call] = tool_calls(run, script.RESEARCH_SPECIALIST)
    parent_id = call["toolCallId"]
    [started] = run.of_type("SUBAGENT_STARTED")
    assert started["name"] == script.RESEARCH_SPECIALIST and started["parentToolCallId"] == parent_id
    sub_id = started["subagentRunId"]

    types = run.types()
    ends = [i for i, e in enumerate(run.events) if e["type"] == "TOOL_CALL_END" and e["toolCallId"] == parent_id]
    assert len(ends) == 1, "the bridge's late duplicate TOOL_CALL_END is dropped"
    assert ends[0] < types.index("SUBAGENT_STARTED"), "the parent call is closed before the subagent starts"

    own = subagent_events(run, sub_id)
    [lookup] = [e for e in own if e["type"] == "TOOL_CALL_START"]
    assert lookup["toolCallName"] == script.LOOKUP_FACT
    finding = f"Specialist finding: {script.fact_about('the history of Lisbon')}"
    assert "".join(e["delta"] for e in own if e["type"] == "TEXT_MESSAGE_CONTENT") == finding
    assert run.text(subagent=True) == finding

    [finished] = run.of_type("SUBAGENT_FINISHED")
    assert finished["subagentRunId"] == sub_id and finished["outcome"] == {"type": "success"}
    [parent_result] = results_for(run, parent_id)
    assert run.events.index(finished) < run.events.index(parent_result)
    assert parent_result["content"] == finding
    assert f"According to the research specialist: {finding}" in parent_text(run)

    # Live: the specialist's first words reach the client while it is still writing the rest.
    contents = [i for i, e in enumerate(run.events) if e["type"] == "TEXT_MESSAGE_CONTENT" and e.get("subagentRunId")]
    result_at = run.arrival[run.events.index(parent_result)]
    assert result_at - run.arrival[contents[0]] >= 2 * DELAY_MS / 1000


def test_compare_runs_two_specialists_attributed_by_tool_call_id(base: str) -> None:
    run = run_ok(base, run_input("Compare Lisbon and Porto"))
    calls = tool_calls(run, script.RESEARCH_SPECIALIST)
    assert len(calls) == 2
    started = run.of_type("SUBAGENT_STARTED")
    assert {e["parentToolCallId"] for e in started} == {c["toolCallId"] for c in calls}
    assert len({e["subagentRunId"] for e in started}) == 2
    findings = {}
    for event in started:
        own = subagent_events(run, event["subagentRunId"])
        text = "".join(e["delta"] for e in own if e["type"] == "TEXT_MESSAGE_CONTENT")
        [result] = results_for(run, event["parentToolCallId"])
        assert text == result["content"], "each specialist's text belongs to its own tool call"
        findings[event["parentToolCallId"]] = text
    assert sorted(findings.values()) == sorted(
        f"Specialist finding: {script.fact_about(city)}" for city in ("Lisbon", "Porto")
    )
    assert len(run.of_type("SUBAGENT_FINISHED")) == 2
    reply = parent_text(run)
    assert all(finding in reply for finding in findings.values())


def test_subagent_events_off_keeps_the_specialist_text_unattributed(base: str) -> None:
    run = run_ok(base, run_input("Research the history of Lisbon", forwardedProps={"subagentEvents": False}))
    assert not [t for t in run.types() if t.startswith("SUBAGENT_")]
    assert not [e for e in run.events if "subagentRunId" in e]
    finding = f"Specialist finding: {script.fact_about('the history of Lisbon')}"
    assert run.text().count(finding) == 2, "once from the specialist, once quoted in the parent's reply"
    assert [e["toolCallName"] for e in run.of_type("TOOL_CALL_START")] == [
        script.RESEARCH_SPECIALIST,
        script.LOOKUP_FACT,
    ]


def test_approval_inside_a_specialist_ends_it_with_a_clear_error_not_a_hang(base: str) -> None:
    run = run_ok(base, run_input("Research old logs and delete logs.txt"))
    assert not run.interrupts(), "MAF cannot carry a specialist's approval to the parent run"
    [error] = run.of_type("SUBAGENT_ERROR")
    assert error["code"] == "SUBAGENT_APPROVAL_UNSUPPORTED"
    assert "delete_file" in error["message"]
    [started] = run.of_type("SUBAGENT_STARTED")
    [child_call] = [e for e in subagent_events(run, started["subagentRunId"]) if e["type"] == "TOOL_CALL_START"]
    assert child_call["toolCallName"] == script.DELETE_FILE
    [child_result] = results_for(run, child_call["toolCallId"])
    assert child_result["content"].startswith("Not run")
    [parent_result] = results_for(run, started["parentToolCallId"])
    assert "approval" in parent_result["content"]
    assert parent_result["content"] in parent_text(run), "the parent tells the user why"


def test_a_thread_continues_after_a_delegation(base: str) -> None:
    body = run_input("Research the history of Lisbon")
    first = run_ok(base, body)
    [snapshot] = first.of_type("MESSAGES_SNAPSHOT")
    history = [*snapshot["messages"], {"id": "u2", "role": "user", "content": "What's the weather in Lisbon?"}]
    second = run_ok(base, run_input(thread_id=body["threadId"], messages=history))
    assert verify_thread([first.events, second.events]) == []
    assert "Here is the weather report" in parent_text(second)


def test_keepalive_comments_reach_this_route() -> None:
    settings = Settings(agui_script_delay_ms=150, agui_keepalive_s=0.05)
    with live_server(settings) as url:
        run = run_ok(url, run_input("Hello there!"))
    assert b": keepalive" in run.raw


def test_the_pending_approvals_registry_keeps_at_most_its_size_most_recent_first() -> None:
    pending = PendingApprovals(max_threads=3)
    for thread in ("t1", "t2", "t3", "t4", "t5"):
        pending.put(thread, {f"{thread}-interrupt": GatedCall(f"{thread}-call", "delete_file", {})})
    assert pending.threads() == ["t3", "t4", "t5"]
    pending.put("t4", {})  # answered: forgotten at once
    assert pending.threads() == ["t3", "t5"]
