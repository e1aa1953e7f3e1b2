"""The subagent emitter is only the subagent emitter: standing it down changes nothing else.

Every surface of every route runs twice, on two servers: as shipped, and with each route's
native latch tripped (what happens the day a bridge emits SUBAGENT_* itself: the emitter passes
the bridge's stream through and the dialects stop translating). Take the first run's stream,
remove the SUBAGENT_* events and everything attributed to a subagent (the specialist's content,
which only the dialect puts on the wire), and it must be the second run's stream: the same
events, in the same order, the same parent text, the same terminal outcome. Ids and timestamps
differ between any two runs and are not compared.

One more thing is the emitter's, by design (``emitters.core``): a bridge that holds a delegating
call's TOOL_CALL_END back until its result gets that END sent when the subagent starts, so the
subagent never nests inside a call still open on the wire. So TOOL_CALL_END is compared by count,
not position.

On a route whose bridge emits SUBAGENT_* itself (``Runtime.native_subagents``), the shipped
server's emitter stands down live on the first delegation, so nothing is removed: both streams must
be the same throughout, the subagents' own streams included (each compared on its own, since two
parallel specialists interleave as timing has it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.config import Settings
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, Server, play, serve
from verifier.scenarios import SCENARIOS, Scenario

SUBAGENT_TYPES = {"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"}
DELEGATING = {"subagent", "parallel_subagents", "subagent_approval"}


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Server, Server]]:
    settings = Settings(agui_script_delay_ms=0)
    with serve(settings) as shipped, serve(settings) as stood_down:
        for route in ROUTES:
            stood_down.pipeline(route).latch.tripped = True
        yield shipped, stood_down


def parent_view(events: list[dict]) -> tuple[list[tuple[str, object]], int]:
    """A stream with the emitter's work removed, as (type, what matters) per event, and its
    number of TOOL_CALL_END events (compared by count: see the module's docstring)."""
    view = []
    ends = 0
    for event in events:
        if event["type"] in SUBAGENT_TYPES or "subagentRunId" in event:
            continue
        if event["type"] == "TOOL_CALL_END":
            ends += 1
            continue
        view.append((event["type"], detail(event)))
    return view, ends


def detail(event: dict) -> object:
    """What matters about one event, beyond its type (never an id)."""
    if event["type"] == "TEXT_MESSAGE_CONTENT":
        return event["delta"]
    if event["type"] == "TOOL_CALL_START":
        return event["toolCallName"]
    if event["type"] in {"RUN_FINISHED", "RUN_ERROR", "SUBAGENT_FINISHED"}:
        return (event.get("outcome") or {}).get("type") or event.get("code")
    if event["type"] == "SUBAGENT_STARTED":
        return event["name"]
    return None


def subagent_views(events: list[dict]) -> list[list[tuple[str, object]]]:
    """Each subagent's own stream (its lifecycle and everything attributed to it), in the order of
    the parent tool calls that started them."""
    calls = [event["toolCallId"] for event in events if event["type"] == "TOOL_CALL_START"]
    parents = {e["subagentRunId"]: e["parentToolCallId"] for e in events if e["type"] == "SUBAGENT_STARTED"}
    order = sorted(parents, key=lambda sub: calls.index(parents[sub]))
    return [[(e["type"], detail(e)) for e in events if e.get("subagentRunId") == sub] for sub in order]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.surface for scenario in SCENARIOS])
def test_standing_the_emitter_down_changes_nothing_but_subagent_events(
    servers: tuple[Server, Server], route: str, scenario: Scenario
) -> None:
    shipped, stood_down = servers
    native = RUNTIME_BY_ROUTE[route].native_subagents
    with_emitter = play(shipped.base, route, scenario)
    without = play(stood_down.base, route, scenario)
    assert len(with_emitter) == len(without)
    for ours, theirs in zip(with_emitter, without, strict=True):
        if native:
            assert subagent_views(ours.run.events) == subagent_views(theirs.run.events)
        else:
            assert not [e for e in theirs.run.events if e["type"] in SUBAGENT_TYPES or "subagentRunId" in e]
        assert parent_view(ours.run.events) == parent_view(theirs.run.events)
    if scenario.surface in DELEGATING:  # the comparison had something to remove
        assert any(e["type"] in SUBAGENT_TYPES for exchange in with_emitter for e in exchange.run.events)
