"""The Strands route's threads in the shared engine (``runtimes/strands/sessions.py``), where the
generic replica tests (``tests/test_replicas.py``) do not reach.

Over a real ``redis-server`` and real server processes: a paused approval, and a specialist paused
at its own approval, outlive every replica that served them (both killed, two new ones resume);
a replica that served a thread earlier does not go on from its own copy (the approved tool runs
once, a replayed resume runs nothing); the approval ledger's eviction on a replica that never
served the thread drops the thread's session from the engine; the session's expiry follows the
thread (a week while it waits, a day once idle). Below HTTP: an engine that fails before or during
a run raises ``StoreUnavailable`` within the timeout (RUN_ERROR ``STATE_UNAVAILABLE`` on the wire),
and the bridge never starts on a session it could not read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
from ag_ui.core import BaseEvent, RunAgentInput, RunStartedEvent, TextMessageStartEvent
from strands.types.session import SessionMessage

from runtimes.strands import runtime
from runtimes.strands.sessions import IDLE_TTL_S, PAUSED_TTL_S, EngineSessions
from store import StoreUnavailable
from store.engine import TIMEOUT_S
from tests.engine import RedisServer
from tests.processes import replica
from tests.wire import Run, post_run, run_input
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume

ROUTE = runtime.route
APPROVAL = "delete notes.txt"
SPECIALIST_APPROVAL = "Research old logs and delete logs.txt"


@pytest.fixture(scope="module")
def replicas(engine: str) -> Iterator[list[str]]:
    """Two replicas with the default settings, started when a test first asks."""
    with replica(engine) as (one, _), replica(engine) as (two, _):
        yield [one, two]


def session_key(thread_id: str) -> str:
    return f"agui:{ROUTE}:session:{thread_id}"


def ttl_s(engine: str, thread_id: str) -> float:
    """Seconds until the thread's session expires (negative: there is none)."""
    with redis.Redis.from_url(engine) as client:
        return client.pttl(session_key(thread_id)) / 1000


def ask(base: str, message: str) -> tuple[dict, Run]:
    body = run_input(message)
    run = post_run(base, ROUTE, body)
    assert verify_events(run.events) == [] and run.interrupts(), run.types()
    return body, run


def approval(body: dict, first: Run) -> dict:
    """The resume approving every interrupt ``first`` ended with."""
    return run_input(
        thread_id=body["threadId"],
        messages=history_after(body, first.events),
        resume=resume(first.interrupts(), payload={"approved": True}),
    )


def again(body: dict) -> dict:
    """The same request as a new run (a client that sends it again: a new ``runId``)."""
    return body | {"runId": run_input()["runId"]}


def deletions(run: Run) -> list[str]:
    """What the run's tool results say was deleted (a delegation's result repeats its specialist's)."""
    return [
        event["content"]
        for event in run.of_type("TOOL_CALL_RESULT")
        if "Deleted" in event["content"] and "Specialist" not in event["content"]
    ]


def test_paused_approvals_outlive_every_replica_that_served_them(engine: str, request: pytest.FixtureRequest) -> None:
    with replica(engine) as (one, _), replica(engine) as (two, _):
        paused = [ask(one, APPROVAL), ask(two, SPECIALIST_APPROVAL)]
    for body, _ in paused:  # both replicas are gone; the checkpoints wait in the engine, for a week
        assert IDLE_TTL_S < ttl_s(engine, body["threadId"]) <= PAUSED_TTL_S
    three, four = request.getfixturevalue("replicas")  # started now: two new processes
    for (body, first), (resumer, replayer), deleted in zip(
        paused, [(three, four), (four, three)], ['"Deleted notes.txt."', "Deleted logs.txt."], strict=True
    ):
        answer = approval(body, first)
        second = post_run(resumer, ROUTE, answer)
        assert verify_thread([first.events, second.events]) == [], second.types()
        assert second.terminal["type"] == "RUN_FINISHED" and deletions(second) == [deleted]
        replay = post_run(replayer, ROUTE, again(answer))
        assert replay.types() == ["RUN_STARTED", "RUN_FINISHED"], replay.types()
        assert 0 < ttl_s(engine, body["threadId"]) <= IDLE_TTL_S  # answered: idle now
    started = first.of_type("SUBAGENT_STARTED")[0]["subagentRunId"]
    assert second.of_type("SUBAGENT_STARTED")[0]["subagentRunId"] == started, "the specialist goes on"


