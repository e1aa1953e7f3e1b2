"""POST /langgraph/agent with shared state (``AGUI_STATE_URL``): what ``tests/test_replicas.py`` does not reach.

* a paused approval, and a specialist paused at its own approval, outlive every replica: both
  killed, two new ones over the same engine resume them (the approved call runs once, the rejected
  one never, the specialist goes on under the same subagent id), and a replay runs nothing;
* a thread whose turns alternate between replicas keeps one graph state, the same as on one process;
* the approval ledger of a replica that never served a thread drops the thread's checkpoints and its
  suspended specialist from the engine; a waiting thread's keys are kept far longer than an idle one's;
* the engine's checkpointer answers as LangGraph's own ``InMemorySaver`` (latest and by id, pending
  writes in order, a write delivered twice, namespaces, ``alist`` filters, deletion);
* an engine that stops answering, or is gone, ends the run with ``STATE_UNAVAILABLE`` within the
  client's timeouts (ag-ui-langgraph answers its own RUN_ERROR without a code), and once it is back
  the route works again; between runs the process keeps nothing of any thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from app.config import Settings
from app.pipeline import RoutePipeline
from app.runs import RunKeys
from runtimes.langgraph import runtime
from runtimes.langgraph.engine_saver import PREFIX, EngineSaver
from runtimes.langgraph.shared import IDLE_TTL_S, PAUSED_TTL_S
from tests.engine import RedisServer, RuntimeStateInEngine, drain, outcome
from tests.processes import replica
from tests.wire import Run, post_run
from verifier import verify_thread
from verifier.client import history_after, run_input

ROUTE = runtime.route
LEASE_WAIT_S = 10.0


@pytest.fixture(scope="module")
def replicas(engine: str) -> Iterator[list[str]]:
    """Two replicas whose approval ledger holds one waiting thread (parking another evicts it)."""
    settings = {"AGUI_MAX_PARKED_APPROVALS": "1", "AGUI_APPROVAL_MIN_AGE_S": "0"}
    with replica(engine, **settings) as (one, _), replica(engine, **settings) as (two, _):
        yield [one, two]


def post(engine: str, base: str, body: dict) -> Run:
    """``post_run``, returning once the run has let its thread go: a run releases the thread's lease
    just after its terminal event goes out, and the next request of the thread (or a replica's
    kill) must not come before that."""
    run = post_run(base, ROUTE, body)
    lease = RunKeys.lease_prefix(ROUTE) + body["threadId"]
    deadline = time.monotonic() + LEASE_WAIT_S
    with redis.Redis.from_url(engine) as client:
        while client.exists(lease):
            assert time.monotonic() < deadline, f"the run still holds {lease}"
            time.sleep(0.02)
    return run


def thread_keys(engine: str, thread_id: str) -> dict[str, int]:
    """The thread's keys in the engine (checkpoints and suspended specialists), with their time to live (ms)."""
    with redis.Redis.from_url(engine) as client:
        keys = [*client.keys(f"{PREFIX}{thread_id}:*"), *client.keys(f"agui:langgraph:suspended:{thread_id}")]
        return {key.decode(): client.pttl(key) for key in keys}


def answer(asked: dict, first: Run, approve: object) -> dict:
    """The resume answering every interrupt of ``first``: approved when ``approve(interrupt)``."""
    answers = [
        {"interruptId": i["id"], "status": "resolved", "payload": {"approved": approve(i)}} for i in first.interrupts()
    ]
    return run_input(thread_id=asked["threadId"], messages=history_after(asked, first.events), resume=answers)


