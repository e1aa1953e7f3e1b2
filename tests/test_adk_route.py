"""POST /adk/agent: what the generic suite does not already prove about this route, over real HTTP.

* the thread bound reaches ADK itself: a dropped thread's ADK session is gone (a later run on it
  starts a fresh history, seen in the MESSAGES_SNAPSHOT the bridge rebuilds from the session); a
  thread waiting for an approval is never dropped by that bound, and its approval still runs once
  when answered; the approval ledger's eviction (``app/approvals.py``) drops the evicted thread's
  ADK session too;
* the placeholder result ADK gives a call waiting for confirmation never reaches the client, and
  after the resume the call holds only the result it got when it ran.
Real models, model failures, disconnects, isolation and the bad-input table: the generic suite.
"""

from __future__ import annotations

from app.config import Settings
from tests.wire import Run, Server, live_server, post_run, run_input, serve
from verifier import verify_thread
from verifier.client import history_after, resume

ROUTE = "/adk/agent"
PLACEHOLDER = "requires confirmation"
"""What ADK answers a call that waits for confirmation with (google-adk 2.13)."""


def held(server: Server) -> tuple[frozenset[str], frozenset[str]]:
    """(threads the bridge keeps a session for, threads waiting for an answer), asked on the server's loop."""
    threads = server.on_loop(server.pipeline(ROUTE).bridge.held_threads)
    return threads.cached, threads.paused


def history_length(run: Run) -> int:
    (snapshot,) = run.of_type("MESSAGES_SNAPSHOT")
    return len(snapshot["messages"])


def test_dropped_threads_lose_their_adk_session_and_a_waiting_one_stays() -> None:
    with serve(Settings(agui_script_delay_ms=0, agui_thread_cache_size=2)) as server:
        asked = run_input("delete notes.txt")
        first = post_run(server.base, ROUTE, asked)
        assert first.interrupts(), first.types()
        idle = [run_input(f"Hello number {i}") for i in range(3)]
        for body in idle:
            assert post_run(server.base, ROUTE, body).terminal["type"] == "RUN_FINISHED"

        cached, paused = held(server)
        assert cached == {asked["threadId"], idle[-1]["threadId"]} and paused == {asked["threadId"]}

        # The oldest idle thread was dropped with its ADK session: its history starts again.
        kept = post_run(server.base, ROUTE, run_input("Hello again", thread_id=idle[-1]["threadId"]))
        dropped = post_run(server.base, ROUTE, run_input("Hello again", thread_id=idle[0]["threadId"]))
        assert history_length(kept) == 4 and history_length(dropped) == 2

        # The waiting thread outlived them, and its approval runs the call once.
        answer = run_input(
            thread_id=asked["threadId"],
            messages=history_after(asked, first.events),
            resume=resume(first.interrupts(), payload={"approved": True}),
        )
        second = post_run(server.base, ROUTE, answer)
        assert verify_thread([first.events, second.events]) == [] and second.terminal["type"] == "RUN_FINISHED"
        results = [result["content"] for result in second.of_type("TOOL_CALL_RESULT")]
        assert results == ['{"result": "Deleted notes.txt."}']


def test_waiting_threads_outgrow_the_thread_bound_until_the_ledger_evicts_one() -> None:
    settings = Settings(
        agui_script_delay_ms=0, agui_thread_cache_size=1, agui_max_parked_approvals=2, agui_approval_min_age_s=0
    )
    with serve(settings) as server:
        asked = [run_input(f"delete file{i}.txt") for i in range(3)]
        runs = [post_run(server.base, ROUTE, body) for body in asked]
        assert all(run.interrupts() for run in runs)
        cached, paused = held(server)  # two waiting threads beyond a bound of one: the ledger's to bound
        assert cached == paused == {asked[1]["threadId"], asked[2]["threadId"]}

        answer = resume(runs[0].interrupts(), payload={"approved": True})
        late = run_input(thread_id=asked[0]["threadId"], resume=answer)
        refused = post_run(server.base, ROUTE, late)
        assert refused.types() == ["RUN_STARTED", "RUN_ERROR"] and refused.terminal["code"] == "INTERRUPT_EXPIRED"

        # The evicted thread's ADK session went with it: a new run on it starts a fresh history.
        fresh = post_run(server.base, ROUTE, run_input("Hello again", thread_id=asked[0]["threadId"]))
        assert fresh.terminal["type"] == "RUN_FINISHED" and history_length(fresh) == 2


def test_the_placeholder_result_of_a_waiting_call_never_reaches_the_client() -> None:
    with live_server(Settings(agui_script_delay_ms=0)) as base:
        asked = run_input("delete a.txt and b.txt")
        first = post_run(base, ROUTE, asked)
        gated = {interrupt["toolCallId"] for interrupt in first.interrupts()}
        assert len(gated) == 2 and PLACEHOLDER not in first.raw.decode()
        answer = run_input(
            thread_id=asked["threadId"],
            messages=history_after(asked, first.events),
            resume=resume(first.interrupts(), payload={"approved": False}),
        )
        second = post_run(base, ROUTE, answer)
    assert verify_thread([first.events, second.events]) == [], second.types()
    (snapshot,) = second.of_type("MESSAGES_SNAPSHOT")
    results = [m for m in snapshot["messages"] if m["role"] == "tool" and m["toolCallId"] in gated]
    assert len(results) == 2 and all("rejected" in m["content"] and PLACEHOLDER not in m["content"] for m in results)
