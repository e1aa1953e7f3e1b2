"""Human approval on POST /msaf/agent: interrupt, resume (both shapes), cancel, two at once, bad resumes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.config import Settings
from runtimes import script
from tests.test_msaf_route import ROUTE, parent_text, results_for, run_ok, tool_calls
from tests.wire import Run, live_server, post_run, run_input
from verifier import verify_events, verify_thread


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=2)) as url:
        yield url


def interrupted(base: str, message: str) -> tuple[dict, Run]:
    body = run_input(message)
    run = run_ok(base, body)
    assert run.interrupts(), run.types()
    return body, run


def history_after(body: dict, run: Run) -> list[dict]:
    """What a client holds after ``run``: its own messages plus the bridge's snapshot."""
    [snapshot] = run.of_type("MESSAGES_SNAPSHOT")
    return [*body["messages"], *(m for m in snapshot["messages"] if m["role"] != "user")]


def decision(interrupt: dict, answer: str) -> dict:
    if answer == "cancel":
        return {"interruptId": interrupt["id"], "status": "cancelled"}
    return {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": answer == "approve"}}


def resume(base: str, body: dict, first: Run, answers: list[str], *, legacy: bool = False) -> Run:
    entries = [decision(interrupt, answer) for interrupt, answer in zip(first.interrupts(), answers, strict=True)]
    extra = {"forwardedProps": {"command": {"resume": entries}}} if legacy else {"resume": entries}
    run = post_run(base, ROUTE, run_input(thread_id=body["threadId"], messages=history_after(body, first), **extra))
    assert run.status == 200, run.raw
    assert verify_thread([first.events, run.events]) == [], run.types()
    return run


def test_delete_ends_in_an_interrupt_outcome(base: str) -> None:
    _, run = interrupted(base, "delete notes.txt")
    [call] = tool_calls(run, script.DELETE_FILE)
    [interrupt] = run.interrupts()
    assert interrupt["toolCallId"] == call["toolCallId"]
    assert interrupt["reason"] == "tool_call"
    assert not results_for(run, call["toolCallId"]), "nothing runs before the user decides"
    assert [e["name"] for e in run.of_type("CUSTOM")].count("function_approval_request") == 1
    assert not tool_calls(run, "confirm_changes"), "require_confirmation=False: no synthetic tool call"


@pytest.mark.parametrize("legacy", [False, True], ids=["resume", "forwardedProps.command.resume"])
def test_approve_runs_the_tool_and_the_reply_uses_its_result(base: str, legacy: bool) -> None:
    body, first = interrupted(base, "delete notes.txt")
    run = resume(base, body, first, ["approve"], legacy=legacy)
    assert run.terminal["type"] == "RUN_FINISHED" and not run.interrupts()
    [call] = tool_calls(first, script.DELETE_FILE)
    [result] = results_for(run, call["toolCallId"])
    assert result["content"] == "Deleted notes.txt."
    assert "Done: Deleted notes.txt." in parent_text(run)


@pytest.mark.parametrize("legacy", [False, True], ids=["resume", "forwardedProps.command.resume"])
def test_reject_does_not_run_the_tool(base: str, legacy: bool) -> None:
    body, first = interrupted(base, "delete notes.txt")
    run = resume(base, body, first, ["reject"], legacy=legacy)
    assert run.terminal["type"] == "RUN_FINISHED" and not run.interrupts()
    assert "I did not delete notes.txt: the request was not approved." in parent_text(run)
    assert "Deleted notes.txt." not in run.raw.decode()
    [snapshot] = run.of_type("MESSAGES_SNAPSHOT")
    [call] = tool_calls(first, script.DELETE_FILE)
    assert any(m.get("toolCallId") == call["toolCallId"] and "rejected" in m["content"] for m in snapshot["messages"])


@pytest.mark.parametrize("legacy", [False, True], ids=["resume", "forwardedProps.command.resume"])
def test_cancel_leaves_a_coherent_transcript(base: str, legacy: bool) -> None:
    body, first = interrupted(base, "delete notes.txt")
    run = resume(base, body, first, ["cancel"], legacy=legacy)
    assert run.terminal["type"] == "RUN_FINISHED" and not run.interrupts()
    [call] = tool_calls(first, script.DELETE_FILE)
    [result] = results_for(run, call["toolCallId"])
    assert result["content"] == "Not run: the approval for delete_file was cancelled."
    assert 'I did not run delete_file({"path": "notes.txt"}): the approval was cancelled.' in parent_text(run)

    # The thread goes on: the cancelled call has its result, so the next turn is valid history.
    history = [
        *history_after(body, first),
        {"id": "r1", "role": "tool", "toolCallId": call["toolCallId"], "content": result["content"]},
        {"id": "u2", "role": "user", "content": "What's the weather in Oslo?"},
    ]
    follow_up = run_ok(base, run_input(thread_id=body["threadId"], messages=history))
    assert "Here is the weather report" in parent_text(follow_up)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("approve", ["Deleted a.txt.", "Deleted b.txt."]),
        ("reject", []),
        ("cancel", ["Not run: the approval for delete_file was cancelled."] * 2),
    ],
)
def test_two_approvals_pending_at_once(base: str, answer: str, expected: list[str]) -> None:
    body, first = interrupted(base, "delete a.txt and b.txt")
    calls = tool_calls(first, script.DELETE_FILE)
    interrupts = first.interrupts()
    assert len(calls) == len(interrupts) == 2
    assert {i["toolCallId"] for i in interrupts} == {c["toolCallId"] for c in calls}
    run = resume(base, body, first, [answer, answer])
    assert run.terminal["type"] == "RUN_FINISHED" and not run.interrupts()
    results = [results_for(run, call["toolCallId"]) for call in calls]
    assert [r[0]["content"] for r in results if r] == expected
    if answer == "approve":
        assert parent_text(run) == "Done: Deleted a.txt. Done: Deleted b.txt."
    if answer == "reject":
        assert parent_text(run).count("Not done") == 2


