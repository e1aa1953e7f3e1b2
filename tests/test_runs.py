"""Runs outlive their responses (``app/runs.py``), in one process, over real HTTP on every route.

* every event carries its SSE ``id:``, numbered from 1;
* a client whose connection dropped sends the same request with ``Last-Event-ID`` and reads the
  rest of the run exactly once, in order, then the terminal event: mid-text and mid-delegation,
  whether the run went on without it (``AGUI_DETACHED_RUN_S``) or stopped (``CLIENT_GONE``);
* a ``runId`` names one run: sent again without ``Last-Event-ID`` it is refused, never run twice;
  a client that has the whole run gets 204; bad or unknown ``Last-Event-ID`` get clear 4xx;
* a reconnect from further back than the log keeps (``AGUI_REPLAY_MAX_EVENTS``) is told so
  (``REPLAY_INCOMPLETE``), one from within it gets the rest;
* with several named tokens, a thread belongs to the principal that created it: another's run,
  resume or reconnect on it goes as on a thread that does not exist;
* a run holds its thread for as long as it goes, however many leases (``AGUI_LEASE_S``) that is:
  the process's heartbeat renews them;
* a reader sends what the log holds for it in one write, not one per event (in process: over TCP,
  how the bytes arrive is the kernel's business).

The same behaviours across replicas, on the shared engine: tests/test_replicas.py.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest
from ag_ui.core import RunAgentInput, RunFinishedEvent, TextMessageContentEvent
from ag_ui.encoder import EventEncoder

from app.config import Settings
from app.runs import BUSY_MESSAGE, ENDED, LAST, MORE, THREAD_BUSY, RunKeys, RunLimits, RunRegistry
from store.memory import MemoryStore
from tests.wire import (
    ROUTES,
    RUNTIME_BY_ROUTE,
    Run,
    arun,
    live_server,
    open_stream,
    post_run,
    read_until,
    run_input,
)
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume

ALICE, BOB = "alice-token", "bob-token"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    """Runs stop when their client leaves (the default); paced so a cut lands mid-run."""
    with live_server(Settings(agui_script_delay_ms=30)) as url:
        yield url


@pytest.fixture(scope="module")
def detached() -> Iterator[str]:
    """Runs go on for 60 s without a client."""
    with live_server(Settings(agui_script_delay_ms=30, agui_detached_run_s=60)) as url:
        yield url


def reconnect(base: str, route: str, body: dict, last_event_id: int | str, **headers: str) -> Run:
    return post_run(base, route, body, headers={"last-event-id": str(last_event_id), **headers})


@pytest.mark.parametrize("route", ROUTES)
def test_every_event_carries_its_number(base: str, route: str) -> None:
    run = post_run(base, route, run_input("Hello there!"))
    numbers = [int(n) for n in re.findall(rb"^id: (\d+)$", run.raw, re.MULTILINE)]
    assert numbers == list(range(1, len(run.events) + 1)) and run.terminal["type"] == "RUN_FINISHED"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("prompt", "cut_at"),
    [("Write a story about dragons", "TEXT_MESSAGE_START"), ("Research the history of Lisbon", "SUBAGENT_STARTED")],
    ids=["mid-text", "mid-delegation"],
)
def test_a_reconnect_reads_the_rest_of_a_run_that_went_on(detached: str, route: str, prompt: str, cut_at: str) -> None:
    body = run_input(prompt)
    head = asyncio.run(read_until(detached, route, body, cut_at))
    rest = reconnect(detached, route, body, len(head))
    assert rest.status == 200, rest.raw
    numbers = [int(n) for n in re.findall(rb"^id: (\d+)$", rest.raw, re.MULTILINE)]
    assert numbers == list(range(len(head) + 1, len(head) + len(rest.events) + 1)), "the rest, exactly once"
    whole = head + rest.events
    assert verify_events(whole) == [] and whole[-1]["type"] == "RUN_FINISHED", [e["type"] for e in whole]
    assert reconnect(detached, route, body, 0).events == whole, "a finished run replays as it went"
    assert reconnect(detached, route, body, len(whole)).status == 204, "nothing left: do not reconnect"


@pytest.mark.parametrize("route", ROUTES)
def test_a_run_whose_client_left_stops_and_a_reconnect_is_told_why(base: str, route: str) -> None:
    body = run_input("Research the history of Lisbon")
    head = asyncio.run(read_until(base, route, body, "SUBAGENT_STARTED"))
    rest = reconnect(base, route, body, len(head))
    whole = head + rest.events
    assert verify_events(whole) == [], [e["type"] for e in whole]
    assert rest.terminal["type"] == "RUN_ERROR" and rest.terminal["code"] == "CLIENT_GONE", rest.terminal


@pytest.mark.parametrize("route", ROUTES)
def test_a_run_id_names_one_run(base: str, route: str) -> None:
    body = run_input("delete notes.txt")
    first = post_run(base, route, body)
    assert first.interrupts()
    again = httpx.post(f"{base}{route}", json=body, timeout=30)
    assert again.status_code == 409 and again.json()["code"] == "run_exists"
    answer = run_input(
        thread_id=body["threadId"],
        messages=history_after(body, first.events),
        resume=resume(first.interrupts(), payload={"approved": True}),
    )
    assert "Done: Deleted notes.txt." in post_run(base, route, answer).text(), "the thread is untouched"


@pytest.mark.parametrize(
    ("last_event_id", "status", "code"),
    [("1", 404, "unknown_run"), ("abc", 400, "invalid_last_event_id"), ("-1", 400, "invalid_last_event_id")],
)
def test_a_reconnect_that_names_no_run_is_refused(base: str, last_event_id: str, status: int, code: str) -> None:
    answer = httpx.post(f"{base}{ROUTES[0]}", json=run_input("Hello"), headers={"last-event-id": last_event_id})
    assert answer.status_code == status and answer.json()["code"] == code


@pytest.fixture(scope="module")
def two_principals() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=0, agui_tokens={"alice": ALICE, "bob": BOB})) as url:
        yield url


def as_principal(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.mark.parametrize("route", ROUTES)
def test_a_thread_belongs_to_the_principal_that_created_it(two_principals: str, route: str) -> None:
    base, never_asked = two_principals, RUNTIME_BY_ROUTE[route].known.answers
    asked = run_input("delete notes.txt")
    first = post_run(base, route, asked, headers=as_principal(ALICE))
    assert first.interrupts() and first.events[0]["threadId"] == asked["threadId"]
    answer = run_input(
        thread_id=asked["threadId"],
        messages=history_after(asked, first.events),
        resume=resume(first.interrupts(), payload={"approved": True}),
    )

    # Bob naming Alice's thread gets what a thread that does not exist gets.
    foreign = post_run(base, route, answer, headers=as_principal(BOB))
    unknown = post_run(base, route, {**answer, "threadId": f"never-{asked['threadId']}"}, headers=as_principal(BOB))
    expected = never_asked["resume on a thread that never had an interrupt"]
    assert foreign.terminal.get("code", foreign.terminal["type"]) in expected
    assert foreign.types() == unknown.types() and foreign.terminal.get("code") == unknown.terminal.get("code")
    assert reconnect(base, route, asked, 0, **as_principal(BOB)).status == 404
    own = post_run(base, route, run_input("Hello there!", thread_id=asked["threadId"]), headers=as_principal(BOB))
    assert own.terminal["type"] == "RUN_FINISHED" and own.events[0]["threadId"] == asked["threadId"]
    assert "notes.txt" not in own.raw.decode(), "Bob's run on that name sees nothing of Alice's thread"

    # Alice's thread is untouched: her approval runs once, her reconnect reads her run.
    second = post_run(base, route, answer, headers=as_principal(ALICE))
    assert verify_thread([first.events, second.events]) == [] and "Done: Deleted notes.txt." in second.text()
    assert reconnect(base, route, asked, 0, **as_principal(ALICE)).events == first.events


def test_one_token_changes_nothing_for_its_caller() -> None:
    with live_server(Settings(agui_script_delay_ms=0, agui_token=ALICE)) as url:
        body = run_input("Hello there!")
        run = asyncio.run(arun(url, ROUTES[0], body, headers=as_principal(ALICE)))
    assert run.terminal["type"] == "RUN_FINISHED" and run.events[0]["threadId"] == body["threadId"]


def test_a_run_holds_its_thread_for_as_long_as_it_goes() -> None:
    lease_s = 1.0
    with live_server(Settings(agui_script_delay_ms=40, agui_lease_s=lease_s)) as url:
        # The offline model quotes a prompt back: 200 words are a reply of about 4 s at this pace.
        route, body = ROUTES[0], run_input(" ".join(f"word{n}" for n in range(200)))

        async def run_and_try_another() -> tuple[list[dict], list[dict], Run]:
            async with open_stream(url, route, body) as events:
                head = [await anext(events)]
                started = time.monotonic()
                async for event in events:  # until the run has outlived two leases
                    head.append(event)
                    if time.monotonic() - started > 2 * lease_s or event["type"] == "RUN_FINISHED":
                        break
                other = await asyncio.to_thread(post_run, url, route, run_input("Hello", thread_id=body["threadId"]))
                return head, [event async for event in events], other

        head, rest, other = asyncio.run(run_and_try_another())

    assert head[-1]["type"] != "RUN_FINISHED", "the run must still be going after two leases (pace it slower)"
    assert other.types() == ["RUN_STARTED", "RUN_ERROR"]
    assert (other.terminal["code"], other.terminal["message"]) == (THREAD_BUSY, BUSY_MESSAGE), "the lease refused it"
    assert verify_events(head + rest) == [] and rest[-1]["type"] == "RUN_FINISHED"


async def test_a_reader_sends_what_the_log_holds_in_one_write() -> None:
    store = MemoryStore()
    runs = RunRegistry(store, RunLimits(detached_s=0, replay_s=60, max_events=1000, lease_s=8))
    body = RunAgentInput.model_validate(run_input("Hello there!"))
    route = SimpleNamespace(runtime=SimpleNamespace(route="/any/agent"))  # all a reconnect reads of a pipeline
    keys = RunKeys.of(route.runtime.route, body.thread_id, body.run_id)
    encoder = EventEncoder()
    frames = [encoder.encode(TextMessageContentEvent(message_id="m", delta=str(n))).encode() for n in range(1, 100)]
    frames.append(encoder.encode(RunFinishedEvent(thread_id=body.thread_id, run_id=body.run_id)).encode())
    entries = [(n, (LAST if n == len(frames) else MORE) + frame) for n, frame in enumerate(frames, 1)]
    await store.append(keys.log, entries, max_len=1000, ttl_s=60)
    await store.put(keys.claim, ENDED + b"%d" % len(frames), ttl_s=60)

    writes = [chunk async for chunk in await runs.reconnect(route, body, "", 40)]

    assert writes == [b"".join(b"id: %d\n%s" % (n, frame) for n, frame in enumerate(frames, 1) if n > 40)]


def test_a_reconnect_further_back_than_the_log_keeps_is_told_so() -> None:
    """A finished run keeps its last ``AGUI_REPLAY_MAX_EVENTS`` events (a block more at most): a
    reconnect from within them gets the rest as it went, one from further back RUN_ERROR
    ``REPLAY_INCOMPLETE``, never a stream with a hole in it."""
    keep = 40
    with live_server(Settings(agui_script_delay_ms=0, agui_replay_max_events=keep)) as url:
        route, body = ROUTES[0], run_input("Say this back: " + "the quick brown fox jumps over the lazy dog " * 60)
        whole = post_run(url, route, body)
        assert whole.terminal["type"] == "RUN_FINISHED" and len(whole.events) > 2 * keep + 32, len(whole.events)
        within = len(whole.events) - keep
        assert reconnect(url, route, body, within).events == whole.events[within:]
        early = reconnect(url, route, body, 1)
        assert [e["type"] for e in early.events] == ["RUN_ERROR"], early.raw[:300]
        assert early.terminal["code"] == "REPLAY_INCOMPLETE" and b"id:" not in early.raw
