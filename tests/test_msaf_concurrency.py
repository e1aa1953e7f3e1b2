"""Concurrent runs on POST /msaf/agent: one shared agent, no state or history shared between threads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.config import Settings
from runtimes import script
from tests.test_msaf_route import final_state, parent_text, run_ok
from tests.wire import Run, live_server, run_input


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=10)) as url:
        yield url


def at_once(*calls: Callable[[], Run]) -> list[Run]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


def overlapped(first: Run, second: Run) -> bool:
    return first.arrival[0] < second.arrival[-1] and second.arrival[0] < first.arrival[-1]


def test_two_threads_delegating_at_once_both_succeed(base: str) -> None:
    lisbon, porto = at_once(
        lambda: run_ok(base, run_input("Research the history of Lisbon")),
        lambda: run_ok(base, run_input("Research the history of Porto")),
    )
    assert overlapped(lisbon, porto), "the two runs should have been in flight together"
    for run, city, other in ((lisbon, "Lisbon", "Porto"), (porto, "Porto", "Lisbon")):
        finding = f"Specialist finding: {script.fact_about(f'the history of {city}')}"
        assert run.text(subagent=True) == finding
        assert finding in parent_text(run)
        assert other not in run.raw.decode(), f"{city}'s stream shows the other thread's content"
        [started] = run.of_type("SUBAGENT_STARTED")
        assert {e["subagentRunId"] for e in run.events if "subagentRunId" in e} == {started["subagentRunId"]}


def test_concurrent_threads_keep_their_own_state(base: str) -> None:
    runs = at_once(
        *(
            (lambda owner=owner: run_ok(base, run_input(f"Make me a recipe for {owner}", state={"owner": owner})))
            for owner in ("soup", "cake", "bread")
        )
    )
    for run, owner in zip(runs, ("soup", "cake", "bread"), strict=True):
        assert final_state(run.events, {"owner": owner}) == {
            "owner": owner,
            "recipe": script.recipe_for(owner),
            "document": "",
        }


def test_history_of_one_thread_is_not_visible_to_another(base: str) -> None:
    secret, other = at_once(
        lambda: run_ok(base, run_input("Hello, my code word is heliotrope")),
        lambda: run_ok(base, run_input("Hello there!")),
    )
    assert "heliotrope" in parent_text(secret)
    assert "heliotrope" not in other.raw.decode()
    later = run_ok(base, run_input("What did I say?"))
    [snapshot] = later.of_type("MESSAGES_SNAPSHOT")
    assert [m["content"] for m in snapshot["messages"] if m["role"] == "user"] == ["What did I say?"]
