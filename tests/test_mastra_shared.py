"""POST /mastra/agent with shared state: a suspended Mastra run waits in the engine, not in a sidecar.

Real server processes (``deploy.serve``, each with its own Node sidecar) over one real
``redis-server``, as deployed. What the generic replica tests (tests/test_replicas.py) do not
reach: a run suspended by one replica's sidecar is resumed by a replica started after it, with the
first one gone; the app's approval ledger, on a replica whose sidecar never ran a thread, drops that
thread's Mastra runs from the engine; and the engine holds Mastra runs only while an approval needs
them (nothing once every thread is answered); and a run whose Mastra storage fails ends at once
with ``STATE_UNAVAILABLE``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.engine import redis_server
from tests.processes import replica
from tests.wire import Run, post_run, run_input, run_sync
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume

ROUTE = "/mastra/agent"
ONE_WAITING = {"AGUI_MAX_PARKED_APPROVALS": "1", "AGUI_APPROVAL_MIN_AGE_S": "0"}
"""The approval ledger holds one waiting thread per route: parking one evicts the one before."""
SNAPSHOTS = "mastra_workflow_snapshot:*"
"""@mastra/redis's keys of Mastra's stored workflow runs."""
INDEX = "agui:mastra:runs:*"
"""The sidecar's thread -> runs index beside them (runtimes/mastra/sidecar/server.mjs)."""


@pytest.fixture()
def engine() -> Iterator[str]:
    """An engine of each test's own (the sidecar's index and snapshots are counted per test)."""
    with redis_server() as url:
        yield url


def keys(engine: str, pattern: str) -> list[str]:
    with redis.Redis.from_url(engine) as client:
        return sorted(key.decode() for key in client.scan_iter(match=pattern))


def ask(base: str, thread_id: str) -> tuple[dict, Run]:
    body = run_input("delete notes.txt", thread_id=thread_id)
    asked = post_run(base, ROUTE, body)
    assert asked.interrupts(), asked.types()
    return body, asked


def answer(base: str, body: dict, asked: Run) -> Run:
    approve = run_input(
        thread_id=body["threadId"],
        messages=history_after(body, asked.events),
        resume=resume(asked.interrupts(), payload={"approved": True}),
    )
    return post_run(base, ROUTE, approve)


def test_a_run_suspended_by_one_sidecar_is_resumed_by_another_after_the_first_is_gone(engine: str) -> None:
    with replica(engine) as (first, _):
        body, asked = ask(first, "thread-moves")
    assert keys(engine, SNAPSHOTS), "the suspended run waits in the engine"
    with replica(engine) as (second, _):
        resumed = answer(second, body, asked)
    assert resumed.terminal["type"] == "RUN_FINISHED", resumed.terminal
    assert verify_thread([asked.events, resumed.events]) == []
    assert [event["content"] for event in resumed.of_type("TOOL_CALL_RESULT")] == ['"Deleted notes.txt."']
    assert keys(engine, SNAPSHOTS) == [] and keys(engine, INDEX) == [], "nothing is left once it is answered"


def test_the_ledger_on_another_replica_drops_an_evicted_threads_mastra_runs(engine: str) -> None:
    with replica(engine, **ONE_WAITING) as (one, _), replica(engine, **ONE_WAITING) as (two, _):
        evicted_body, evicted = ask(one, "thread-evicted")
        evicted_run = evicted_body["runId"]
        assert any(evicted_run in key for key in keys(engine, SNAPSHOTS))
        kept_body, kept = ask(two, "thread-kept")  # the ledger on `two` evicts the first, through `two`'s sidecar
        assert keys(engine, INDEX) == ["agui:mastra:runs:thread-kept"]
        assert not any(evicted_run in key for key in keys(engine, SNAPSHOTS)), keys(engine, SNAPSHOTS)

        late = answer(one, evicted_body, evicted)
        assert late.terminal["code"] == "INTERRUPT_EXPIRED", late.terminal
        resumed = answer(one, kept_body, kept)
        assert resumed.terminal["type"] == "RUN_FINISHED", resumed.terminal
        assert keys(engine, SNAPSHOTS) == [] and keys(engine, INDEX) == []


def test_a_run_whose_mastra_storage_fails_ends_at_once_with_state_unavailable(engine: str) -> None:
    """The engine refuses the sidecar's write of the run's thread index (the key holds a string, so
    SADD answers WRONGTYPE) while it serves the app's own keys: the run ends with the state store's
    code, not a model's, and at once (Mastra left such a run's request open with no end); once the
    engine takes the write again, the thread's next run finishes (Mastra held the thread reserved
    for the failed run, and every later run of it waited forever)."""
    with replica(engine) as (base, _):
        body = run_input("Hello there!", thread_id="thread-storage-fails")
        with redis.Redis.from_url(engine) as client:
            client.set(INDEX.replace("*", body["threadId"]), "not a set")
        failed = run_sync(base, ROUTE, body, deadline_s=30)
        assert verify_events(failed.events) == [], failed.types()
        assert failed.terminal["type"] == "RUN_ERROR" and failed.terminal["code"] == "STATE_UNAVAILABLE", (
            failed.terminal
        )
        with redis.Redis.from_url(engine) as client:
            client.delete(INDEX.replace("*", body["threadId"]))
        again = run_sync(base, ROUTE, run_input("Hello there!", thread_id=body["threadId"]), deadline_s=30)
        assert again.terminal["type"] == "RUN_FINISHED", again.terminal
        assert again.of_type("TEXT_MESSAGE_CONTENT"), again.types()
