"""POST /pydantic-ai/agent over real HTTP/SSE: what the generic suite does not already drive.

* an approval inside the specialist, answered no (rejected or cancelled): the same subagent
  continues on the resume, the deletion never runs, and nothing stays held for the thread;
* the paused specialists are bounded by the app's approval ledger: a thread it evicts for a newer
  one gets ``INTERRUPT_EXPIRED`` and nothing of it is kept;
* clients that leave right as their run starts leave no task behind (the upstream hand-off that
  ``runtimes/pydantic_ai/teardown.py`` works around).

Every stream passes the protocol verifier; the assertions check what the client would show.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from app.config import Settings
from tests.wire import Run, Server, arun, open_stream, post_run, run_input, serve
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume

ROUTE = "/pydantic-ai/agent"
SPECIALIST_APPROVAL = "Research old logs and delete logs.txt"
PARKED = 3
DEPARTURES = 60
"""Without the workaround 6 to 12 of 60 departures park a task (measured on a 2-core machine)."""


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    settings = Settings(agui_script_delay_ms=2, agui_max_parked_approvals=PARKED, agui_approval_min_age_s=0)
    with serve(settings) as running:
        yield running


def run_ok(base: str, body: dict, *, after: Run | None = None) -> Run:
    """POST one run; its stream (following ``after`` on the same thread) must be valid."""
    run = post_run(base, ROUTE, body)
    assert run.status == 200, run.raw
    problems = verify_thread([after.events, run.events]) if after else verify_events(run.events)
    assert problems == [], (problems, run.types())
    return run


def paused(server: Server) -> frozenset[str]:
    return server.on_loop(lambda: server.pipeline(ROUTE).bridge.held_threads().paused)


@pytest.mark.parametrize(
    ("status", "payload", "said"), [("resolved", {"approved": False}, "denied"), ("cancelled", None, "Cancelled")]
)
def test_a_specialist_approval_answered_no_continues_the_subagent_without_deleting(
    server: Server, status: str, payload: dict | None, said: str
) -> None:
    body = run_input(SPECIALIST_APPROVAL)
    first = run_ok(server.base, body)
    [interrupt] = first.interrupts()
    [suspended] = first.of_type("SUBAGENT_FINISHED")
    assert suspended["outcome"] == {"type": "suspended", "interruptIds": [interrupt["id"]]}
    assert interrupt["subagentRunId"] == suspended["subagentRunId"]
    asked = [e for e in first.of_type("TOOL_CALL_START") if e["toolCallId"] == interrupt["toolCallId"]]
    assert [e["toolCallName"] for e in asked] == ["delete_file"], "the interrupt names the specialist's call"
    assert body["threadId"] in paused(server)

    answer = run_input(
        thread_id=body["threadId"],
        messages=history_after(body, first.events),
        resume=resume([interrupt], status=status, payload=payload),
    )
    second = run_ok(server.base, answer, after=first)
    assert second.terminal["type"] == "RUN_FINISHED" and not second.interrupts()
    [started] = second.of_type("SUBAGENT_STARTED")
    assert started["subagentRunId"] == suspended["subagentRunId"], "the same subagent continues"
    [result] = [e for e in second.of_type("TOOL_CALL_RESULT") if e["toolCallId"] == interrupt["toolCallId"]]
    assert said in result["content"] and "Deleted" not in second.raw.decode()
    assert "not approved" in second.text(subagent=True)
    assert body["threadId"] not in paused(server)


def test_paused_specialists_are_bounded_by_the_approval_ledger(server: Server) -> None:
    """PARKED + 1 threads wait for a specialist's approval: the ledger evicts the one that waited
    longest, the bridge drops its paused specialist, and its late resume is refused."""
    threads = []
    for _ in range(PARKED + 1):
        body = run_input(SPECIALIST_APPROVAL)
        threads.append((body, run_ok(server.base, body)))
    held = server.on_loop(lambda: server.pipeline(ROUTE).bridge.held_threads())
    assert len(held.cached) <= PARKED and len(held.paused) <= PARKED, held
    oldest, first = threads[0]
    assert oldest["threadId"] not in held.paused
    late = run_input(
        thread_id=oldest["threadId"],
        messages=history_after(oldest, first.events),
        resume=resume(first.interrupts(), payload={"approved": True}),
    )
    refused = run_ok(server.base, late)
    assert refused.types() == ["RUN_STARTED", "RUN_ERROR"] and refused.terminal["code"] == "INTERRUPT_EXPIRED"
    for body, run in threads[1:]:  # the others can still be answered
        answer = run_input(
            thread_id=body["threadId"],
            messages=history_after(body, run.events),
            resume=resume(run.interrupts(), payload={"approved": True}),
        )
        done = run_ok(server.base, answer, after=run)
        assert "Deleted logs.txt." in done.text(subagent=True)
    assert not paused(server)


async def _leave_after_start(base: str) -> None:
    async with open_stream(base, ROUTE, run_input("Write a story about lighthouses")) as events:
        async for event in events:
            if event["type"] == "RUN_STARTED":
                return


def test_clients_leaving_as_their_runs_start_leave_no_task_behind() -> None:
    """Pydantic AI parks a task forever when a run is cancelled right after its run hand-off began;
    over many such departures, at some of which that happens, every task of every run must end.
    The garbage collector is off meanwhile: it would otherwise destroy a parked task some time
    later ("Task was destroyed but it is pending!") and hide it from this count."""
    with serve(Settings(agui_script_delay_ms=20)) as running:
        asyncio.run(arun(running.base, ROUTE, run_input("Hello")))
        idle = len(running.tasks())
        gc.disable()
        try:
            for _ in range(DEPARTURES):
                asyncio.run(asyncio.wait_for(_leave_after_start(running.base), timeout=20))
            waited, left = running.settle(idle, within_s=5)
        finally:
            gc.enable()
        assert len(left) <= idle, f"{len(left) - idle} task(s) still pending {waited:.1f} s later: {left}"