def test_paused_approvals_outlive_every_replica(engine: str, replicas: list[str]) -> None:
    both, specialist = run_input("delete a.txt and b.txt"), run_input("Research old logs and delete logs.txt")
    with replica(engine) as (one, _), replica(engine) as (two, _):
        firsts = [post(engine, one, both), post(engine, two, specialist)]
    # both replicas were killed; two new ones know the threads only from the engine
    for asked, first in zip([both, specialist], firsts, strict=True):
        ttls = thread_keys(engine, asked["threadId"])
        assert ttls and all(ttl > IDLE_TTL_S * 1000 for ttl in ttls.values()), ttls
        assert first.interrupts(), first.types()
    assert any(key.startswith("agui:langgraph:suspended:") for key in thread_keys(engine, specialist["threadId"]))

    mixed = answer(both, firsts[0], lambda i: i["message"] == "Delete a.txt?")
    second = post(engine, replicas[0], mixed)
    assert verify_thread([firsts[0].events, second.events]) == [] and second.terminal["type"] == "RUN_FINISHED"
    results = sorted(result["content"] for result in second.of_type("TOOL_CALL_RESULT"))
    assert [r for r in results if "Deleted" in r] == ["Deleted a.txt."], results
    replayed = post(engine, replicas[1], {**mixed, "runId": run_input()["runId"]})
    assert replayed.types() == ["RUN_STARTED", "RUN_FINISHED"], "the replay runs nothing"

    approved = answer(specialist, firsts[1], lambda _: True)
    continued = post(engine, replicas[1], approved)
    assert verify_thread([firsts[1].events, continued.events]) == [], continued.types()
    paused_as = firsts[1].of_type("SUBAGENT_FINISHED")[-1]
    assert paused_as["outcome"]["type"] == "suspended"
    assert [e["subagentRunId"] for e in continued.of_type("SUBAGENT_STARTED")] == [paused_as["subagentRunId"]], (
        continued.types(),
        continued.terminal,
    )
    assert any("Deleted logs.txt." in r["content"] for r in continued.of_type("TOOL_CALL_RESULT"))
    ttls = thread_keys(engine, specialist["threadId"])
    assert ttls and all(0 < ttl <= IDLE_TTL_S * 1000 for ttl in ttls.values()), "answered: idle, nothing suspended"


def conversation(engine: str, bases: list[str], turns: list[str]) -> Run:
    """``turns`` on one thread, each turn on the next of ``bases``, the client keeping the history."""
    history: list[dict] = []
    thread = run_input()["threadId"]
    for number, message in enumerate(turns):
        body = run_input(message, thread_id=thread, messages=history)
        run = post(engine, bases[number % len(bases)], body)
        assert run.terminal["type"] == "RUN_FINISHED", run.types()
        history = history_after(body, run.events)
    return run


def transcript(run: Run) -> list[tuple]:
    """The history a run's last MESSAGES_SNAPSHOT holds, without ids (the bridge makes its own)."""
    snapshot = run.of_type("MESSAGES_SNAPSHOT")[-1]
    return [
        (m["role"], m.get("content"), [c["function"]["name"] for c in m.get("toolCalls") or []])
        for m in snapshot["messages"]
    ]


def test_a_thread_moving_between_replicas_keeps_one_graph_state(engine: str, replicas: list[str]) -> None:
    turns = ["Hello", "What's the weather in Tokyo?", "Hello again"]
    moving = conversation(engine, replicas, turns)
    staying = conversation(engine, replicas[:1], turns)
    assert transcript(moving) == transcript(staying)
    assert [content for role, content, _ in transcript(moving) if role == "user"] == turns, "every turn once"
    ttls = thread_keys(engine, moving.terminal["threadId"])
    assert ttls and all(0 < ttl <= IDLE_TTL_S * 1000 for ttl in ttls.values()), ttls


