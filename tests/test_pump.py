"""The pump's turns (``app.pump``): how many events a run may produce per pass of the event loop.

A source that never waits on I/O (the unpaced offline model) is what makes this matter: the pump
then runs up to ``AHEAD`` events in one step, unless some run is starting, when it takes one; and
all the pumps together take about ``PASS_EVENTS`` per pass, each in its turn.
Counted in loop passes, not in time, so the assertions hold however busy the machine is.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
from collections.abc import AsyncIterator

from ag_ui.core import BaseEvent, TextMessageContentEvent

from app.pump import AHEAD, PASS_EVENTS, Pump, run_starting

PASSES = 4


class Source:
    """A run's events with no await between them; counts how many it has produced."""

    def __init__(self) -> None:
        self.produced = 0

    async def events(self) -> AsyncIterator[BaseEvent]:
        while True:
            self.produced += 1
            yield TextMessageContentEvent(message_id="m", delta="x")


async def produced_after_first_event(passes: int) -> int:
    """Start a pump, take its first event, give the loop ``passes`` passes, and count the events
    produced since (waiting for the client to take them)."""
    source = Source()
    drained = Pump().drain(source.events())
    try:
        await anext(drained)
        for _ in range(passes):
            await asyncio.sleep(0)
        return source.produced - 1
    finally:
        await drained.aclose()


async def test_a_run_in_flight_runs_ahead_in_one_step_when_nobody_is_starting() -> None:
    assert await produced_after_first_event(PASSES) == AHEAD


async def test_while_a_run_is_starting_every_pump_takes_one_event_per_pass() -> None:
    starting = run_starting()
    try:
        assert await produced_after_first_event(PASSES) <= PASSES
    finally:
        starting.done()
    assert await produced_after_first_event(PASSES) == AHEAD  # done: full steps again


async def test_a_start_nobody_holds_any_more_stops_counting() -> None:
    run_starting()  # a response that never began: its token is dropped, never marked done
    gc.collect()
    assert await produced_after_first_event(PASSES) == AHEAD


async def test_many_runs_in_flight_share_each_pass_and_all_get_their_turns() -> None:
    """With every pump taking a full step each pass, 16 runs would take 16 x AHEAD events in the
    pass after their first events, and their clients would get nothing before all of it was made."""
    sources = [Source() for _ in range(4 * PASS_EVENTS // AHEAD)]
    drained = [Pump().drain(source.events()) for source in sources]
    try:
        for events in drained:
            await anext(events)  # each run has started; nobody takes more, so each stops AHEAD on
        produced = [sum(source.produced for source in sources)]
        for _ in range(2 * len(sources)):
            await asyncio.sleep(0)
            produced.append(sum(source.produced for source in sources))
        passes = [after - before for before, after in itertools.pairwise(produced)]
        # A pass is the callbacks between two of this task's turns: the tail of one loop iteration
        # and the head of the next, so up to two passes' worth, never all of it.
        assert max(passes) <= 2 * PASS_EVENTS, passes
        assert all(source.produced == 1 + AHEAD for source in sources), [s.produced for s in sources]
    finally:
        for events in drained:
            await events.aclose()
