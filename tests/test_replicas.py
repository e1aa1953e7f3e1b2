"""Several replicas over one shared engine (``AGUI_STATE_URL``): any replica serves any request.

Two server processes (``python -m deploy.serve``, as deployed) share one real ``redis-server``
(``tests/engine.py``). Every scenario of every route is played with its requests alternating
between them (the interrupt on one, the resume on the other; a frontend tool's answer on the
other), and each surface must come out as it does on one process: the runtime matrix's predicate
gives the same verdict on the live thread as on the route's committed capture. Then what only
replicas have: a run in flight on one refuses a second on the other (``THREAD_BUSY``); a client
reconnects to the other replica mid-run and reads the rest exactly once; a run whose replica is
killed ends, for a reconnecting client, with ``RUN_LOST``, and its thread is free again once the
lease has expired; the engine restarting under load costs clear errors (HTTP 503
``state_unavailable`` or RUN_ERROR ``STATE_UNAVAILABLE``, never a 500 or a stream without a
terminal event), and everything works again once it is back; with named tokens, a thread is its
creator's on every replica; ``AGUI_WORKERS=2`` serves from two worker processes of one server;
and a bounded load (300 threads of every surface, 100 at once, requests alternating between the
replicas) loses nothing: every stream verifies and every thread ends as it does on one process.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests import processes
from tests.capture import against_offline
from tests.engine import RedisServer
from tests.processes import kill
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, open_stream, play, post_run, read_until, run_input
from verifier import verify_events, verify_thread
from verifier.scenarios import SCENARIOS, Scenario

LEASE_S = 3
"""AGUI_LEASE_S for these replicas: short, so a killed replica's thread frees up soon."""


def replica(engine: str, **settings: str) -> AbstractContextManager[tuple[str, subprocess.Popen]]:
    return processes.replica(engine, **{"AGUI_LEASE_S": str(LEASE_S), **settings})


@pytest.fixture(scope="module")
def replicas(engine: str) -> Iterator[list[str]]:
    with replica(engine, AGUI_SCRIPT_DELAY_MS="0") as (one, _), replica(engine, AGUI_SCRIPT_DELAY_MS="0") as (two, _):
        yield [one, two]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.surface for scenario in SCENARIOS])
def test_every_surface_with_requests_alternating_between_replicas(
    replicas: list[str], route: str, scenario: Scenario
) -> None:
    exchanges = play(replicas, route, scenario)
    surface, verdict, offline = against_offline(RUNTIME_BY_ROUTE[route].name, scenario.surface, exchanges)
    assert verdict.status == offline.status, f"{surface.title}: {verdict.observed or 'yes'} (one process: {offline})"


@pytest.fixture(scope="module")
def paced(engine: str) -> Iterator[list[str]]:
    """Two replicas whose runs last long enough to be caught in flight, going on without clients."""
    settings = {"AGUI_SCRIPT_DELAY_MS": "40", "AGUI_DETACHED_RUN_S": "60"}
    with replica(engine, **settings) as (one, _), replica(engine, **settings) as (two, _):
        yield [one, two]


@pytest.mark.parametrize("route", ROUTES)
def test_a_run_in_flight_on_one_replica_keeps_its_thread_busy_on_the_other(paced: list[str], route: str) -> None:
    body = run_input("Write a story about dragons")

    async def both() -> tuple[list[dict], object]:
        async with open_stream(paced[0], route, body) as events:
            first = [await anext(events)]  # the run is in flight on the first replica
            second = await asyncio.to_thread(post_run, paced[1], route, run_input("Hello", thread_id=body["threadId"]))
            first += [event async for event in events]
        return first, second

    first, second = asyncio.run(both())
    assert second.types() == ["RUN_STARTED", "RUN_ERROR"] and second.terminal["code"] == "THREAD_BUSY"
    assert verify_events(first) == [] and first[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("prompt", "cut_at"),
    [("Write a story about dragons", "TEXT_MESSAGE_START"), ("Research the history of Lisbon", "SUBAGENT_STARTED")],
    ids=["mid-text", "mid-delegation"],
)
def test_a_client_reconnects_to_the_other_replica(paced: list[str], route: str, prompt: str, cut_at: str) -> None:
    body = run_input(prompt)
    head = asyncio.run(read_until(paced[0], route, body, cut_at))
    rest = post_run(paced[1], route, body, headers={"last-event-id": str(len(head))})
    numbers = [int(n) for n in re.findall(rb"^id: (\d+)$", rest.raw, re.MULTILINE)]
    assert numbers == list(range(len(head) + 1, len(head) + len(rest.events) + 1)), "the rest, exactly once"
    whole = head + rest.events
    assert verify_events(whole) == [] and whole[-1]["type"] == "RUN_FINISHED", [e["type"] for e in whole]


@pytest.mark.parametrize("route", ROUTES)
def test_a_run_whose_replica_dies_ends_with_run_lost_and_frees_its_thread(engine: str, route: str) -> None:
    settings = {"AGUI_SCRIPT_DELAY_MS": "40", "AGUI_DETACHED_RUN_S": "60"}
    body = run_input("Write a story about dragons")
    with replica(engine, **settings) as (survivor, _):
        with replica(engine, **settings) as (doomed, process):
            head = asyncio.run(read_until(doomed, route, body, "TEXT_MESSAGE_CONTENT"))
            kill(process)
        started = time.monotonic()
        rest = post_run(survivor, route, body, headers={"last-event-id": str(len(head))}, timeout=60)
        assert rest.terminal["type"] == "RUN_ERROR" and rest.terminal["code"] == "RUN_LOST", rest.types()
        assert time.monotonic() - started < LEASE_S * 4, "a dead replica is noticed within a few leases"
        deadline = time.monotonic() + LEASE_S * 4
        while True:  # the thread is free again once the dead replica's lease has expired
            again = post_run(survivor, route, run_input("Hello", thread_id=body["threadId"]))
            if again.terminal["type"] == "RUN_FINISHED":
                break
            assert again.terminal["code"] == "THREAD_BUSY" and time.monotonic() < deadline, again.terminal
            time.sleep(0.2)


