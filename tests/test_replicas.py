"""Several replicas over one shared engine (``AGUI_STATE_URL``): any replica serves any request.

Two server processes (``python -m deploy.serve``, as deployed) share one real ``redis-server``
(``tests/engine.py``). Every scenario of every route is played with its requests alternating
between them (the interrupt on one, the resume on the other; a frontend tool's answer on the
other), and each surface must come out as it does on one process: the runtime matrix's predicate
gives the same verdict on the live thread as on the route's committed capture. Then what only
replicas have: a run in flight on one refuses a second on the other (``THREAD_BUSY``); a client
reconnects to the other replica mid-run and reads the rest exactly once; a run whose replica is
killed ends, for a reconnecting client, with ``RUN_LOST``, and its thread is free again once the
lease has expired.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.capture import Capture, CapturedThread, load_captures
from tests.engine import redis_server
from tests.processes import kill, served
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, open_stream, play, post_run, run_input
from verifier import verify_events
from verifier.scenarios import SCENARIOS, Scenario
from verifier.surfaces import SURFACES, judge

OFFLINE = {thread.key: thread for thread in load_captures()}
SURFACE_OF = {scenario: surface for surface in SURFACES for scenario in surface.scenarios}
LEASE_S = 3
"""AGUI_LEASE_S for these replicas: short, so a killed replica's thread frees up soon."""


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    with redis_server() as url:
        yield url


def replica(engine: str, **settings: str):  # noqa: ANN201 - the context manager of tests.processes.served
    return served(AGUI_STATE_URL=engine, AGUI_LEASE_S=str(LEASE_S), **settings)


@pytest.fixture(scope="module")
def replicas(engine: str) -> Iterator[list[str]]:
    with replica(engine, AGUI_SCRIPT_DELAY_MS="0") as (one, _), replica(engine, AGUI_SCRIPT_DELAY_MS="0") as (two, _):
        yield [one, two]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.surface for scenario in SCENARIOS])
def test_every_surface_with_requests_alternating_between_replicas(
    replicas: list[str], route: str, scenario: Scenario
) -> None:
    runtime = RUNTIME_BY_ROUTE[route].name
    exchanges = play(replicas, route, scenario)
    live = CapturedThread(
        runtime,
        scenario.surface,
        [Capture(Path(runtime, scenario.surface), e.run.raw, {"request": e.request}) for e in exchanges],
    )
    surface = SURFACE_OF[scenario.surface]
    offline = judge(OFFLINE[f"{runtime}/{scenario.surface}"], surface.predicate)
    verdict = judge(live, surface.predicate)
    assert verdict.status == offline.status, f"{surface.title}: {verdict.observed or 'yes'} (one process: {offline})"


@pytest.fixture(scope="module")
def paced(engine: str) -> Iterator[list[str]]:
    """Two replicas whose runs last long enough to be caught in flight, going on without clients."""
    settings = {"AGUI_SCRIPT_DELAY_MS": "40", "AGUI_DETACHED_RUN_S": "60"}
    with replica(engine, **settings) as (one, _), replica(engine, **settings) as (two, _):
        yield [one, two]


async def cut_after(base: str, route: str, body: dict, first: str) -> list[dict]:
    """Read a run on ``base`` up to its first ``first`` event, then drop the connection."""
    seen: list[dict] = []
    async with open_stream(base, route, body) as events:
        async for event in events:
            seen.append(event)
            if event["type"] == first:
                break
    return seen


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
    head = asyncio.run(cut_after(paced[0], route, body, cut_at))
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
            head = asyncio.run(cut_after(doomed, route, body, "TEXT_MESSAGE_CONTENT"))
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
