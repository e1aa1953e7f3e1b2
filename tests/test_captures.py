"""The committed wire captures (``tests/captures``), replayed on every run.

Each captured thread goes through the protocol's pydantic event models, the Python verifier and
the published ``@ag-ui/client`` (one Node process for all of them), and the two verifiers must
agree. Then the same scenario runs live and its wire shape (event types in order, see
``wire_shape``) must equal the capture's, so a bridge upgrade that changes the wire fails here with
a diff; when the change is intended, ``make captures`` rewrites the captures (and docs/matrix.md)
for review.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.registry import RUNTIMES
from tests.capture import CAPTURES, CapturedThread, capture_name, capture_settings, load_captures, versioned
from tests.npm_client import harness_missing, rejections, run_harness
from tests.wire import EVENT_ADAPTER, live_server, play
from verifier import ThreadVerifier
from verifier.scenarios import SCENARIO_BY_SURFACE, SCENARIOS

THREADS = load_captures()
RUNTIME_BY_NAME = {runtime.name: runtime for runtime in RUNTIMES}
KNOWN_INVALID = {
    f"{runtime.name}/{surface}": why for runtime in RUNTIMES for surface, why in runtime.known.invalid_captures.items()
}
"""Captures an upstream bridge got wrong (declared by its runtime): both verifiers must reject them,
until it is fixed."""
# Chunk counts depend on how a model splits its output; a run of these is one token in a wire shape.
COLLAPSED = {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "REASONING_MESSAGE_CONTENT"}


by_thread = pytest.mark.parametrize("thread", THREADS, ids=[thread.key for thread in THREADS])
CAPTURED = {capture.path: capture for thread in THREADS for capture in thread.turns}


def python_verdict(thread: CapturedThread) -> tuple[list[str], object]:
    """(problems, final state) from the Python verifier, seeded with what the client first sent."""
    first = thread.turns[0].request
    verifier = ThreadVerifier(state=first["state"], messages=first["messages"])
    problems = [f"turn {n}: {p}" for n, events in enumerate(thread.runs, 1) for p in verifier.verify_stream(events)]
    return problems, verifier.state


# --- the captures themselves ------------------------------------------------------------------


def test_every_scenario_is_captured_on_every_runtime_and_nothing_else() -> None:
    """Turn 1 of every scenario exists; turn 2 exists exactly when the client had something to answer."""
    expected: set[Path] = set()
    for runtime in RUNTIMES:
        for scenario in SCENARIOS:
            first = CAPTURES / runtime.name / f"{capture_name(scenario, 1)}.sse"
            expected.add(first)
            if scenario.follow_up and first in CAPTURED:
                capture = CAPTURED[first]
                if scenario.follow_up(capture.request, capture.events):
                    expected.add(CAPTURES / runtime.name / f"{capture_name(scenario, 2)}.sse")
    expected |= {path.with_suffix(".json") for path in expected}
    found = {path for path in CAPTURES.glob("*/*") if path.suffix in (".sse", ".json")}
    assert sorted(map(str, expected - found)) == [], "missing: run `make captures`"
    assert sorted(map(str, found - expected)) == [], "unexpected files in tests/captures"


@by_thread
def test_sidecar_records_the_request_the_date_and_the_versions(thread: CapturedThread) -> None:
    for number, capture in enumerate(thread.turns, 1):
        meta = capture.meta
        assert (meta["runtime"], meta["surface"], meta["turn"]) == (thread.runtime, thread.surface, number)
        assert set(versioned(RUNTIME_BY_NAME[thread.runtime])) <= set(meta["versions"]) and meta["captured"]
        assert capture.request["threadId"] == thread.turns[0].request["threadId"]
        assert capture.events[0]["threadId"] == capture.request["threadId"]


@by_thread
def test_every_event_is_valid_against_the_protocol_models(thread: CapturedThread) -> None:
    for capture in thread.turns:
        for event in capture.events:
            EVENT_ADAPTER.validate_python(event)


@by_thread
def test_python_verifier_accepts_the_thread(thread: CapturedThread) -> None:
    problems, _ = python_verdict(thread)
    if thread.key in KNOWN_INVALID:
        assert problems, f"{thread.key} is valid now ({KNOWN_INVALID[thread.key]}): drop it from KNOWN_INVALID"
    else:
        assert problems == []


# --- the published client ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def npm_reports() -> dict[str, dict]:
    """The client's report on every captured thread, from one Node process."""
    if missing := harness_missing():
        pytest.skip(missing)
    specs = [
        {
            "mode": "replay",
            "runs": t.runs,
            "state": t.turns[0].request["state"],
            "messages": t.turns[0].request["messages"],
        }
        for t in THREADS
    ]
    return dict(zip([t.key for t in THREADS], run_harness(specs), strict=True))


