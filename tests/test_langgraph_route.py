"""What is particular to the LangGraph route, over real HTTP/SSE (the generic suite covers the rest).

* Subagent events turned off (``AGUI_SUBAGENT_EVENTS=off`` or ``forwardedProps.subagentEvents``):
  the bridge emits the subagent surface itself, and the emitter's stripping takes all of it, the
  specialists' own steps included; what is left is a valid stream with the specialists' text.
* Resumes sent LangGraph's own way, a bare ``forwardedProps.command.resume`` value, and the legacy
  entries that name their interrupts: both answer under the gate's rules.
* The checkpointer keeps at most ``AGUI_THREAD_CACHE_SIZE`` idle threads and never drops one
  waiting for an approval; the approval ledger's eviction (``app/approvals.py``) and its refusal
  to park both drop the thread's graph state, with its gate record and suspended specialist.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.config import Settings
from runtimes.base import HeldThreads
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


def held(server: Server) -> HeldThreads:
    """What the route's bridge holds per thread, asked on the server's loop."""
    return server.on_loop(server.pipeline(ROUTE).bridge.held_threads)


def history(run: Run) -> list[str]:
    """The user's messages in the thread's graph state, as the run's MESSAGES_SNAPSHOT tells them."""
    (snapshot,) = run.of_type("MESSAGES_SNAPSHOT")
    return [message["content"] for message in snapshot["messages"] if message["role"] == "user"]


def test_idle_threads_beyond_the_bound_lose_their_graph_state_and_a_waiting_one_stays() -> None:
    with serve(Settings(agui_script_delay_ms=0, agui_thread_cache_size=CACHE_SIZE)) as small:
        waiting, first = interrupted(small, "delete notes.txt")
        idle = [run_input(f"Hello number {n}") for n in range(CACHE_SIZE + 1)]  # more than the bound holds
        for body in idle:
            run_ok(small, body)
        threads = held(small)
        assert threads.cached == {waiting["threadId"], idle[-1]["threadId"]}
        assert threads.paused == {waiting["threadId"]}

        # The oldest idle thread's checkpoints were deleted: its graph state starts again.
        kept = run_ok(small, run_input("Hello again", thread_id=idle[-1]["threadId"]))
        dropped = run_ok(small, run_input("Hello again", thread_id=idle[0]["threadId"]))
        assert history(kept) == [f"Hello number {CACHE_SIZE}", "Hello again"] and history(dropped) == ["Hello again"]

        # The waiting thread outlived them, and its approval runs the call once.
        answered = run_ok(small, legacy_resume(waiting, first, {"approved": True}))
        assert [result["content"] for result in answered.of_type("TOOL_CALL_RESULT")] == ["Deleted notes.txt."]


def test_waiting_threads_outgrow_the_bound_until_the_ledger_evicts_one_with_its_graph_state() -> None:
    settings = Settings(
        agui_script_delay_ms=0, agui_thread_cache_size=1, agui_max_parked_approvals=2, agui_approval_min_age_s=0
    )
    with serve(settings) as small:
        asked = [interrupted(small, f"delete file{n}.txt") for n in range(3)]
        (evicted, evicted_run), *kept = asked
        threads = held(small)  # two waiting threads beyond a bound of one: the ledger's to bound
        assert threads.cached == threads.paused == {body["threadId"] for body, _ in kept}

        late = run_input(
            thread_id=evicted["threadId"],
            messages=history_after(evicted, evicted_run.events),
            resume=resume(evicted_run.interrupts(), payload={"approved": True}),
        )
        expired = run_ok(small, late)
        assert expired.types() == ["RUN_STARTED", "RUN_ERROR"] and expired.terminal["code"] == "INTERRUPT_EXPIRED"

        # The evicted thread's checkpoints and gate record went with it: new input starts afresh.
        fresh = run_ok(small, run_input("Hello again", thread_id=evicted["threadId"]))
        assert fresh.terminal["type"] == "RUN_FINISHED" and history(fresh) == ["Hello again"]


def test_an_approval_the_ledger_refuses_to_park_leaves_nothing_held() -> None:
    """The ledger lets the thread go while its run is still in flight: the route drops it as the run ends."""
    settings = Settings(agui_script_delay_ms=0, agui_max_parked_approvals=1, agui_approval_min_age_s=3600)
    with serve(settings) as small:
        parked, _ = interrupted(small, "Research old logs and delete logs.txt")
        body = run_input("Research old logs and delete notes.txt")
        refused = run_ok(small, body)
        assert refused.terminal["type"] == "RUN_ERROR" and refused.terminal["code"] == "APPROVAL_CAPACITY"
        threads = held(small)
        assert body["threadId"] not in threads.cached | threads.paused and parked["threadId"] in threads.paused
        again = run_ok(small, run_input("Hello again", thread_id=body["threadId"]))
        assert again.terminal["type"] == "RUN_FINISHED" and history(again) == ["Hello again"]
