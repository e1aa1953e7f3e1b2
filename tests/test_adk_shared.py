"""POST /adk/agent with shared state (``AGUI_STATE_URL``): what ``tests/test_replicas.py`` does not reach.

* a thread waiting for approval outlives every replica: both killed, two new ones over the same
  engine, the resume runs the approved call once and refuses the rejected one, its replay runs
  nothing;
* a thread whose turns alternate between replicas keeps one history, the same as on one process
  (ag-ui-adk marks the messages it has processed per process: no turn is replayed, none is lost);
* the approval ledger of a replica that never served a thread drops the thread's ADK session from
  the engine; a waiting thread's session is kept far longer than an idle one's;
* the engine's session service answers as ADK's own ``InMemorySessionService`` (state scopes,
  ``temp:`` keys, a re-delivered event, ``GetSessionConfig``, missing and existing sessions), with
  and without a run's record;
* an engine that stops answering, or is gone, ends the run with ``STATE_UNAVAILABLE`` within the
  client's timeouts (ag-ui-adk logs many session failures and goes on), and once it is back the
  route works again; between runs the process keeps nothing of any thread.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator

import pytest
import redis
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from app.config import Settings
from app.pipeline import RoutePipeline
from runtimes.adk import runtime
from runtimes.adk.redis_sessions import watch
from runtimes.adk.shared import IDLE_TTL_S, PAUSED_TTL_S, engine_sessions
from tests.engine import RedisServer, RuntimeStateInEngine, drain, outcome
from tests.processes import replica
from tests.wire import Run, post_run
from verifier import verify_thread
from verifier.client import history_after, resume, run_input

ROUTE = runtime.route


@pytest.fixture(scope="module")
def replicas(engine: str) -> Iterator[list[str]]:
    """Two replicas whose approval ledger holds one waiting thread (parking another evicts it)."""
    settings = {"AGUI_MAX_PARKED_APPROVALS": "1", "AGUI_APPROVAL_MIN_AGE_S": "0"}
    with replica(engine, **settings) as (one, _), replica(engine, **settings) as (two, _):
        yield [one, two]


def session_keys(engine: str, thread_id: str) -> dict[str, int]:
    """The thread's ADK session keys in the engine, with their time to live (ms)."""
    with redis.Redis.from_url(engine) as client:
        keys = client.keys(f"agui:adk:session:*:{thread_id}:*")
        return {key.decode().rsplit(":", 1)[1]: client.pttl(key) for key in keys}


def test_a_paused_approval_outlives_every_replica(engine: str, replicas: list[str]) -> None:
    asked = run_input("delete a.txt and b.txt")
    with replica(engine) as (one, _), replica(engine):
        first = post_run(one, ROUTE, asked)
    # both replicas were killed; two new ones know the thread only from the engine
    pending = first.interrupts()
    assert sorted(i["metadata"]["tool_input"]["path"] for i in pending) == ["a.txt", "b.txt"]
    answers = [
        {
            "interruptId": i["id"],
            "status": "resolved",
            "payload": {"approved": i["metadata"]["tool_input"]["path"] == "a.txt"},
        }
        for i in pending
    ]
    body = run_input(thread_id=asked["threadId"], messages=history_after(asked, first.events), resume=answers)
    second = post_run(replicas[0], ROUTE, body)
    replayed = post_run(replicas[1], ROUTE, {**body, "runId": run_input()["runId"]})
    assert verify_thread([first.events, second.events]) == [] and second.terminal["type"] == "RUN_FINISHED"
    results = sorted(result["content"] for result in second.of_type("TOOL_CALL_RESULT"))
    assert results == ['{"error": "This tool call is rejected."}', '{"result": "Deleted a.txt."}']
    assert replayed.types() == ["RUN_STARTED", "RUN_FINISHED"], "the replay runs nothing"


def conversation(bases: list[str], turns: list[str]) -> Run:
    """``turns`` on one thread, each turn on the next of ``bases``, the client keeping the history."""
    history: list[dict] = []
    thread = run_input()["threadId"]
    for number, message in enumerate(turns):
        body = run_input(message, thread_id=thread, messages=history)
        run = post_run(bases[number % len(bases)], ROUTE, body)
        assert run.terminal["type"] == "RUN_FINISHED", run.types()
        history = history_after(body, run.events)
    return run


def transcript(run: Run) -> list[tuple]:
    """The history a run's MESSAGES_SNAPSHOT holds, without ids (the bridge makes its own)."""
    (snapshot,) = run.of_type("MESSAGES_SNAPSHOT")
    return [
        (m["role"], m.get("content"), [c["function"]["name"] for c in m.get("toolCalls") or []])
        for m in snapshot["messages"]
    ]