@pytest.mark.xfail(
    strict=True,
    reason="agent-framework-ag-ui 1.7.0: approving one and rejecting the other of two parallel approvals "
    "re-raises the rejected one as a new interrupt and leaves the approved one unexecuted",
)
def test_mixed_decisions_on_two_approvals(base: str) -> None:
    body, first = interrupted(base, "delete a.txt and b.txt")
    run = resume(base, body, first, ["approve", "reject"])
    assert not run.interrupts()
    assert "Done: Deleted a.txt." in parent_text(run)


def bad_resume(base: str, message: str, entries_for) -> dict:
    """Interrupt, then resume with ``entries_for(interrupts)``; the answer must be RUN_ERROR."""
    body, first = interrupted(base, message)
    run = post_run(
        base,
        ROUTE,
        run_input(
            thread_id=body["threadId"], messages=history_after(body, first), resume=entries_for(first.interrupts())
        ),
    )
    assert run.status == 200, run.raw
    assert verify_events(run.events) == []
    assert run.types() == ["RUN_STARTED", "RUN_ERROR"]
    return run.terminal


def test_partial_resume_is_refused(base: str) -> None:
    error = bad_resume(base, "delete a.txt and b.txt", lambda interrupts: [decision(interrupts[0], "approve")])
    assert error["code"] == "APPROVAL_RESUME_MISSING_INTERRUPT"


def test_unknown_interrupt_id_is_refused(base: str) -> None:
    error = bad_resume(
        base,
        "delete notes.txt",
        lambda _: [{"interruptId": "nope", "status": "resolved", "payload": {"approved": True}}],
    )
    assert error["code"] == "APPROVAL_RESUME_NOT_FOUND"


def test_payload_without_a_boolean_is_refused(base: str) -> None:
    error = bad_resume(
        base,
        "delete notes.txt",
        lambda interrupts: [{"interruptId": interrupts[0]["id"], "status": "resolved", "payload": {"approved": "yes"}}],
    )
    assert error["code"] == "APPROVAL_RESUME_INVALID"


def test_new_input_while_an_approval_is_pending_is_refused(base: str) -> None:
    body, first = interrupted(base, "delete notes.txt")
    history = [*history_after(body, first), {"id": "u2", "role": "user", "content": "Hello there!"}]
    run = post_run(base, ROUTE, run_input(thread_id=body["threadId"], messages=history))
    assert verify_events(run.events) == []
    assert run.types() == ["RUN_STARTED", "RUN_ERROR"]
    assert run.terminal["code"] == "APPROVAL_RESUME_REQUIRED"


def test_a_refused_resume_can_be_retried(base: str) -> None:
    body, first = interrupted(base, "delete notes.txt")
    bad = [{"interruptId": first.interrupts()[0]["id"], "status": "resolved", "payload": {}}]
    refused = post_run(
        base, ROUTE, run_input(thread_id=body["threadId"], messages=history_after(body, first), resume=bad)
    )
    assert refused.terminal["type"] == "RUN_ERROR"
    run = resume(base, body, first, ["approve"])
    assert "Done: Deleted notes.txt." in parent_text(run)
