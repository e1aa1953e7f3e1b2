"""POST /pydantic-ai/agent with shared state: a specialist paused at its approval waits in the engine.

Real server processes (``deploy.serve``) over one real ``redis-server``, as deployed, where the
generic replica tests (tests/test_replicas.py) do not reach: a paused specialist outlives both
replicas (killed; two new ones continue it, under the same subagent, and run the approved deletion
once; a replay runs nothing); the record it is kept in (Pydantic AI's own serialization; its size
and expiry, gone once taken); the app's approval ledger, on a replica that never served the
thread, drops it. Below HTTP: an engine that stops answering, or is gone, when the route reads or
writes the record ends the run with ``STATE_UNAVAILABLE`` within its timeouts, and the route works
again once it is back.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest
import redis
from ag_ui.core import RunAgentInput

from app.config import Settings
from app.pipeline import RoutePipeline
from runtimes.pydantic_ai import runtime
from runtimes.pydantic_ai.shared import PAUSED_TTL_S
from store import MemoryStore, Store
from store.engine import RedisStore
from tests import processes
from tests.engine import RedisServer
from tests.wire import Run, post_run, through_pipeline
from verifier import verify_events, verify_thread
from verifier.client import run_input
from verifier.scenarios import APPROVE, resume_with

ROUTE = runtime.route
SPECIALIST_APPROVAL = "Research old logs and delete logs.txt"
approve = resume_with(APPROVE)
"""The next request, approving every interrupt a run ended with (the history the client holds)."""
ONE_WAITING = {"AGUI_MAX_PARKED_APPROVALS": "1", "AGUI_APPROVAL_MIN_AGE_S": "0"}
"""The approval ledger holds one waiting thread per route: parking one evicts the one before."""
TIMEOUT_S = 1.0
"""The engine client's timeouts in the tests below HTTP."""


def record_key(thread_id: str) -> str:
    return f"agui:{ROUTE}:specialists:{thread_id}"


def replica(engine: str, **settings: str) -> AbstractContextManager[tuple[str, subprocess.Popen]]:
    return processes.replica(engine, **ONE_WAITING, **settings)


@pytest.fixture(scope="module")
def replicas(engine: str) -> Iterator[list[str]]:
    """Two replicas, each started before the thread it serves exists anywhere."""
    with replica(engine) as (one, _), replica(engine) as (two, _):
        yield [one, two]


def record_of(engine: str, thread_id: str) -> tuple[bytes | None, float | None]:
    """The thread's paused-specialist record and its time to live in seconds (None: no record)."""
    with redis.Redis.from_url(engine) as client:
        value, ttl_ms = client.get(record_key(thread_id)), client.pttl(record_key(thread_id))
    return value, (ttl_ms / 1000 if value is not None else None)


def paused(base: str) -> tuple[dict, Run]:
    """A run whose specialist paused at its approval: its request and its run."""
    body = run_input(SPECIALIST_APPROVAL)
    run = post_run(base, ROUTE, body)
    assert verify_events(run.events) == [], run.types()
    [suspended] = run.of_type("SUBAGENT_FINISHED")
    assert suspended["outcome"]["type"] == "suspended" and len(run.interrupts()) == 1, run.types()
    return body, run


def deletions(run: Run) -> list[str]:
    """What the specialist's own tool results say was deleted."""
    return [e["content"] for e in run.of_type("TOOL_CALL_RESULT") if e["content"].startswith("Deleted")]


def test_a_paused_specialist_outlives_every_replica(engine: str, replicas: list[str]) -> None:
    with replica(engine) as (one, _), replica(engine):
        body, first = paused(one)
    # both replicas were killed; two new ones know the paused specialist only from the engine
    record, ttl_s = record_of(engine, body["threadId"])
    assert record is not None and len(record) < 8_192, len(record or b"")
    assert PAUSED_TTL_S - 60 < ttl_s <= PAUSED_TTL_S

    answer = approve(body, first.events)
    second = post_run(replicas[0], ROUTE, answer)
    assert verify_thread([first.events, second.events]) == [], second.types()
    assert second.terminal["type"] == "RUN_FINISHED" and not second.interrupts(), second.types()
    [suspended] = first.of_type("SUBAGENT_FINISHED")
    [started] = second.of_type("SUBAGENT_STARTED")
    [finished] = second.of_type("SUBAGENT_FINISHED")
    assert started["subagentRunId"] == finished["subagentRunId"] == suspended["subagentRunId"]
    assert finished["outcome"] == {"type": "success"}
    assert deletions(second) == ["Deleted logs.txt."], "the approved call ran once, in the specialist"
    assert record_of(engine, body["threadId"]) == (None, None), "taken by the resume"

    replayed = post_run(replicas[1], ROUTE, {**answer, "runId": run_input()["runId"]})
    assert replayed.types() == ["RUN_STARTED", "RUN_FINISHED"], "the replay runs nothing"