def test_the_ledger_of_a_replica_that_never_saw_a_thread_drops_its_state(engine: str, replicas: list[str]) -> None:
    first = run_input("Research old logs and delete logs.txt")
    parked = post(engine, replicas[0], first)
    assert parked.interrupts(), (parked.types(), parked.terminal)
    ttls = thread_keys(engine, first["threadId"])
    assert ttls and all(ttl > (PAUSED_TTL_S - 60) * 1000 for ttl in ttls.values()), ttls

    evicting = post(engine, replicas[1], run_input("delete b.txt"))  # the ledger is full: the first goes
    assert evicting.interrupts()
    assert thread_keys(engine, first["threadId"]) == {}, "the evicted thread's state is gone"

    late = post(engine, replicas[0], answer(first, parked, lambda _: True))
    assert late.types() == ["RUN_STARTED", "RUN_ERROR"] and late.terminal["code"] == "INTERRUPT_EXPIRED"


# --- the checkpointer, against LangGraph's own ---------------------------------------------------


def checkpoint(checkpoint_id: str, **values: object) -> dict:
    made = empty_checkpoint()
    versions = {channel: f"{number + 1:032}.{0.5:016}" for number, channel in enumerate(values)}
    return {**made, "id": checkpoint_id, "ts": "2026-11-30", "channel_values": values, "channel_versions": versions}


async def exercise(saver: BaseCheckpointSaver, thread_id: str) -> list[object]:
    """What LangGraph sees of a checkpointer through one thread's life: every answer, in order."""
    seen: list[object] = [await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})]
    config: dict = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for number, ns in [(1, ""), (2, ""), (3, "tools:task"), (4, "")]:
        stored = checkpoint(f"1ef-{number}", messages=[f"message {number}"], recipe={"title": ns or "root"})
        at = {"configurable": {**config["configurable"], "checkpoint_ns": ns}}
        new = await saver.aput(at, stored, {"source": "loop", "step": number}, stored["channel_versions"])
        seen.append(new)
        if ns == "":
            config = new
        await saver.aput_writes(new, [("messages", "b"), ("recipe", {"x": 1})], task_id="task-b", task_path="~b")
        await saver.aput_writes(new, [("messages", "a"), ("__error__", "first")], task_id="task-a", task_path="~a")
        await saver.aput_writes(new, [("messages", "again"), ("__error__", "second")], task_id="task-a")
    latest = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    seen.append(await saver.aget_tuple(latest))
    seen.append(await saver.aget_tuple({"configurable": {**latest["configurable"], "checkpoint_id": "1ef-2"}}))
    seen.append(await saver.aget_tuple({"configurable": {**latest["configurable"], "checkpoint_ns": "tools:task"}}))
    seen.append(await saver.aget_tuple({"configurable": {**latest["configurable"], "checkpoint_id": "none"}}))
    before = {"configurable": {**latest["configurable"], "checkpoint_id": "1ef-4"}}
    for options in [{}, {"limit": 1}, {"before": before}, {"filter": {"step": 2}}, {"filter": {"step": 9}}]:
        seen.append([each async for each in saver.alist(latest, **options)])
    seen.append([each async for each in saver.alist({"configurable": {"thread_id": thread_id}})])
    await saver.adelete_thread(thread_id)
    seen.append(await saver.aget_tuple(latest))
    seen.append([each async for each in saver.alist(latest)])
    return seen


async def test_the_engine_checkpointer_answers_as_langgraph_own_in_memory_saver(engine: str) -> None:
    thread_id = run_input()["threadId"]
    saver = EngineSaver(engine, ttl_s=60)
    try:
        assert await exercise(saver, thread_id) == await exercise(InMemorySaver(), thread_id)
    finally:
        await saver.aclose()
    assert thread_keys(engine, thread_id) == {}, "a deleted thread leaves nothing behind"


# --- below HTTP: the engine failing ---------------------------------------------------------------


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
        held = pipeline.bridge.held_threads()
    assert outcome(silent)[1] == outcome(gone)[1] == "STATE_UNAVAILABLE", (silent, gone)
    assert outcome(silent)[0][-1] == outcome(gone)[0][-1] == "RUN_ERROR"
    assert after[-1]["type"] == "RUN_FINISHED"
    assert held.running == held.cached == frozenset() and held.paused == {"before"}
