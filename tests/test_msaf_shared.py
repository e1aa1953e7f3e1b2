"""POST /msaf/agent with shared state: a thread's approvals are in the engine, not in a process.

Real server processes (``deploy.serve``) over one real ``redis-server``, as deployed. What the
generic replica tests (tests/test_replicas.py) do not reach: an approval outlives the process that
asked for it (resumed, replayed and contradicted on processes that never saw it); a resume whose
replica dies after the approved tool ran is never run a second time; the app's approval ledger, on
a replica that never served a thread, drops its record; and what the engine holds per thread
(nothing for a thread without approvals; TTLs that end).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest
import redis

from runtimes.msaf import shared
from tests import processes
from tests.processes import kill
from tests.wire import Run, open_stream, post_run, run_input
from verifier import verify_thread
from verifier.scenarios import APPROVE, REJECT, resume_with

ROUTE = "/msaf/agent"
LEASE_S = 3
ONE_WAITING = {"AGUI_MAX_PARKED_APPROVALS": "1", "AGUI_APPROVAL_MIN_AGE_S": "0"}
"""The approval ledger holds one waiting thread per route: parking one evicts the one before."""


def replica(engine: str, **settings: str) -> AbstractContextManager[tuple[str, subprocess.Popen]]:
    return processes.replica(engine, **{"AGUI_LEASE_S": str(LEASE_S), **settings})


@pytest.fixture(scope="module")
def replicas(engine: str) -> Iterator[list[str]]:
    """Two replicas, each started before the thread it serves exists anywhere."""
    with replica(engine, **ONE_WAITING) as (one, _), replica(engine, **ONE_WAITING) as (two, _):
        yield [one, two]


def released(engine: str, thread_id: str) -> None:
    """Wait until no run holds the thread's lease (a run's lease goes just after its last event)."""
    deadline = time.monotonic() + LEASE_S * 4
    with redis.Redis.from_url(engine) as client:
        while client.exists(f"agui:{ROUTE}:lease:{thread_id}"):
            assert time.monotonic() < deadline, "the lease outlived the run"
            time.sleep(0.05)


def record_of(engine: str, thread_id: str) -> tuple[bytes | None, float | None]:
    """The thread's approval record in the engine and its time to live in seconds (None: no record)."""
    key = f"agui:{ROUTE}:approvals:{thread_id}"
    with redis.Redis.from_url(engine) as client:
        value, ttl_ms = client.get(key), client.pttl(key)
    return value, (ttl_ms / 1000 if value is not None else None)


def interrupted(base: str, message: str = "delete notes.txt") -> tuple[dict, Run]:
    body = run_input(message)
    run = post_run(base, ROUTE, body)
    assert run.interrupts(), run.raw
    return body, run


def results(run: Run) -> list[str]:
    return [event["content"] for event in run.of_type("TOOL_CALL_RESULT")]


def test_a_waiting_approval_outlives_the_process_that_asked_for_it(engine: str, replicas: list[str]) -> None:
    with replica(engine, **ONE_WAITING) as (asked, _):
        body, first = interrupted(asked)
        released(engine, body["threadId"])  # killed later, it would hold the thread for a lease's time
    one, two = replicas  # neither has seen the thread
    answer = resume_with(APPROVE)(body, first.events)
    approved = post_run(one, ROUTE, answer)
    assert approved.terminal["type"] == "RUN_FINISHED", approved.raw
    assert verify_thread([first.events, approved.events]) == [], approved.types()
    assert results(approved) == ["Deleted notes.txt."] and "Done: Deleted notes.txt." in approved.text()

    replayed = post_run(two, ROUTE, {**answer, "runId": f"{answer['runId']}-again"})
    assert replayed.terminal["type"] == "RUN_FINISHED", replayed.types()
    assert results(replayed) == ["Deleted notes.txt."], "the stored result is repeated"
    assert not replayed.of_type("TEXT_MESSAGE_START"), "nothing runs again: the model is not even asked"

    otherwise = resume_with(REJECT)(body, first.events)
    refused = post_run(two, ROUTE, otherwise)
    assert refused.types() == ["RUN_STARTED", "RUN_ERROR"], refused.types()
    assert refused.terminal["code"] == "APPROVAL_RESUME_INVALID"