def test_the_ledger_of_a_replica_that_never_saw_a_thread_drops_its_paused_specialist(
    engine: str, replicas: list[str]
) -> None:
    one, two = replicas
    evicted, first = paused(one)
    assert record_of(engine, evicted["threadId"])[0] is not None
    waiting, _ = paused(two)  # the ledger on `two` evicts the longest waiting thread: `evicted`
    assert record_of(engine, evicted["threadId"]) == (None, None), "forget() on `two` dropped the record"
    assert record_of(engine, waiting["threadId"])[0] is not None
    late = post_run(one, ROUTE, approve(evicted, first.events))
    assert late.types() == ["RUN_STARTED", "RUN_ERROR"] and late.terminal["code"] == "INTERRUPT_EXPIRED"


def test_a_thread_without_a_paused_specialist_writes_no_record(engine: str, replicas: list[str]) -> None:
    for message in ("Research the history of Lisbon", "delete notes.txt"):
        body = run_input(message)
        assert post_run(replicas[1], ROUTE, body).terminal["type"] == "RUN_FINISHED"
        assert record_of(engine, body["threadId"]) == (None, None), message


class SpecialistsInEngine(MemoryStore):
    """The app's records (the lease, the gate, the ledger) in this process's memory, the paused
    specialists in the engine at ``url``: an engine failure then reaches the route's record alone."""

    shared = True

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.engine = RedisStore(url, timeout_s=TIMEOUT_S)

    def _of(self, key: str) -> Store:
        return self.engine if ":specialists:" in key else super()

    async def get(self, key: str) -> bytes | None:
        return await self._of(key).get(key)

    async def put(self, key: str, value: bytes, *, ttl_s: float) -> None:
        await self._of(key).put(key, value, ttl_s=ttl_s)

    async def delete(self, *keys: str) -> None:
        for key in keys:
            await self._of(key).delete(key)


async def drain(pipeline: RoutePipeline, body: dict) -> list[dict]:
    """One run through the route's pipeline (no HTTP), as the events a client decodes."""
    return await through_pipeline(pipeline, RunAgentInput.model_validate(body))


def unavailable(events: list[dict]) -> bool:
    return events[-1]["type"] == "RUN_ERROR" and events[-1].get("code") == "STATE_UNAVAILABLE"


async def test_an_engine_failure_ends_the_run_with_state_unavailable_and_the_route_recovers() -> None:
    settings = Settings(agui_script_delay_ms=0)
    with RedisServer() as engine:
        store = SpecialistsInEngine(engine.url)
        pipeline = RoutePipeline(runtime, runtime.build(settings, store), settings, store)

        async def pause() -> tuple[dict, list[dict]]:
            body = run_input(SPECIALIST_APPROVAL)
            return body, await drain(pipeline, body)

        asked, first = await pause()
        assert first[-1]["outcome"]["type"] == "interrupt", [e["type"] for e in first]
        with engine.frozen():  # accepts connections, answers nothing: the resume cannot read the record
            began = time.monotonic()
            silent = await drain(pipeline, approve(asked, first))
            assert time.monotonic() - began < TIMEOUT_S * 5, "bounded by the engine's timeouts"
        engine.stop()  # gone: the specialist pauses, its record cannot be written
        lost = await drain(pipeline, run_input(SPECIALIST_APPROVAL))
        engine.start()
        again, second = await pause()
        after = await drain(pipeline, approve(again, second))
        await store.engine.aclose()
    assert unavailable(silent) and unavailable(lost), ([e["type"] for e in silent], [e["type"] for e in lost])
    assert verify_events(silent) == [] and verify_events(lost) == []
    assert not any(e["type"] == "TOOL_CALL_RESULT" and e["content"].startswith("Deleted") for e in silent)
    assert verify_thread([second, after]) == [] and after[-1]["type"] == "RUN_FINISHED"
    assert any(e["type"] == "TOOL_CALL_RESULT" and e["content"] == "Deleted logs.txt." for e in after)
    assert pipeline.bridge.held_threads().cached == frozenset(), "the process keeps no specialist between runs"
