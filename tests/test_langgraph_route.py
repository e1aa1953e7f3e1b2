"""What is particular to the LangGraph route, over real HTTP/SSE (the generic suite covers the rest).

* Subagent events turned off (``AGUI_SUBAGENT_EVENTS=off`` or ``forwardedProps.subagentEvents``):
  the bridge emits the subagent surface itself, and the emitter's stripping takes all of it, the
  specialists' own steps included; what is left is a valid stream with the specialists' text.
* Resumes sent LangGraph's own way, a bare ``forwardedProps.command.resume`` value, and the legacy
  entries that name their interrupts: both answer under the gate's rules.
* The checkpointer is bounded by ``AGUI_THREAD_CACHE_SIZE``, threads waiting for an approval kept
  last; a resume for one that had to go learns why.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.config import Settings
from runtimes.langgraph import runtime
from tests.wire import Run, Server, post_run, run_input, serve
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume

ROUTE = runtime.route
CACHE_SIZE = 2


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(Settings(agui_script_delay_ms=0)) as running:
        yield running


def run_ok(server: Server, body: dict) -> Run:
    run = post_run(server.base, ROUTE, body)
    assert run.status == 200 and verify_events(run.events) == [], run.types()
    return run


def unattributed(run: Run) -> None:
    """Nothing of the subagent surface on the wire: no lifecycle event, no attribution."""
    assert not [e for e in run.events if e["type"].startswith("SUBAGENT_") or "subagentRunId" in e]
    assert not [i for i in run.interrupts() if "subagentRunId" in i]


@pytest.mark.parametrize("how", ["per request", "server-wide"])
def test_subagent_events_off_leaves_a_valid_stream_with_the_specialists_text(server: Server, how: str) -> None:
    body = run_input("Compare Lisbon and Porto")
    if how == "per request":
        run = run_ok(server, {**body, "forwardedProps": {"subagentEvents": False}})
    else:
        with serve(Settings(agui_script_delay_ms=0, agui_subagent_events=False)) as off:
            run = run_ok(off, body)
    unattributed(run)
    text = run.text()
    assert "Specialist finding: Lisbon" in text and "Specialist finding: Porto" in text
    assert run.terminal["type"] == "RUN_FINISHED"


def test_subagent_events_off_an_approval_inside_the_specialist_still_resumes(server: Server) -> None:
    off = {"subagentEvents": False}
    body = run_input("Research old logs and delete logs.txt", forwardedProps=off)
    first = run_ok(server, body)
    unattributed(first)
    answer = run_input(
        thread_id=body["threadId"],
        messages=history_after(body, first.events),
        resume=resume(first.interrupts(), payload={"approved": True}),
        forwardedProps=off,
    )
    second = run_ok(server, answer)
    unattributed(second)
    assert "Specialist finding: Deleted logs.txt." in second.text()
    assert verify_thread([first.events, second.events]) == []


def interrupted(server: Server, message: str) -> tuple[dict, Run]:
    body = run_input(message)
    run = run_ok(server, body)
    assert run.interrupts(), run.types()
    return body, run


def legacy_resume(body: dict, run: Run, value: object) -> dict:
    """The next request, answering the way LangGraph clients did: ``forwardedProps.command.resume``."""
    return run_input(
        thread_id=body["threadId"],
        messages=history_after(body, run.events),
        forwardedProps={"command": {"resume": value}},
    )


def test_a_bare_legacy_resume_value_answers_the_one_open_interrupt(server: Server) -> None:
    body, first = interrupted(server, "delete notes.txt")
    second = run_ok(server, legacy_resume(body, first, {"approved": True}))
    assert second.terminal["type"] == "RUN_FINISHED" and not second.interrupts()
    assert "Done: Deleted notes.txt." in second.text()
    again = run_ok(server, legacy_resume(body, first, {"approved": True}))
    assert again.types() == ["RUN_STARTED", "RUN_ERROR"] and again.terminal["code"] == "UNKNOWN_INTERRUPT_ID"


def test_a_bare_legacy_resume_value_cannot_answer_two_open_interrupts(server: Server) -> None:
    body, first = interrupted(server, "delete a.txt and b.txt")
    refused = run_ok(server, legacy_resume(body, first, {"approved": True}))
    assert refused.types() == ["RUN_STARTED", "RUN_ERROR"] and refused.terminal["code"] == "PENDING_INTERRUPTS"
    a, b = first.interrupts()
    entries = [
        {"interruptId": a["id"], "payload": {"approved": True}},
        {"interruptId": b["id"], "payload": {"approved": False}},
    ]
    answered = run_ok(server, legacy_resume(body, first, entries))  # entries that name them: the guard's conversion
    results = sorted(e["content"] for e in answered.of_type("TOOL_CALL_RESULT"))
    assert results == ["Deleted a.txt.", "Not deleted: b.txt (denied)."]


def test_the_checkpointer_keeps_waiting_threads_last_and_a_dropped_one_expires() -> None:
    with serve(Settings(agui_script_delay_ms=0, agui_thread_cache_size=CACHE_SIZE)) as small:
        held = lambda: small.on_loop(lambda: small.pipeline(ROUTE).bridge.held_threads())  # noqa: E731
        waiting, first = interrupted(small, "delete notes.txt")
        for _ in range(CACHE_SIZE + 1):  # more idle threads than the cache holds
            run_ok(small, run_input("Hello there!"))
        assert waiting["threadId"] in held().cached and waiting["threadId"] in held().paused
        assert len(held().cached) <= CACHE_SIZE
        answered = run_ok(small, legacy_resume(waiting, first, {"approved": True}))
        assert "Done: Deleted notes.txt." in answered.text()

        pushed_out, pushed_run = interrupted(small, "delete old.txt")
        for _ in range(CACHE_SIZE):  # only threads waiting for an answer: the oldest has to go
            interrupted(small, "delete new.txt")
        assert pushed_out["threadId"] not in held().cached and len(held().cached) <= CACHE_SIZE
        late = run_input(
            thread_id=pushed_out["threadId"],
            messages=history_after(pushed_out, pushed_run.events),
            resume=resume(pushed_run.interrupts(), payload={"approved": True}),
        )
        expired = run_ok(small, late)
        assert expired.types() == ["RUN_STARTED", "RUN_ERROR"] and expired.terminal["code"] == "INTERRUPT_EXPIRED"