def test_a_thread_moving_between_replicas_keeps_one_history(engine: str, replicas: list[str]) -> None:
    turns = ["Hello", "What's the weather in Tokyo?", "Hello again"]
    moving = conversation(replicas, turns)
    staying = conversation(replicas[:1], turns)
    assert transcript(moving) == transcript(staying)
    users = [content for role, content, _ in transcript(moving) if role == "user"]
    assert users == turns, "every turn once, in order"
    ttls = session_keys(engine, moving.terminal["threadId"])
    assert set(ttls) == {"meta", "state", "events", "ids"} and all(
        0 < ttl <= IDLE_TTL_S * 1000 for ttl in ttls.values()
    )


def test_the_ledger_of_a_replica_that_never_saw_a_thread_drops_its_session(engine: str, replicas: list[str]) -> None:
    first = run_input("delete a.txt")
    parked = post_run(replicas[0], ROUTE, first)
    assert parked.interrupts()
    ttls = session_keys(engine, first["threadId"])
    assert ttls and all(ttl > (PAUSED_TTL_S - 60) * 1000 for ttl in ttls.values()), ttls

    evicting = post_run(replicas[1], ROUTE, run_input("delete b.txt"))  # the ledger is full: the first goes
    assert evicting.interrupts()
    assert session_keys(engine, first["threadId"]) == {}, "the evicted thread's session is gone"

    answer = resume(parked.interrupts(), payload={"approved": True})
    late = post_run(replicas[0], ROUTE, run_input(thread_id=first["threadId"], resume=answer))
    assert late.types() == ["RUN_STARTED", "RUN_ERROR"] and late.terminal["code"] == "INTERRUPT_EXPIRED"


async def test_an_engine_failure_ends_the_run_with_state_unavailable_and_the_route_recovers() -> None:
    settings = Settings(agui_script_delay_ms=0)
    with RedisServer() as engine:
        store = RuntimeStateInEngine(f"{engine.url}?socket_timeout=1&socket_connect_timeout=1")
        pipeline = RoutePipeline(runtime, runtime.build(settings, store), settings, store)
        assert (await drain(pipeline, "before", "delete notes.txt"))[-1]["outcome"]["type"] == "interrupt"

        with engine.frozen():  # accepts connections, answers nothing
            started = time.monotonic()
            silent = await drain(pipeline, "silent", "Hello")
            assert time.monotonic() - started < 10, "bounded by the engine's timeouts"
        engine.stop()
        gone = await drain(pipeline, "gone", "Hello")
        engine.start()
        after = await drain(pipeline, "after", "Hello")

        bridge = pipeline.bridge
        held = bridge.held_threads()
        manager = bridge._agent._session_manager
    assert outcome(silent) == outcome(gone) == (["RUN_STARTED", "RUN_ERROR"], "STATE_UNAVAILABLE")
    assert after[-1]["type"] == "RUN_FINISHED"
    assert held.running == held.cached == frozenset() and held.paused == {"before"}
    assert manager.get_session_count() == 0, "the process tracks no session between runs"


def event(number: int, **delta: object) -> Event:
    """User event ``number`` (the same id and time each time), setting ``delta`` in the state."""
    content = types.Content(role="user", parts=[types.Part(text=f"message {number}")])
    return Event(
        id=f"event-{number}",
        timestamp=1_800_000_000.0 + number,
        author="user",
        invocation_id="i",
        content=content,
        actions=EventActions(state_delta=delta),
    )


async def exercise(service: BaseSessionService, app: str) -> list[object]:
    """What ADK sees of a session service through one thread's life in a new ``app``: every answer, in order."""
    seen: list[object] = []
    created = await service.create_session(
        app_name=app, user_id="u", session_id="thread:1", state={"keep": 1, "app:shared": 2, "temp:gone": 3}
    )
    seen.append(copy.deepcopy(created.state))
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=app, user_id="u", session_id="thread:1")
    first, second = event(1, recipe={"title": "Soup"}), event(2, **{"user:name": "Ana", "temp:scratch": 1})
    for each in (first, first, second):  # the first one delivered twice: stored once
        await service.append_event(created, each)
        seen.append((copy.deepcopy(created.state), [e.id for e in created.events], created.last_update_time))
    for config in (None, GetSessionConfig(num_recent_events=1), GetSessionConfig(after_timestamp=second.timestamp)):
        session = await service.get_session(app_name=app, user_id="u", session_id="thread:1", config=config)
        seen.append((session.state, [e.model_dump() for e in session.events], session.last_update_time))
    await service.delete_session(app_name=app, user_id="u", session_id="thread:1")
    seen.append(await service.get_session(app_name=app, user_id="u", session_id="thread:1"))
    with pytest.raises(SessionNotFoundError):
        await service.append_event(created, event(3))
    return seen


@pytest.mark.parametrize("in_a_run", [False, True], ids=["outside a run", "within a run"])
async def test_engine_sessions_answer_as_adk_own_in_memory_service(engine: str, in_a_run: bool) -> None:
    if in_a_run:
        watch()
    app = run_input()["runId"]  # an app of its own: app and user state outlive a session
    assert await exercise(engine_sessions(engine), app) == await exercise(InMemorySessionService(), app)