@by_thread
def test_npm_client_and_python_verifier_agree(thread: CapturedThread, npm_reports: dict[str, dict]) -> None:
    report = npm_reports[thread.key]
    python, state = python_verdict(thread)
    npm = rejections(report)
    assert bool(python) == bool(npm), f"python says {python}\nnpm client says {npm}"
    if not python:
        assert report["state"] == state, "the client's state application differs from ours"


# --- the live wire against the capture -----------------------------------------------------------


def _line(event: dict) -> str:
    """An event's type and what identifies its role, never ids or text."""
    kind = event["type"]
    detail = {
        "CUSTOM": event.get("name"),
        "TOOL_CALL_START": event.get("toolCallName"),
        "SUBAGENT_STARTED": event.get("name"),
        "RUN_ERROR": event.get("code"),
        "SUBAGENT_ERROR": event.get("code"),
        "RUN_FINISHED": (event.get("outcome") or {}).get("type"),
        "SUBAGENT_FINISHED": (event.get("outcome") or {}).get("type"),
    }.get(kind)
    return kind + (f" {detail}" if detail else "") + (" +" if kind in COLLAPSED else "")


def wire_shape(events: list[dict]) -> list[str]:
    """One line per event (see ``_line``); a run of content or argument chunks is one line, so a
    model that chunks differently changes nothing.

    Specialists running in parallel interleave by timing, so what a subagent emits inside its run
    is its own lane, listed after the main lane (lanes sorted, ids dropped). The main lane keeps
    the parent's events and every SUBAGENT_* lifecycle event in place, so where a subagent starts
    and finishes relative to the parent's tool call stays compared.
    """
    main: list[str] = []
    lanes: dict[str, list[str]] = {}
    for event in events:
        subagent = event.get("subagentRunId")
        in_lane = subagent is not None and not event["type"].startswith("SUBAGENT_")
        lane = lanes.setdefault(subagent, []) if in_lane else main
        line = _line(event)
        if not (line.endswith(" +") and lane and lane[-1] == line):
            lane.append(line)
    return main + [line for lane in sorted(lanes.values()) for line in ["subagent lane:", *(f"  {x}" for x in lane)]]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(capture_settings()) as url:
        yield url


ROUTES = {runtime.name: runtime.route for runtime in RUNTIMES}


@by_thread
def test_live_wire_has_the_captured_shape(thread: CapturedThread, base: str) -> None:
    fresh = play(base, ROUTES[thread.runtime], SCENARIO_BY_SURFACE[thread.surface])
    diffs = []
    for number in range(max(len(fresh), len(thread.turns))):
        captured = wire_shape(thread.runs[number]) if number < len(thread.turns) else []
        live = wire_shape(fresh[number].run.events) if number < len(fresh) else []
        name = thread.turns[min(number, len(thread.turns) - 1)].path.relative_to(CAPTURES.parent.parent)
        diffs += difflib.unified_diff(
            captured, live, fromfile=f"{name} (turn {number + 1})", tofile="live", lineterm=""
        )
    if diffs:
        pytest.fail(
            "the wire changed; if intended, run `make captures` and review the diff:\n" + "\n".join(diffs),
            pytrace=False,
        )
