"""50 concurrent runs on distinct threads, on every route: nothing crosses between threads, the
per-thread caches stay bounded, and memory comes back to where it was.

Each run carries its own token (``zq000`` .. ``zq049``) in its message and its state (its own
``owner`` and its own state key), and asks for one of five surfaces: a backend tool (a city of
its own), shared state (a dish of its own), a delegation (a topic of its own), predictive state
(a subject of its own) or plain text (a code word of its own). Every stream must pass the
verifier, show only its own token, its own tool results, its own subagent and its own state, and
no id (message, tool call, subagent) may appear in two runs.

The server runs in this process (``tests.hardening_support.inspectable_server``), so "memory
comes back" is measured on objects, not RSS: after a first load (warm-up), the server's live
objects are counted; after a second load of 50 they must be back at that count (allowing a small
slack for interpreter caches), with the Strands per-thread agents at most the configured cache
size and no run object, delegation or task left behind.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import re
from collections import Counter
from collections.abc import Iterator

import httpx
import jsonpatch
import pytest

from app.config import Settings
from emitters.core import SubagentRun
from runtimes import script
from runtimes.msaf.cancel import GatedCall, PendingApprovals
from runtimes.strands.cache import ThreadAgentCache
from tests.hardening_support import ROUTES, STRANDS, Server, arun, inspectable_server
from tests.wire import Run, run_input
from verifier import verify_events, verify_thread

RUNS = 50
CACHE_SIZE = 8
TOKEN = re.compile(rb"zq(\d{3})", re.IGNORECASE)
ID_FIELDS = ("messageId", "toolCallId", "subagentRunId", "parentToolCallId")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    settings = Settings(agui_script_delay_ms=10, agui_thread_cache_size=CACHE_SIZE)
    with inspectable_server(settings) as running:
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


def live_objects(server: Server) -> Counter[str]:
    gc.collect()
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        counts[f"{kind.__module__}.{kind.__qualname__}"] += 1
    counts["<tasks>"] = len(server.tasks())
    return counts


@pytest.mark.parametrize("route", ROUTES)
def test_fifty_concurrent_runs_are_isolated_bounded_and_leave_nothing_behind(server: Server, route: str) -> None:
    warm = asyncio.run(load(server, route))
    check_isolation(warm)
    del warm
    before = live_objects(server)

    runs = asyncio.run(load(server, route))
    check_isolation(runs)
    del runs
    after = live_objects(server)

    runner = server.runner(route)
    if route == STRANDS:
        assert len(runner._agents_by_thread) <= CACHE_SIZE, "the per-thread agent cache outgrew its size"
        assert not runner._active_runs_by_thread
        for name in ("_proxy_tool_names_by_thread", "_pending_interrupts_by_thread", "_last_resume_fingerprint"):
            assert len(getattr(runner, name, {})) <= CACHE_SIZE, name
    else:
        assert not runner._pending_approvals._by_thread
    # Counted process-wide, so compared with before the load (other tests' servers live here too).
    for kind in (
        "strands.agent.agent.Agent",  # the per-thread agents: the cache holds CACHE_SIZE before and after
        "agent_framework._sessions.AgentSession",
        f"{SubagentRun.__module__}.SubagentRun",  # a run's emitter state
        "emitters.strands._Delegation",
        "emitters.msaf._Delegation",
        "<tasks>",  # the server loop's tasks
    ):
        assert after[kind] <= before[kind], f"{kind}: {before[kind]} before the load, {after[kind]} after"
    grown = {kind: after[kind] - before[kind] for kind in after if after[kind] - before[kind] > 50}
    total = sum(after.values()) - sum(before.values())
    print(f"{route}: live objects {sum(before.values())} -> {sum(after.values())} ({total:+d}); grown: {grown}")
    assert total < RUNS * 20, f"{total} more live objects after 50 more runs: {grown}"
    assert not grown, f"object kinds that grew with the load: {grown}"


# --- every per-thread registry is bounded --------------------------------------------------------


def test_the_per_thread_registries_keep_at_most_their_size_most_recent_first() -> None:
    pending = PendingApprovals(max_threads=3)
    for thread in ("t1", "t2", "t3", "t4", "t5"):
        pending.put(thread, {f"{thread}-interrupt": GatedCall(f"{thread}-call", "delete_file", {})})
    assert list(pending._by_thread) == ["t3", "t4", "t5"]
    pending.put("t4", {})  # answered: forgotten at once
    assert list(pending._by_thread) == ["t3", "t5"]


def test_the_thread_cache_drops_idle_threads_before_paused_ones_and_stays_bounded() -> None:
    paused = {"p1", "p2", "p3"}
    running: set[str] = set()
    cache = ThreadAgentCache(
        2, pinned=lambda thread, agent: thread in running, held=lambda thread, agent: thread in paused
    )
    for thread in ("p1", "idle", "p2"):
        running.add(thread)
        cache[thread] = thread.upper()
        running.discard(thread)
        cache.trim()
    assert list(cache) == ["p1", "p2"], "the idle thread goes first, however recent"
    running.add("p3")
    cache["p3"] = "P3"
    assert list(cache) == ["p1", "p2", "p3"], "a paused thread is not dropped for one about to run"
    running.discard("p3")
    cache.trim()
    assert list(cache) == ["p2", "p3"], "once nothing idle is left, the least recently used paused thread goes"


def interrupted_run(base: str, route: str, message: str) -> tuple[dict, Run]:
    body = run_input(message)
    run = asyncio.run(arun(base, route, body))
    assert verify_events(run.events) == [] and run.interrupts(), run.types()
    return body, run


def resume_all(base: str, route: str, body: dict, first: Run) -> Run:
    [*_, snapshot] = first.of_type("MESSAGES_SNAPSHOT")
    history = [*body["messages"], *(m for m in snapshot["messages"] if m["role"] != "user")]
    approve = {"approved": True}
    entries = [{"interruptId": i["id"], "status": "resolved", "payload": approve} for i in first.interrupts()]
    run = asyncio.run(arun(base, route, run_input(thread_id=body["threadId"], messages=history, resume=entries)))
    assert verify_thread([first.events, run.events]) == [], run.types()
    return run


def test_unanswered_approvals_cannot_grow_the_strands_cache() -> None:
    with inspectable_server(Settings(agui_script_delay_ms=1, agui_thread_cache_size=2)) as small:
        runner = small.runner(STRANDS)
        threads = [interrupted_run(small.base, STRANDS, f"delete file{n}.txt") for n in range(3)]
        asyncio.run(arun(small.base, STRANDS, run_input("Hello")))  # an idle thread in between
        assert len(runner._agents_by_thread) == 2
        assert len(runner._pending_interrupts_by_thread) <= 2
        (oldest_body, oldest), _, (newest_body, newest) = threads
        assert oldest_body["threadId"] not in runner._agents_by_thread
        dropped = resume_all(small.base, STRANDS, oldest_body, oldest)
        assert dropped.types() == ["RUN_STARTED", "RUN_ERROR"] and dropped.terminal["code"] == "UNKNOWN_INTERRUPT_ID"
        kept = resume_all(small.base, STRANDS, newest_body, newest)
        assert "Done: Deleted file2.txt." in kept.text()


@pytest.mark.parametrize(
    ("route", "message"), [(STRANDS, "Research old logs and delete logs.txt"), ("/msaf/agent", "delete notes.txt")]
)
def test_an_answered_approval_leaves_nothing_in_the_routes_registries(server: Server, route: str, message: str) -> None:
    runner = server.runner(route)
    registry = runner._pending_interrupts_by_thread if route == STRANDS else runner._pending_approvals._by_thread
    body, first = interrupted_run(server.base, route, message)
    assert body["threadId"] in registry
    answered = resume_all(server.base, route, body, first)
    assert answered.terminal["type"] == "RUN_FINISHED" and not answered.interrupts()
    assert body["threadId"] not in registry
