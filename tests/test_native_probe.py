"""Fails loudly the day an installed bridge starts emitting SUBAGENT_* by itself.

The emitter would stand down on its own (``emitters.core.NativeLatch``), but the team should
hear about it on the day of the upgrade and delete the dialect on purpose.
"""

from __future__ import annotations

import logging

import pytest

from app.registry import RUNTIMES
from tests.wire import live_server, post_run, run_input


@pytest.mark.parametrize("route", [runtime.route for runtime in RUNTIMES])
def test_bridges_do_not_emit_subagent_events_natively(route: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agui.emitter"), live_server() as base:
        runs = [post_run(base, route, run_input(prompt)) for prompt in ("Research Lisbon", "Compare Lisbon and Porto")]
    native = [r.getMessage() for r in caplog.records if "natively" in r.getMessage()]
    assert not native, (
        f"The bridge behind {route} now emits SUBAGENT_* itself: {native}. The emitter stood down; "
        "delete its dialect in emitters/ and update docs/matrix.md."
    )
    for run in runs:
        started = run.of_type("SUBAGENT_STARTED")
        assert started, f"no delegation on {route}: {run.types()}"
        assert all(event["subagentRunId"] == f"{event['parentToolCallId']}-sub" for event in started)