def test_the_engine_restarting_under_load_costs_clear_errors_then_nothing(tmp_path: Path) -> None:
    with RedisServer() as engine:
        settings = {"AGUI_SCRIPT_DELAY_MS": "20"}
        with replica(engine.url, **settings) as (one, _), replica(engine.url, **settings) as (two, _):
            answers: list[tuple[str, int, dict | None, bool]] = []  # route, status, terminal, begun once it was back
            stop, back = threading.Event(), threading.Event()

            def load(base: str) -> None:
                while not stop.is_set():
                    for route in ROUTES:
                        begun_back = back.is_set()
                        run = post_run(base, route, run_input("Write a story about dragons"), timeout=60)
                        terminal = run.terminal if run.events else None
                        answers.append((route, run.status, terminal, begun_back))
                        if run.status == 200:
                            assert verify_events(run.events) == [], (route, run.types())
                        else:
                            assert run.status == 503 and b"state_unavailable" in run.raw, (route, run.status, run.raw)

            workers = [threading.Thread(target=load, args=(base,)) for base in (one, two, one, two)]
            for worker in workers:
                worker.start()
            wait_for(lambda: len(answers) >= 8, "runs before the restart")
            engine.stop()

            def a_clear_error() -> bool:
                return any(status == 503 or (t or {}).get("code") == "STATE_UNAVAILABLE" for _, status, t, _ in answers)

            wait_for(a_clear_error, "a clear error while the engine is down")
            engine.start()
            back.set()
            wait_for(lambda: sum(begun_back for *_, begun_back in answers) >= 8, "runs after the restart")
            stop.set()
            for worker in workers:
                worker.join(timeout=120)
            refused = sum(status == 503 for _, status, _, _ in answers)
            failed = sum((terminal or {}).get("code") == "STATE_UNAVAILABLE" for _, _, terminal, _ in answers)
            print(f"{len(answers)} runs: {refused} refused with 503, {failed} ended with STATE_UNAVAILABLE")
            not_back = [
                (route, status, t and t.get("code"))
                for route, status, t, begun_back in answers
                if begun_back and (status != 200 or t["type"] != "RUN_FINISHED")
            ]
            assert not_back == [], f"runs begun once the engine was back that did not finish: {not_back}"
            unclear = [
                (route, t.get("code"), t.get("message"))
                for route, status, t, _ in answers
                if status == 200 and t["type"] == "RUN_ERROR" and t.get("code") != "STATE_UNAVAILABLE"
            ]
            assert unclear == [], f"errors other than STATE_UNAVAILABLE: {unclear}"


def wait_for(condition, what: str, timeout_s: float = 120) -> None:  # noqa: ANN001 - any predicate
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout_s:g} s"
        time.sleep(0.05)


def test_a_thread_is_its_creators_on_every_replica(engine: str) -> None:
    tokens = {"AGUI_TOKENS": "alice:alice-token,bob:bob-token", "AGUI_SCRIPT_DELAY_MS": "0"}
    alice, bob = {"authorization": "Bearer alice-token"}, {"authorization": "Bearer bob-token"}
    with replica(engine, **tokens) as (one, _), replica(engine, **tokens) as (two, _):
        for route in ROUTES:
            body = run_input("Hello there!")
            mine = post_run(one, route, body, headers=alice)
            assert mine.terminal["type"] == "RUN_FINISHED"
            assert post_run(two, route, body, headers={"last-event-id": "0", **bob}).status == 404
            theirs = post_run(two, route, body, headers=bob)  # the same ids, another principal: a new run
            assert theirs.terminal["type"] == "RUN_FINISHED" and theirs.events[0]["threadId"] == body["threadId"]
            assert post_run(two, route, body, headers={"last-event-id": "0", **alice}).events == mine.events


def test_two_workers_of_one_server_share_its_threads(engine: str) -> None:
    with replica(engine, AGUI_WORKERS="2", AGUI_SCRIPT_DELAY_MS="0") as (base, _):
        for route in ROUTES:
            for scenario in SCENARIOS:
                if scenario.surface in ("approval", "frontend_tool"):
                    exchanges = play(base, route, scenario)
                    assert verify_thread([e.run.events for e in exchanges]) == [], (route, scenario.surface)
                    assert exchanges[-1].run.terminal["type"] == "RUN_FINISHED"


LOAD_THREADS = 300
LOAD_CONCURRENCY = 100


def test_a_bounded_load_across_two_replicas_loses_nothing(replicas: list[str]) -> None:
    work = [(i, ROUTES[i % len(ROUTES)], SCENARIOS[i % len(SCENARIOS)]) for i in range(LOAD_THREADS)]

    def one(item: tuple[int, str, Scenario]) -> tuple[str, Scenario, list]:
        i, route, scenario = item  # every other thread starts on the second replica
        return route, scenario, play(replicas[i % 2 :] + replicas[: i % 2], route, scenario)

    with ThreadPoolExecutor(max_workers=LOAD_CONCURRENCY) as pool:
        threads = list(pool.map(one, work))
    for route, scenario, exchanges in threads:
        _, verdict, offline = against_offline(RUNTIME_BY_ROUTE[route].name, scenario.surface, exchanges)
        assert verdict.status == offline.status, (route, scenario.surface)
