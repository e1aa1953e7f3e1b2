"""Parked approvals are bounded and never dropped without a word (``app/approvals.py``), on every
route, over real HTTP: a run may park only so many approvals of so many bytes; when as many threads
wait as the server may hold, a new approval is refused while the waiting ones are young, and the
longest waiting one is evicted once it is old enough; its late resume is told it expired."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from ag_ui.core import BaseEvent, EventType, RunAgentInput, RunFinishedEvent, RunStartedEvent
from ag_ui.core.events import Interrupt, RunFinishedInterruptOutcome

from app.approvals import ApprovalLedger, ApprovalLimits
from app.config import Settings
from app.runs import RunKeys
from store import MemoryStore
from tests.wire import ROUTES, Run, Server, arun, run_input, serve
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume


def ask(server: Server, route: str, message: str) -> tuple[dict, Run]:
    body = run_input(message)
    run = asyncio.run(arun(server.base, route, body))
    assert run.status == 200 and verify_events(run.events) == [], run.types()
    return body, run


def approve(server: Server, route: str, body: dict, first: Run) -> Run:
    answer = run_input(
        thread_id=body["threadId"],
        messages=history_after(body, first.events),
        resume=resume(first.interrupts(), payload={"approved": True}),
    )
    run = asyncio.run(arun(server.base, route, answer))
    assert verify_thread([first.events, run.events]) == [], run.types()
    return run


def waiting(server: Server, route: str) -> frozenset[str]:
    return server.on_loop(lambda: server.pipeline(route).bridge.held_threads().paused)


@pytest.fixture(scope="module")
def young() -> Iterator[Server]:
    """Two threads may wait, and none may be evicted within the test's lifetime."""
    settings = Settings(agui_script_delay_ms=0, agui_max_parked_approvals=2, agui_approval_min_age_s=3600)
    with serve(settings) as server:
        yield server


@pytest.mark.parametrize("route", ROUTES)
def test_a_flood_cannot_push_out_approvals_still_young(young: Server, route: str) -> None:
    first = [ask(young, route, f"delete keep{n}.txt") for n in range(2)]
    assert all(run.interrupts() for _, run in first)
    _, refused = ask(young, route, "delete flood.txt")
    assert refused.terminal["type"] == "RUN_ERROR" and refused.terminal["code"] == "APPROVAL_CAPACITY"
    assert "Deleted" not in refused.raw.decode()
    assert len(waiting(young, route)) == 2
    for body, run in first:  # the ones waiting were not touched
        assert "Done: Deleted" in approve(young, route, body, run).text()
    _, later = ask(young, route, "delete later.txt")  # answered, they made room
    assert later.interrupts()


@pytest.mark.parametrize("route", ROUTES)
def test_the_longest_waiting_approval_goes_once_old_enough_and_its_resume_is_told_why(route: str) -> None:
    settings = Settings(agui_script_delay_ms=0, agui_max_parked_approvals=2, agui_approval_min_age_s=0)
    with serve(settings) as server:
        oldest, middle, newest = (ask(server, route, f"delete file{n}.txt") for n in range(3))
        assert oldest[0]["threadId"] not in waiting(server, route) and len(waiting(server, route)) == 2
        expired = approve(server, route, *oldest)
        assert expired.types() == ["RUN_STARTED", "RUN_ERROR"] and expired.terminal["code"] == "INTERRUPT_EXPIRED"
        assert "Done: Deleted file2.txt." in approve(server, route, *newest).text()


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("limits", "message"),
    [({"agui_max_approvals_per_run": 1}, "delete a.txt and b.txt"), ({"agui_max_approval_bytes": 200}, "delete x.txt")],
    ids=["count", "bytes"],
)
def test_a_run_that_would_park_too_much_parks_nothing(route: str, limits: dict, message: str) -> None:
    with serve(Settings(agui_script_delay_ms=0, **limits)) as server:
        body, run = ask(server, route, message)
        assert run.terminal["type"] == "RUN_ERROR" and run.terminal["code"] == "APPROVAL_TOO_LARGE"
        assert body["threadId"] not in waiting(server, route)


def test_an_approval_being_answered_is_not_evicted() -> None:
    """The ledger alone, over a store: while a run of the longest waiting thread holds the thread's
    lease (its resume is in flight), parking another approval is refused (evicting it would drop what
    the resume is answering)."""
    limits = ApprovalLimits(max_parked=1, min_age_s=0, max_per_run=16, max_bytes=65536)
    store, forgotten = MemoryStore(), []

    async def forget(thread_id: str) -> None:
        forgotten.append(thread_id)

    ledger = ApprovalLedger(limits, forget, store, "/test/agent")
    lease = RunKeys.of("/test/agent", "mine", "resume").lease

    def parks(thread_id: str) -> AsyncIterator[BaseEvent]:
        return _events(thread_id, [Interrupt(id=f"{thread_id}-approval", reason="tool_call")])

    async def scenario() -> None:
        [_, parked] = [event async for event in ledger.stage(parks("mine"), run_input_for("mine"))]
        assert parked.type == EventType.RUN_FINISHED
        assert await store.claim(lease, "the resume", ttl_s=60)  # the resume's run holds the thread
        [_, refused] = [event async for event in ledger.stage(parks("flood"), run_input_for("flood"))]
        assert refused.type == EventType.RUN_ERROR and refused.code == "APPROVAL_CAPACITY"
        assert forgotten == ["flood"] and await ledger.parked() == ["mine"]
        await store.release(lease, "the resume")
        [_, evicting] = [event async for event in ledger.stage(parks("later"), run_input_for("later"))]
        assert evicting.type == EventType.RUN_FINISHED and forgotten == ["flood", "mine"]
        assert await ledger.parked() == ["later"]

    asyncio.run(scenario())


async def _events(thread_id: str, interrupts: list[Interrupt]) -> AsyncIterator[BaseEvent]:
    yield RunStartedEvent(thread_id=thread_id, run_id="run")
    outcome = RunFinishedInterruptOutcome(interrupts=interrupts) if interrupts else None
    yield RunFinishedEvent(thread_id=thread_id, run_id="run", outcome=outcome)


def run_input_for(thread_id: str, *, resume: bool = False) -> RunAgentInput:
    body = run_input("delete it.txt", thread_id=thread_id)
    if resume:
        body["resume"] = [{"interruptId": f"{thread_id}-approval", "status": "resolved", "payload": {"approved": True}}]
    return RunAgentInput.model_validate(body)
