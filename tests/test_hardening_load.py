"""One request must never stall everyone: the most expensive request the limits allow, sent while
another stream is being read, leaves that stream's events arriving at their own pace.

The upstream frameworks do work per message and per tool on the event loop (Strands deep-copies
the history on every model call; one request with 20,000 tools once stalled the server for a
minute). The request guard's limits (``AGUI_MAX_MESSAGES``, ``AGUI_MAX_TOOLS``,
``AGUI_MAX_TOOLS_BYTES``) bound that work; this measures the bound from frame timing.
"""

from __future__ import annotations

import asyncio
import json

from app.config import Settings
from tests.wire import ROUTES, arun, run_input, serve

PACE_MS = 100
STALL_LIMIT_S = 2.0
"""The most any gap between two of the watched stream's events may exceed its pacing by. Measured
well under it on a loaded 2-core machine; the stalls this guards against were 3 to 60 s."""


def most_expensive(settings: Settings) -> dict:
    """A request at every limit at once: the most messages, the most tools, the largest schemas."""
    history = [
        {"id": f"m{n}", "role": "user" if n % 2 == 0 else "assistant", "content": "hello there " * 10}
        for n in range(settings.agui_max_messages - 1)
    ]
    tools = [
        {"name": f"tool_{n}", "description": "", "parameters": {"type": "object", "properties": {}}}
        for n in range(settings.agui_max_tools)
    ]
    size = len(json.dumps(tools, separators=(",", ":")))
    spare = (settings.agui_max_tools_bytes - size) // len(tools)
    for tool in tools:
        tool["description"] = "d" * spare
    return run_input("Hello there!", messages=history, tools=tools)


async def watched_gaps(base: str, route: str, heavy: dict) -> list[float]:
    """Read a paced stream on ``route`` while ``heavy`` goes to every route; the gaps between the
    watched stream's events, in seconds."""
    watched = asyncio.create_task(arun(base, route, run_input("Write a story about lighthouses"), deadline_s=120))
    while not watched.done():
        for other in ROUTES:
            fresh = run_input()  # a new thread and run each time: a runId names one run
            body = {**heavy, "threadId": fresh["threadId"], "runId": fresh["runId"]}
            assert (await arun(base, other, body, deadline_s=120)).terminal["type"] == "RUN_FINISHED"
    run = await watched
    assert run.terminal["type"] == "RUN_FINISHED"
    return [later - earlier for earlier, later in zip(run.arrival, run.arrival[1:], strict=False)]


def test_the_most_expensive_allowed_request_does_not_stall_another_stream() -> None:
    settings = Settings(agui_script_delay_ms=PACE_MS)
    heavy = most_expensive(settings)
    with serve(settings) as server:
        for route in ROUTES:
            gaps = asyncio.run(watched_gaps(server.base, route, heavy))
            worst = max(gaps) - PACE_MS / 1000
            print(f"{route}: worst gap over the pacing {worst * 1000:.0f} ms over {len(gaps)} gaps")
            assert worst < STALL_LIMIT_S, f"{route}: a stream stalled {worst:.2f} s behind another request"
