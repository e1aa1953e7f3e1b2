"""The pump (``app.pump``): what each run delivers per pass of the event loop, and in what order.

A source that never waits on I/O (the unpaced offline model) is what makes the turns matter: the
pump then takes ``AHEAD`` events per step of the loop, unless some run is starting, when it takes
one; and all the pumps together take about ``PASS_EVENTS`` per pass, each in its turn. Counted in
loop passes, not in time, so the assertions hold however busy the machine is.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
from collections.abc import AsyncIterator

from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent, TextMessageContentEvent

from app.pump import AHEAD, PASS_EVENTS, Pump, run_starting
from runtimes.base import TERMINAL

PASSES = 4


class Delivered:
    """What a pump delivers (its ``deliver``), and its ``finish``."""

    def __init__(self) -> None:
        self.events: list[BaseEvent] = []
        self.finished = asyncio.Event()

    def deliver(self, event: BaseEvent) -> bool:
        self.events.append(event)
        return event.type in TERMINAL

    async def finish(self) -> None:
        self.finished.set()

    async def ended(self) -> None:
        await asyncio.wait_for(self.finished.wait(), timeout=5)


class Run:
    """An endless run with no await between its events, through a pump; counts what it delivers."""

    def __init__(self) -> None:
        self.delivered: list[BaseEvent] = []
        self.closed = asyncio.Event()  # the source was closed
        self.finished = asyncio.Event()  # the pump's ``finish`` ran
        self.closed_before_finish = False
        self.pump = Pump(self._deliver)
        self.pump.start(self._events(), self._finish)

    async def _events(self) -> AsyncIterator[BaseEvent]:
        try:
            while True:
                yield TextMessageContentEvent(message_id="m", delta="x")
        finally:
            self.closed.set()

    def _deliver(self, event: BaseEvent) -> bool:
        self.delivered.append(event)
        return event.type in TERMINAL

    async def _finish(self) -> None:
        self.closed_before_finish = self.closed.is_set()
        self.finished.set()

    async def first_event(self) -> None:
        while not self.delivered:
            await asyncio.sleep(0)

    async def stop(self) -> None:
        self.pump.stop()
        await asyncio.wait_for(self.finished.wait(), timeout=5)


async def delivered_per_pass(runs: list[Run], passes: int) -> list[int]:
    """Once every run has delivered its first event: what they deliver together in each of
    ``passes`` passes of the loop (as this task sees them)."""
    for run in runs:
        await run.first_event()
    counts = [sum(len(run.delivered) for run in runs)]
    for _ in range(passes):
        await asyncio.sleep(0)
        counts.append(sum(len(run.delivered) for run in runs))
    return [after - before for before, after in itertools.pairwise(counts)]


async def test_a_run_in_flight_takes_full_steps_when_nobody_is_starting() -> None:
    run = Run()
    try:
        assert (await delivered_per_pass([run], PASSES))[1:] == [AHEAD] * (PASSES - 1)
    finally:
        await run.stop()


async def test_while_a_run_is_starting_every_pump_takes_one_event_per_pass() -> None:
    starting = run_starting()
    run = Run()
    try:
        assert max(await delivered_per_pass([run], PASSES)) <= 1
        starting.done()
        assert max(await delivered_per_pass([run], PASSES)) == AHEAD  # done: full steps again
    finally:
        starting.done()
        await run.stop()


async def test_a_start_nobody_holds_any_more_stops_counting() -> None:
    run_starting()  # a response that never began: its token is dropped, never marked done
    gc.collect()
    run = Run()
    try:
        assert max(await delivered_per_pass([run], PASSES)) == AHEAD
    finally:
        await run.stop()


async def test_many_runs_in_flight_share_each_pass_and_all_get_their_turns() -> None:
    """With every pump taking a full step each pass, 16 runs would take 16 x AHEAD events per
    pass, and the readers would have nothing to send until all of it was made."""
    runs = [Run() for _ in range(4 * PASS_EVENTS // AHEAD)]
    try:
        await delivered_per_pass(runs, 1)
        before = [len(run.delivered) for run in runs]
        passes = await delivered_per_pass(runs, 2 * len(runs))
        # A pass is the callbacks between two of this task's turns: the tail of one loop iteration
        # and the head of the next, so up to two passes' worth, never all of it.
        assert max(passes) <= 2 * PASS_EVENTS, passes
        assert all(len(run.delivered) - was >= AHEAD for run, was in zip(runs, before, strict=True))
    finally:
        for run in runs:
            await run.stop()


async def test_stop_delivers_nothing_more_and_finishes_after_the_source_is_closed() -> None:
    run = Run()
    await run.first_event()
    await run.stop()
    delivered = len(run.delivered)
    await asyncio.sleep(0)
    assert len(run.delivered) == delivered
    assert run.closed_before_finish


async def test_a_deadline_closes_what_is_open_then_ends_the_run() -> None:
    opened = TextMessageContentEvent(message_id="m", delta="closing")
    delivered = Delivered()

    async def waits_forever() -> AsyncIterator[BaseEvent]:
        yield TextMessageContentEvent(message_id="m", delta="first")
        await asyncio.Event().wait()
        yield TextMessageContentEvent(message_id="m", delta="never")

    pump = Pump(delivered.deliver, closing=lambda reason: [opened])
    pump.start(waits_forever(), delivered.finish)
    pump.end_by(0, "CLIENT_GONE", "gone")
    await delivered.ended()
    assert [getattr(event, "delta", None) for event in delivered.events[:2]] == ["first", "closing"]
    assert isinstance(delivered.events[-1], RunErrorEvent) and delivered.events[-1].code == "CLIENT_GONE"
    assert len(delivered.events) == 3


async def test_events_put_from_another_thread_go_out_before_the_runs_next_event() -> None:
    """What a tool running in a thread put before it returned is delivered before the event the
    run makes after it, however the loop scheduled the two."""
    delivered = Delivered()
    returned = threading.Event()

    async def delegates() -> AsyncIterator[BaseEvent]:
        def tool() -> None:
            for index in range(100):
                pump.put(TextMessageContentEvent(message_id="s", delta=f"put-{index}"))
            returned.set()

        threading.Thread(target=tool).start()
        while not returned.is_set():  # the bridge learns the tool returned without the loop's help
            await asyncio.sleep(0.001)
        yield TextMessageContentEvent(message_id="m", delta="after")
        yield RunFinishedEvent(thread_id="t", run_id="r")

    pump = Pump(delivered.deliver)
    pump.start(delegates(), delivered.finish)
    await delivered.ended()
    deltas = [getattr(event, "delta", event.type.value) for event in delivered.events]
    assert deltas == [*(f"put-{index}" for index in range(100)), "after", "RUN_FINISHED"]


async def test_a_run_ended_before_its_task_began_still_finishes_and_never_starts_its_source() -> None:
    """At shutdown with no grace left, a run's deadline can come before its task's first step."""
    delivered = Delivered()
    started = False

    async def source() -> AsyncIterator[BaseEvent]:
        nonlocal started
        started = True
        yield TextMessageContentEvent(message_id="m", delta="x")

    pump = Pump(delivered.deliver)
    pump.start(source(), delivered.finish)
    pump.end_by(0, "SERVER_SHUTDOWN", "stopping")
    pump._expire()  # the deadline's timer, before the task's first step
    await delivered.ended()
    assert [event.type.value for event in delivered.events] == ["RUN_ERROR"] and not started
