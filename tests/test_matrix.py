"""docs/matrix.md is current, every gap has a recorded cause, and the predicates can say no.

The matrix is regenerated in memory from the committed captures; a stale page fails with a diff
(``make matrix`` rewrites it). The predicate tests break a real capture in one specific way and
expect the verdict to drop, so a predicate that always says yes cannot hide behind the page.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable

import pytest

from app.registry import RUNTIMES
from tests.capture import Capture, CapturedThread, load_captures
from tests.matrix import CAUSES, MATRIX, compute, render
from verifier.surfaces import (
    YES,
    approval,
    frontend_tool,
    judge,
    predictive_state,
    shared_state,
    streamed_text,
    subagent_suspended,
    subagents_live,
)

THREADS = {thread.key: thread for thread in load_captures()}
NAMES = [runtime.name for runtime in RUNTIMES]


def a_yes(surface: str, predicate: Callable[[CapturedThread], object]) -> CapturedThread:
    """A committed capture of ``surface`` that ``predicate`` judges yes, from whichever runtime has one."""
    return next(
        thread for thread in THREADS.values() if thread.surface == surface and predicate(thread).status == "yes"
    )


def test_committed_matrix_is_current() -> None:
    fresh, committed = render(list(THREADS.values())), MATRIX.read_text()
    if fresh != committed:
        diff = difflib.unified_diff(
            committed.splitlines(), fresh.splitlines(), "docs/matrix.md", "from the captures", lineterm=""
        )
        pytest.fail("docs/matrix.md is stale: run `make matrix`\n" + "\n".join(diff), pytrace=False)


def test_no_gap_is_left_to_this_project() -> None:
    """The issue's bar: a gap is the protocol's or upstream's, with its reason, or it gets fixed."""
    cells = compute(list(THREADS.values()))
    unexplained = [
        (c.runtime, c.surface.title, c.observed) for c in cells if c.cause and c.cause.kind == "this project"
    ]
    assert unexplained == [], "record the cause in tests/matrix.py CAUSES, or fix the server"


def test_every_recorded_cause_still_explains_a_gap() -> None:
    gaps = {(c.runtime, c.surface.title) for c in compute(list(THREADS.values())) if c.status != "yes"}
    assert set(CAUSES) - gaps == set(), "this cell is yes now: delete its cause from tests/matrix.py"


# --- the predicates say no when the wire is broken ----------------------------------------------


def rewritten(thread: CapturedThread, change: Callable[[int, list[dict]], list[dict]]) -> CapturedThread:
    """``thread`` with each turn's events replaced by ``change(turn_index, events)``."""
    turns = []
    for index, capture in enumerate(thread.turns):
        events = change(index, [dict(event) for event in capture.events])
        raw = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
        turns.append(Capture(path=capture.path, raw=raw, meta=capture.meta))
    return CapturedThread(thread.runtime, thread.surface, turns)


def without(*kinds: str) -> Callable[[int, list[dict]], list[dict]]:
    return lambda _, events: [event for event in events if event["type"] not in kinds]


@pytest.mark.parametrize("runtime", NAMES)
def test_unattributed_or_missing_subagent_events_are_not_live(runtime: str) -> None:
    thread = THREADS[f"{runtime}/subagent"]
    assert subagents_live(thread).status == "yes"

    def unattributed(_: int, events: list[dict]) -> list[dict]:
        return [
            {k: v for k, v in e.items() if k != "subagentRunId" or e["type"].startswith("SUBAGENT_")} for e in events
        ]

    assert subagents_live(rewritten(thread, unattributed)).status == "partial"
    subagent_kinds = ("SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR")
    assert subagents_live(rewritten(thread, without(*subagent_kinds))).status == "no"


@pytest.mark.parametrize("runtime", NAMES)
def test_a_document_that_only_arrives_at_the_end_is_not_predicted(runtime: str) -> None:
    thread = THREADS[f"{runtime}/predictive_state"]
    assert predictive_state(thread).status == "yes"

    def unpredicted(_: int, events: list[dict]) -> list[dict]:
        return [e for e in events if e["type"] != "STATE_DELTA" and e.get("name") != "PredictState"]

    assert predictive_state(rewritten(thread, unpredicted)).status == "partial"


@pytest.mark.parametrize("runtime", NAMES)
def test_a_snapshot_that_drops_a_sibling_key_is_partial_shared_state(runtime: str) -> None:
    """What a bridge that emits only the hook's keys would send (ag-ui-strands 0.4.1 does, without
    its route's complete_snapshots stage)."""
    thread = THREADS[f"{runtime}/shared_state"]
    assert shared_state(thread).status == "yes"

    def partial_snapshots(_: int, events: list[dict]) -> list[dict]:
        return [
            {**e, "snapshot": {"recipe": e["snapshot"]["recipe"]}}
            if e["type"] == "STATE_SNAPSHOT" and "recipe" in e["snapshot"]
            else e
            for e in events
        ]

    assert shared_state(rewritten(thread, partial_snapshots)).status == "partial"


def test_a_resume_that_runs_a_rejected_call_is_not_approval() -> None:
    thread = a_yes("approval_rejected", approval)

    def ran_anyway(turn: int, events: list[dict]) -> list[dict]:
        if turn == 0:
            return events
        return [{**e, "content": "Deleted notes.txt."} if e["type"] == "TOOL_CALL_RESULT" else e for e in events]

    assert approval(rewritten(thread, ran_anyway)).status == "partial"
    no_interrupt = rewritten(thread, lambda _, events: [*events[:-1], {**events[-1], "outcome": {"type": "success"}}])
    assert approval(no_interrupt).status == "no"


def test_a_server_that_runs_the_clients_tool_is_not_a_frontend_tool() -> None:
    thread = a_yes("frontend_tool", frontend_tool)
    first = thread.runs[0]
    call_id = next(e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_START")
    result = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": call_id, "content": "ran on the server"}
    ran = rewritten(thread, lambda turn, events: [*events[:-1], result, events[-1]] if turn == 0 else events)
    assert frontend_tool(ran).status == "partial"


def test_one_chunk_is_not_streamed_text() -> None:
    thread = a_yes("text", streamed_text)

    def one_chunk(_: int, events: list[dict]) -> list[dict]:
        contents = [e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
        whole = {**contents[0], "delta": "".join(e["delta"] for e in contents)}
        kept = [e for e in events if e["type"] != "TEXT_MESSAGE_CONTENT"]
        start = next(i for i, e in enumerate(kept) if e["type"] == "TEXT_MESSAGE_START")
        return [*kept[: start + 1], whole, *kept[start + 1 :]]

    assert streamed_text(rewritten(thread, one_chunk)).status == "partial"


def test_a_suspension_without_continuation_is_partial() -> None:
    thread = a_yes("subagent_approval", subagent_suspended)
    first_turn_only = CapturedThread(thread.runtime, thread.surface, thread.turns[:1])
    assert subagent_suspended(first_turn_only).status == "partial"


def test_an_invalid_stream_is_at_most_partial() -> None:
    thread = next(thread for thread in THREADS.values() if thread.surface == "backend_tool")
    assert judge(thread, lambda _: YES).status == "yes"
    verdict = judge(rewritten(thread, without("TOOL_CALL_START")), lambda _: YES)
    assert verdict.status == "partial" and "invalid stream" in verdict.observed
