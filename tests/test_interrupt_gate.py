"""The interrupt gate (``runtimes/interrupts.py``) on synthetic runs: every rule of a strict resume.

Below HTTP on purpose: the gate is a pure stage, and these are its rules one by one. The routes
that use it prove the same rules over the wire in tests/test_bad_input.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
)

from runtimes.interrupts import APPROVAL_SCHEMA, InterruptGate
from store import MemoryStore
from verifier.client import run_input

THREAD = "t1"


def request(**fields: object) -> RunAgentInput:
    return RunAgentInput.model_validate(run_input("hi", thread_id=THREAD, **fields))


async def bridge(run: RunAgentInput, ran: list[str], interrupts: tuple[str, ...] = ()) -> AsyncIterator[BaseEvent]:
    ran.append(run.run_id)
    yield RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id)
    asked = [Interrupt(id=i, reason="tool_call", response_schema=APPROVAL_SCHEMA) for i in interrupts]
    outcome = RunFinishedInterruptOutcome(interrupts=asked) if asked else None
    yield RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id, outcome=outcome)


def play(gate: InterruptGate, run: RunAgentInput, ran: list[str], interrupts: tuple[str, ...] = ()) -> list[dict]:
    async def collect() -> list[dict]:
        stream = gate.stage(bridge(run, ran, interrupts), run)
        return [event.model_dump(by_alias=True, exclude_none=True) async for event in stream]

    return asyncio.run(collect())


def answer(*ids: str, approved: object = True, status: str = "resolved") -> list[dict]:
    payload = {} if approved is None else {"payload": {"approved": approved}}
    return [{"interruptId": i, "status": status, **payload} for i in ids]


def refused(events: list[dict]) -> str | None:
    return events[-1].get("code") if events[-1]["type"] == "RUN_ERROR" else None


@pytest.fixture
def paused() -> tuple[InterruptGate, list[str]]:
    """A gate whose thread waits on two interrupts, a and b."""
    gate, ran = InterruptGate(MemoryStore(), "test"), []
    events = play(gate, request(), ran, interrupts=("a", "b"))
    assert events[-1]["outcome"]["type"] == "interrupt"
    return gate, ran


@pytest.mark.parametrize(
    ("resume", "code"),
    [
        (answer("a"), "PARTIAL_RESUME"),
        ([], "PARTIAL_RESUME"),
        (answer("a", "b", "c"), "UNKNOWN_INTERRUPT_ID"),
        (answer("a", "a", "b"), "DUPLICATE_INTERRUPT_ID"),
        (answer("a", "b", approved="yes"), "INVALID_PAYLOAD"),
        (answer("a", "b", approved=None), "INVALID_PAYLOAD"),
        (None, "PENDING_INTERRUPTS"),
    ],
)
def test_a_resume_that_does_not_fit_is_refused_and_changes_nothing(
    paused: tuple[InterruptGate, list[str]], resume: list | None, code: str
) -> None:
    gate, ran = paused
    events = play(gate, request(resume=resume), ran)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"] and refused(events) == code
    assert len(ran) == 1, "the bridge never ran"
    assert THREAD in gate.held_threads().paused
    assert refused(play(gate, request(resume=answer("a", "b")), ran)) is None, "the right answer still works"


def test_the_settled_answer_is_replayed_and_a_different_one_refused(paused: tuple[InterruptGate, list[str]]) -> None:
    gate, ran = paused
    settled = answer("a", "b", status="resolved")
    play(gate, request(resume=settled), ran)
    again = play(gate, request(resume=settled), ran)
    assert [e["type"] for e in again] == ["RUN_STARTED", "RUN_FINISHED"] and len(ran) == 2
    assert refused(play(gate, request(resume=answer("a", "b", approved=False)), ran)) == "INTERRUPT_ALREADY_ANSWERED"
    assert refused(play(gate, request(resume=answer("x")), ran)) == "UNKNOWN_INTERRUPT_ID"


def test_cancelled_answers_need_no_payload(paused: tuple[InterruptGate, list[str]]) -> None:
    gate, ran = paused
    assert refused(play(gate, request(resume=answer("a", "b", approved=None, status="cancelled")), ran)) is None


def test_an_empty_resume_with_nothing_open_is_an_ordinary_run() -> None:
    gate, ran = InterruptGate(MemoryStore(), "test"), []
    assert refused(play(gate, request(resume=[]), ran)) is None and len(ran) == 1


def test_a_thread_with_nothing_to_remember_leaves_no_record_and_a_forgotten_one_is_gone() -> None:
    store = MemoryStore()
    gate, ran = InterruptGate(store, "test"), []
    play(gate, RunAgentInput.model_validate(run_input("hi", thread_id="waiting")), ran, interrupts=("w",))
    play(gate, RunAgentInput.model_validate(run_input("hi", thread_id="idle")), ran)
    assert asyncio.run(store.get("agui:gate:test:idle")) is None
    assert gate.held_threads().paused == {"waiting"}
    asyncio.run(gate.forget("waiting"))
    assert gate.held_threads().paused == frozenset()
    late = RunAgentInput.model_validate(run_input(thread_id="waiting", resume=answer("w")))
    assert refused(play(gate, late, ran)) == "UNKNOWN_INTERRUPT_ID"


def test_two_gates_on_one_store_see_the_same_threads() -> None:
    """What lets any replica take the resume: the record is the store's, not the gate's."""
    store = MemoryStore()
    asking, answering, ran = InterruptGate(store, "test"), InterruptGate(store, "test"), []
    play(asking, request(), ran, interrupts=("a",))
    assert refused(play(answering, request(resume=answer("b")), ran)) == "UNKNOWN_INTERRUPT_ID"
    assert refused(play(answering, request(resume=answer("a")), ran)) is None and len(ran) == 2
    assert [e["type"] for e in play(asking, request(resume=answer("a")), ran)] == ["RUN_STARTED", "RUN_FINISHED"]
