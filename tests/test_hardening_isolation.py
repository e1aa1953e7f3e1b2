"""50 concurrent runs on distinct threads, on every route: nothing crosses between threads, the
per-thread caches stay bounded, and memory comes back to where it was.

Each run carries its own token (``zq000`` .. ``zq049``) in its message and its state (its own
``owner`` and its own state key), and asks for one of five surfaces: a backend tool (a city of
its own), shared state (a dish of its own), a delegation (a topic of its own), predictive state
(a subject of its own) or plain text (a code word of its own). Every stream must pass the
verifier, show only its own token, its own tool results, its own subagent and its own state, and
no id (message, tool call, subagent) may appear in two runs.

The server runs in this process (``tests.wire.serve``), so "memory comes back" is measured on
objects, not RSS: after a first load (warm-up), the server's live objects are counted on its own
loop; after a second load of 50, once the loop has settled, no kind of object may have grown with
the load (a per-run leak grows by one per run), no run object, delegation or task may be left
behind, and what each bridge keeps per thread (``held_threads``) is at most the configured cache.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import re
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import jsonpatch
import pytest

from app.config import Settings
from app.pump import Pump
from emitters.core import SubagentRun
from emitters.delegation import Delegation
from runtimes import script
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, Run, Server, arun, run_input, serve
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume

RUNS = 50
CACHE_SIZE = 8
TOKEN = re.compile(rb"zq(\d{3})", re.IGNORECASE)
ID_FIELDS = ("messageId", "toolCallId", "subagentRunId", "parentToolCallId")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    # Paced so that each run lasts long enough for the fifty to overlap, even on a busy machine.
    # Replay logs kept 1 s: once they expire, nothing of a run may remain.
    settings = Settings(agui_script_delay_ms=40, agui_thread_cache_size=CACHE_SIZE, agui_replay_s=1)
    with serve(settings) as running:
        yield running


def token(i: int) -> str:
    return f"zq{i:03d}"


MESSAGES = (
    "What's the weather in {t}ville?",
    "Make me a recipe for {t}cake",
    "Research the history of {t}land",
    "Write a story about {t}dragons",
    "Hello, my code word is {t}word",
)


def body_for(i: int) -> dict:
    t = token(i)
    return run_input(MESSAGES[i % len(MESSAGES)].format(t=t), state={"owner": f"{t}owner", f"key_{t}": i})


async def load(server: Server, route: str) -> list[Run]:
    limits = httpx.Limits(max_connections=RUNS + 5, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        runs = [arun(server.base, route, body_for(i), client=client, deadline_s=180) for i in range(RUNS)]
        return await asyncio.wait_for(asyncio.gather(*runs), timeout=240)


def final_state(run: Run) -> dict:
    """The state a client ends with: snapshots replace, deltas apply as RFC 6902 patches."""
    state: dict = {}
    for event in run.events:
        if event["type"] == "STATE_SNAPSHOT":
            state = copy.deepcopy(event["snapshot"])
        elif event["type"] == "STATE_DELTA":
            state = jsonpatch.apply_patch(state, event["delta"], in_place=False)
    return state


def ids_of(run: Run) -> set[str]:
    found = {str(event[name]) for event in run.events for name in ID_FIELDS if event.get(name)}
    for snapshot in run.of_type("MESSAGES_SNAPSHOT"):
        for message in snapshot["messages"]:
            found.add(str(message["id"]))
            found.update(str(call["id"]) for call in message.get("toolCalls") or [])
    return found


def check_own_content(i: int, run: Run) -> None:
    """The run shows its own token only, and the surface it asked for, with its own values."""
    t = token(i)
    assert run.status == 200, run.raw
    assert verify_events(run.events) == [], (i, run.types())
    assert run.terminal["type"] == "RUN_FINISHED", (i, run.terminal)
    assert {int(n) for n in TOKEN.findall(run.raw)} == {i}, f"run {i} shows another run's token"
    state = final_state(run)
    assert state["owner"] == f"{t}owner" and state[f"key_{t}"] == i, (i, state)
    assert not [key for key in state if key.startswith("key_") and key != f"key_{t}"], (i, state)
    kind = i % len(MESSAGES)
    if kind == 0:
        [result] = run.of_type("TOOL_CALL_RESULT")
        report = json.loads(result["content"])
        report = json.loads(report) if isinstance(report, str) else report  # Strands quotes it once more
        assert report == script.weather_report(f"{t}ville")
    elif kind == 1:
        assert state["recipe"]["title"] == f"{t}cake".capitalize()
    elif kind == 2:
        [started] = run.of_type("SUBAGENT_STARTED")
        attributed = {event["subagentRunId"] for event in run.events if "subagentRunId" in event}
        assert attributed == {started["subagentRunId"]}
        assert script.fact_about(f"the history of {t}land") in run.text(subagent=True)
    elif kind == 3:
        assert state["document"] == script.document_about(f"{t}dragons")
    else:
        assert f"{t}word" in run.text()
    if kind != 2:
        assert not run.of_type("SUBAGENT_STARTED")


def check_isolation(runs: list[Run]) -> None:
    for i, run in enumerate(runs):
        check_own_content(i, run)
    owners: dict[str, int] = {}
    for i, run in enumerate(runs):
        for item in ids_of(run):
            assert owners.setdefault(item, i) == i, f"id {item!r} appears in runs {owners[item]} and {i}"
    # They really ran side by side: at some moment most of them were streaming at once.
    spans = [(run.arrival[0], run.arrival[-1]) for run in runs]
    peak = max(sum(start <= moment <= end for start, end in spans) for moment, _ in spans)
    assert peak >= RUNS // 2, f"only {peak} runs were in flight together"
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    print(f"{RUNS} runs isolated; {peak} in flight together; {wall:.2f} s")


def live_objects() -> Counter[str]:
    """Live objects by kind (call it on the server's loop, so the count is of a quiet moment)."""
    gc.collect()
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        counts[f"{kind.__module__}.{kind.__qualname__}"] += 1
    counts["<tasks>"] = len(asyncio.all_tasks()) - 1
    return counts


RUN_SCOPED = tuple(f"{kind.__module__}.{kind.__qualname__}" for kind in (SubagentRun, Delegation, Pump)) + ("<tasks>",)
"""Kinds that live exactly as long as a run: none may be left once the server has settled."""


def leftovers(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    """What the load left behind: any run-scoped object, or any kind grown by half a load or more
    (something kept per run)."""
    grown = {kind: after[kind] - before[kind] for kind in after if after[kind] - before[kind] >= RUNS // 2}
    kept = {kind: after[kind] - before[kind] for kind in RUN_SCOPED if after[kind] > before[kind]}
    return grown | kept


def settled_leftovers(server: Server, before: Counter[str], within_s: float = 15) -> dict[str, int]:
    """:func:`leftovers`, once the server's loop has settled (polled, with a deadline)."""
    deadline = time.monotonic() + within_s
    while True:
        left = leftovers(before, server.on_loop(live_objects, timeout_s=60))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


@pytest.mark.parametrize("route", ROUTES)
def test_fifty_concurrent_runs_are_isolated_bounded_and_leave_nothing_behind(server: Server, route: str) -> None:
    asyncio.run(arun(server.base, route, run_input("Hello")))  # the server has served a request: its loop is known
    idle = len(server.tasks())
    warm = asyncio.run(load(server, route))
    check_isolation(warm)
    del warm
    server.settle(idle, within_s=15)
    before = server.on_loop(live_objects, timeout_s=60)

    runs = asyncio.run(load(server, route))
    check_isolation(runs)
    del runs
    left = settled_leftovers(server, before)
    assert not left, f"the load left objects behind: {left}"

    held = server.on_loop(lambda: server.pipeline(route).bridge.held_threads())
    assert len(held.cached) <= CACHE_SIZE, "the per-thread cache outgrew its size"
    assert not held.running and not held.paused, held


def interrupted_run(base: str, route: str, message: str) -> tuple[dict, Run]:
    body = run_input(message)
    run = asyncio.run(arun(base, route, body))
    assert verify_events(run.events) == [] and run.interrupts(), run.types()
    return body, run


def resume_all(base: str, route: str, body: dict, first: Run) -> Run:
    entries = resume(first.interrupts(), payload={"approved": True})
    answer = run_input(thread_id=body["threadId"], messages=history_after(body, first.events), resume=entries)
    run = asyncio.run(arun(base, route, answer))
    assert verify_thread([first.events, run.events]) == [], run.types()
    return run


SUBAGENT_APPROVAL = "Research old logs and delete logs.txt"


APPROVALS = [
    (route, message)
    for route in ROUTES
    for message in ("delete notes.txt", SUBAGENT_APPROVAL)
    # where a runtime cannot suspend a subagent (a declared gap), there is nothing to answer
    if not (message == SUBAGENT_APPROVAL and RUNTIME_BY_ROUTE[route].known.gap("subagent suspended"))
]


@pytest.mark.parametrize(("route", "message"), APPROVALS)
def test_an_answered_approval_leaves_nothing_held_for_its_thread(server: Server, route: str, message: str) -> None:
    paused = lambda: server.on_loop(lambda: server.pipeline(route).bridge.held_threads().paused)  # noqa: E731
    body, first = interrupted_run(server.base, route, message)
    assert body["threadId"] in paused()
    answered = resume_all(server.base, route, body, first)
    assert answered.terminal["type"] == "RUN_FINISHED" and not answered.interrupts()
    assert body["threadId"] not in paused()
