"""The native latch trips exactly on the routes whose bridge emits SUBAGENT_* itself, live.

Each runtime says whether its bridge emits the subagent surface natively
(``runtimes.base.Runtime.native_subagents``). On a fresh server, two delegation runs per route:

* a route that declares it must see the emitter stand down by itself on the wire
  (``emitters.core.NativeLatch``): the latch is untripped before the first delegation and tripped
  after it (said below warning level: it was declared), and the stream still has exactly one
  SUBAGENT_STARTED per delegation (the stand-down duplicated nothing);
* a route that does not must never trip it. The day an upgraded bridge starts emitting SUBAGENT_*,
  this fails loudly, so the team declares it and deletes the route's dialect on purpose.

Either way the subagent ids follow the emitter's scheme (``<parentToolCallId>-sub``).
"""

from __future__ import annotations

import logging

import pytest

from app.registry import RUNTIMES
from runtimes.base import Runtime
from tests.wire import post_run, run_input, serve


@pytest.mark.parametrize("runtime", RUNTIMES, ids=[runtime.name for runtime in RUNTIMES])
def test_the_emitter_stands_down_exactly_where_the_bridge_emits_subagent_events(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    route = runtime.route
    with caplog.at_level(logging.INFO, logger="agui.emitter"), serve() as server:
        latch = server.pipeline(route).latch
        assert not latch.tripped, "a fresh route starts with its emitter on"
        prompts = ("Research Lisbon", "Compare Lisbon and Porto")
        runs = [post_run(server.base, route, run_input(prompt)) for prompt in prompts]
        tripped = latch.tripped
    said = [r for r in caplog.records if "natively" in r.getMessage() and route in r.getMessage()]
    if runtime.native_subagents:
        assert tripped and said, f"{route} declares native SUBAGENT_* but its emitter never stood down"
        assert all(r.levelno < logging.WARNING for r in said), "declared, standing down is no news"
    else:
        assert not tripped and not said, (
            f"The bridge behind {route} now emits SUBAGENT_* itself: {[r.getMessage() for r in said]}. The emitter "
            "stood down; "
            "declare native_subagents=True, delete its dialect in emitters/ and update docs/matrix.md."
        )
    delegations = (1, 2)
    for run, expected in zip(runs, delegations, strict=True):
        started = run.of_type("SUBAGENT_STARTED")
        assert len(started) == expected, f"{route}: {run.types()}"
        assert len({event["subagentRunId"] for event in started}) == expected
        assert all(event["subagentRunId"] == f"{event['parentToolCallId']}-sub" for event in started)
