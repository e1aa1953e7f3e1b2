"""Timing on ``POST /strands/agent``: subagent events are live, threads run side by side, and one
thread's state never reaches another. The scripted model is slowed down (40 ms between chunks) so
that overlap and arrival order are measurable. (A busy thread's refusal and keepalive comments are
tested on every route: tests/test_bad_input.py, tests/test_hardening_app.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.config import Settings
from runtimes.script import fact_about
from tests.wire import Run, live_server, post_run, run_input
from verifier import verify_events

ROUTE = "/strands/agent"
DELAY_S = 0.04


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=DELAY_S * 1000)) as url:
        yield url


def run(base: str, message: str, **body: object) -> Run:
    result = post_run(base, ROUTE, run_input(message, **body))
    assert verify_events(result.events) == []
    return result


def test_subagent_events_arrive_while_the_specialist_runs(base: str) -> None:
    result = run(base, "Research the history of Lisbon")
    (started,) = result.of_type("SUBAGENT_STARTED")
    delegation = started["parentToolCallId"]
    contents = [
        i
        for i, e in enumerate(result.events)
        if e["type"] == "TEXT_MESSAGE_CONTENT" and e.get("subagentRunId") == started["subagentRunId"]
    ]
    parent_result = next(
        i for i, e in enumerate(result.events) if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == delegation
    )
    assert len(contents) >= 4
    # Each specialist chunk reached the client about one model delay after the previous one, and
    # the first long before the specialist finished: streamed, not buffered until the end.
    arrival = result.arrival
    assert arrival[contents[-1]] - arrival[contents[0]] >= (len(contents) - 1) * DELAY_S * 0.8
    assert arrival[parent_result] - arrival[contents[0]] >= (len(contents) - 1) * DELAY_S * 0.8
    assert arrival[result.types().index("SUBAGENT_STARTED")] < arrival[contents[0]]


def test_two_threads_delegating_at_once_both_succeed_with_their_own_findings(base: str) -> None:
    topics = ("Lisbon", "Porto")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda topic: run(base, f"Research {topic}"), topics))
    for topic, other, result in zip(topics, reversed(topics), results, strict=True):
        assert result.terminal["type"] == "RUN_FINISHED"
        assert fact_about(topic) in result.text(subagent=True) and other not in result.text()
    first, second = results
    assert first.arrival[0] < second.arrival[-1] and second.arrival[0] < first.arrival[-1]  # they overlapped


def test_no_state_of_one_thread_is_visible_to_another(base: str) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        chef = pool.submit(run, base, "Make me a recipe for soup", state={"owner": "chef"})
        guest = pool.submit(run, base, "Hello", state={"owner": "guest"})
        chef_run, guest_run = chef.result(), guest.result()
    assert [e["snapshot"] for e in guest_run.of_type("STATE_SNAPSHOT")] == [{"owner": "guest"}] * 2
    assert all(e["snapshot"]["owner"] == "chef" for e in chef_run.of_type("STATE_SNAPSHOT"))
    assert chef_run.of_type("STATE_SNAPSHOT")[-1]["snapshot"]["recipe"]["title"] == "Soup"
    later = run(base, "Hello")  # a new thread starts from its own (empty) state
    assert [e["snapshot"] for e in later.of_type("STATE_SNAPSHOT")] == [{}, {}]