def test_a_replica_that_served_the_thread_before_goes_on_from_the_engine_not_its_own_copy(
    engine: str, replicas: list[str]
) -> None:
    one, two = replicas
    body, first = ask(one, "delete a.txt and b.txt")
    answer = approval(body, first)
    second = post_run(two, ROUTE, answer)
    assert sorted(deletions(second)) == ['"Deleted a.txt."', '"Deleted b.txt."']
    for base in (one, two):  # the replica that paused the thread, then the one that resumed it
        replay = post_run(base, ROUTE, again(answer))
        assert replay.types() == ["RUN_STARTED", "RUN_FINISHED"], replay.types()
    later = run_input("What's the weather in Tokyo?", thread_id=body["threadId"])
    third = post_run(one, ROUTE, later)  # new input is not refused: nothing waits any more
    assert third.terminal["type"] == "RUN_FINISHED" and not third.interrupts()
    assert "Tokyo" in third.text()
    with redis.Redis.from_url(engine) as client:
        messages = [field for field in client.hkeys(session_key(body["threadId"])) if field.startswith(b"message:")]
    assert len(messages) >= 6, "both turns, from both replicas, in one conversation"


def test_the_ledger_forgets_a_thread_in_the_engine_from_a_replica_that_never_served_it(engine: str) -> None:
    ledger = {"AGUI_MAX_PARKED_APPROVALS": "1", "AGUI_APPROVAL_MIN_AGE_S": "0"}
    with replica(engine, **ledger) as (one, _), replica(engine, **ledger) as (two, _):
        body, first = ask(one, APPROVAL)
        assert ttl_s(engine, body["threadId"]) > IDLE_TTL_S
        ask(two, "delete other.txt")  # the ledger on `two` evicts the thread `one` paused
        assert ttl_s(engine, body["threadId"]) < 0, "its session is gone from the engine"
        late = post_run(one, ROUTE, approval(body, first))
        assert late.types() == ["RUN_STARTED", "RUN_ERROR"] and late.terminal["code"] == "INTERRUPT_EXPIRED"
        again = post_run(one, ROUTE, run_input("Hello", thread_id=body["threadId"]))
        assert again.terminal["type"] == "RUN_FINISHED", again.terminal  # not PENDING_INTERRUPTS: nothing left


# --- below HTTP: the engine failing ----------------------------------------------------------


def started(thread_id: str) -> RunAgentInput:
    return RunAgentInput.model_validate(run_input("Hello", thread_id=thread_id))


def test_an_engine_that_is_down_fails_the_run_before_the_bridge_starts() -> None:
    with RedisServer() as server:
        server.stop()
        dropped: list[str] = []
        bridge_started = False

        async def bridge() -> AsyncIterator[BaseEvent]:
            nonlocal bridge_started
            bridge_started = True
            yield RunStartedEvent(thread_id="t", run_id="r")

        async def scenario() -> None:
            sessions = EngineSessions(server.url, ROUTE, dropped.append)
            with pytest.raises(StoreUnavailable):
                await anext(sessions.stage(bridge(), started("t")))

        began = time.monotonic()
        asyncio.run(scenario())
        assert time.monotonic() - began < TIMEOUT_S + 1
        assert not bridge_started and dropped == ["t"], "the stale copy went first, the bridge never ran"


def test_an_engine_that_fails_mid_run_fails_the_run_at_the_next_event() -> None:
    """What Strands wrote is saved before each event goes on; once the engine is gone, the next
    event's save raises (the pipeline answers STATE_UNAVAILABLE) instead of the event going out."""
    with RedisServer() as server:
        dropped: list[str] = []
        seen: list[str] = []

        async def scenario() -> None:
            sessions = EngineSessions(server.url, ROUTE, dropped.append)
            run = started("t")

            async def bridge() -> AsyncIterator[BaseEvent]:
                repository = sessions.manager(run).session_repository  # as Strands gets it
                yield RunStartedEvent(thread_id="t", run_id="r")
                server.stop()
                message = SessionMessage.from_message({"role": "user", "content": [{"text": "Hello"}]}, 0)
                repository.create_message("t", "default", message)
                yield TextMessageStartEvent(message_id="m")

            stage = sessions.stage(bridge(), run)
            with pytest.raises(StoreUnavailable):
                async for event in stage:
                    seen.append(event.type.value)

        asyncio.run(scenario())
        assert seen == ["RUN_STARTED"], "nothing goes out ahead of what the engine holds"
        assert dropped == ["t", "t"], "nothing of the thread stays in the process"