def test_a_resume_whose_replica_dies_after_the_tool_ran_is_never_run_again(engine: str, replicas: list[str]) -> None:
    slow = {**ONE_WAITING, "AGUI_SCRIPT_DELAY_MS": "1000", "AGUI_DETACHED_RUN_S": "60"}
    survivor = replicas[0]
    body, first = interrupted(survivor)
    released(engine, body["threadId"])
    answer = resume_with(APPROVE)(body, first.events)
    with replica(engine, **slow) as (doomed, process):

        async def until_the_tool_ran() -> list[dict]:
            async with open_stream(doomed, ROUTE, answer) as events:
                seen = [event async for event in _through(events, "TOOL_CALL_RESULT")]
            kill(process)  # the reply is still streaming (a second between its chunks)
            return seen

        seen = asyncio.run(until_the_tool_ran())
    assert seen[-1]["content"] == "Deleted notes.txt." and "RUN_FINISHED" not in {e["type"] for e in seen}
    retry = {**answer, "runId": f"{answer['runId']}-retry"}
    deadline = time.monotonic() + LEASE_S * 4
    while (again := post_run(survivor, ROUTE, retry)).terminal.get("code") == "THREAD_BUSY":
        assert time.monotonic() < deadline, "the dead replica's lease never expired"
        retry = {**retry, "runId": f"{retry['runId']}-"}
        time.sleep(0.2)
    assert again.types() == ["RUN_STARTED", "RUN_ERROR"], again.types()
    assert again.terminal["code"] == "APPROVAL_RESUME_NOT_FOUND", "the approval is gone, not run twice"


async def _through(events, last: str):  # noqa: ANN001, ANN202 - an async iterator of decoded events
    async for event in events:
        yield event
        if event["type"] == last:
            return


def test_the_ledger_on_a_replica_that_never_served_a_thread_drops_its_record(engine: str, replicas: list[str]) -> None:
    one, two = replicas
    evicted, first = interrupted(one)
    assert record_of(engine, evicted["threadId"])[0] is not None
    waiting, _ = interrupted(two)  # the ledger on `two` evicts the longest waiting thread: `evicted`
    assert record_of(engine, evicted["threadId"])[0] is None, "forget() on `two` dropped the record"
    assert record_of(engine, waiting["threadId"])[0] is not None
    late = post_run(one, ROUTE, resume_with(APPROVE)(evicted, first.events))
    assert late.terminal["code"] == "INTERRUPT_EXPIRED", late.types()


def test_the_engine_holds_a_record_only_while_an_approval_needs_one(engine: str, replicas: list[str]) -> None:
    base = replicas[1]
    plain = run_input("What's the weather in Tokyo?")
    assert post_run(base, ROUTE, plain).terminal["type"] == "RUN_FINISHED"
    assert record_of(engine, plain["threadId"]) == (None, None), "no approval, no record"

    body, first = interrupted(base, "delete a.txt and b.txt")
    released(engine, body["threadId"])
    waiting, ttl_s = record_of(engine, body["threadId"])
    assert waiting is not None and len(waiting) < 8_192, len(waiting or b"")
    assert shared.PAUSED_TTL_S - 60 < ttl_s <= shared.PAUSED_TTL_S

    answered = post_run(base, ROUTE, resume_with(APPROVE)(body, first.events))
    assert answered.terminal["type"] == "RUN_FINISHED" and not answered.interrupts(), answered.types()
    settled, ttl_s = record_of(engine, body["threadId"])
    assert settled is not None and 0 < ttl_s <= shared.SETTLED_TTL_S, "kept only to answer a replay"
