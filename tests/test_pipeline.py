"""The per-run pipeline on synthetic bridge streams: no server, no runtime, only events in and out.

A fake bridge is an async generator of AG-UI events that, like a real bridge running a tool,
calls the emitter's seam (``current_run()``) while it is suspended between events. It runs through
the real pipeline (``app.pipeline.RoutePipeline``): the subagent emitter, the error boundary, the
pump and the SSE encoding, so these are the rules a client sees on the wire.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from app.config import Settings
from app.pipeline import RoutePipeline
from emitters.core import current_run, subagent_events_enabled, subagent_run_id_for
from runtimes.base import HeldThreads, InterruptOwner, Known, Runtime
from runtimes.model_errors import ModelError
from store import MemoryStore
from tests.wire import PipelineRun, through_pipeline
from verifier import parse_sse, verify_events, verify_thread
from verifier.client import run_input

THREAD, RUN = "t1", "r1"


class FakeBridge:
    """A bridge whose next run streams ``events`` (set per run)."""

    stages = ()

    def __init__(self, interrupt_owner: InterruptOwner | None = None, error_code: str | None = None) -> None:
        self.interrupt_owner = interrupt_owner
        self._error_code = error_code
        self.events: AsyncIterator[BaseEvent] | None = None

    def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        assert self.events is not None
        return self.events

    def describe_error(self, exc: BaseException) -> ModelError | None:
        return ModelError(self._error_code, str(exc)) if self._error_code else None

    def held_threads(self) -> HeldThreads:
        return HeldThreads()

    async def forget(self, thread_id: str) -> None:
        pass


def pipeline(*, enabled: bool = True, **bridge: object) -> RoutePipeline:
    fake = FakeBridge(**bridge)
    runtime = Runtime(
        name="test", title="Test", bridge_package="ag-ui-protocol", build=lambda settings, store: fake, known=Known({})
    )
    return RoutePipeline(runtime, fake, Settings(agui_subagent_events=enabled), MemoryStore())


def request(run_id: str = RUN) -> RunAgentInput:
    return RunAgentInput.model_validate(run_input(thread_id=THREAD, runId=run_id))


async def collect(
    events: AsyncIterator[BaseEvent], route: RoutePipeline | None = None, *, run_id: str = RUN, **options: object
) -> list[dict]:
    """What a client decodes from one run of ``events`` through ``route`` (a new pipeline by default)."""
    route = route or pipeline(**options)
    route.bridge.events = events
    return await through_pipeline(route, request(run_id))


async def stream(events: AsyncIterator[BaseEvent], route: RoutePipeline | None = None) -> AsyncIterator[dict]:
    """The same, decoded frame by frame as it arrives."""
    route = route or pipeline()
    route.bridge.events = events
    async for _, frame in PipelineRun(route, request()):
        for event in parse_sse(frame):
            yield event


def specialist_says(subagent_id: str, text: str, message_id: str) -> None:
    run = current_run()
    assert run is not None
    run.emit(TextMessageStartEvent(message_id=message_id), subagent_id)
    run.emit(TextMessageContentEvent(message_id=message_id, delta=text), subagent_id)
    run.emit(TextMessageEndEvent(message_id=message_id), subagent_id)


async def delegating_bridge(
    call_id: str = "call-1", *, during: Callable[[str], None] | None = None, end_early: bool = False
) -> AsyncIterator[BaseEvent]:
    """A Strands-shaped delegation: parent call closed, specialist streams, parent result."""
    yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
    yield ToolCallStartEvent(tool_call_id=call_id, tool_call_name="research_specialist")
    yield ToolCallArgsEvent(tool_call_id=call_id, delta='{"task": "x"}')
    if not end_early:
        yield ToolCallEndEvent(tool_call_id=call_id)
    run = current_run()
    subagent_id = run.start(call_id, "research_specialist")
    specialist_says(subagent_id, "finding", f"{call_id}-m")
    if during:
        during(subagent_id)
    await asyncio.sleep(0)
    if end_early:
        yield ToolCallEndEvent(tool_call_id=call_id)
    yield ToolCallResultEvent(message_id="res", tool_call_id=call_id, content="finding")
    yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)


async def test_delegation_is_wrapped_in_lifecycle_before_parent_result() -> None:
    events = await collect(delegating_bridge())
    assert verify_events(events) == []
    types = [e["type"] for e in events]
    assert types.index("SUBAGENT_STARTED") < types.index("TEXT_MESSAGE_CONTENT")
    assert types.index("SUBAGENT_FINISHED") < types.index("TOOL_CALL_RESULT")
    started = events[types.index("SUBAGENT_STARTED")]
    assert started == {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": subagent_run_id_for("call-1"),
        "name": "research_specialist",
        "parentToolCallId": "call-1",
    }
    content = events[types.index("TEXT_MESSAGE_CONTENT")]
    assert content["subagentRunId"] == started["subagentRunId"]
    assert events[types.index("SUBAGENT_FINISHED")]["outcome"] == {"type": "success"}


async def test_parent_end_held_back_by_bridge_is_sent_early_and_deduplicated() -> None:
    events = await collect(delegating_bridge(end_early=True))
    assert verify_events(events) == []
    types = [e["type"] for e in events]
    assert types.count("TOOL_CALL_END") == 1
    assert types.index("TOOL_CALL_END") < types.index("SUBAGENT_STARTED")


async def test_injected_events_stream_live_while_the_bridge_waits() -> None:
    release = asyncio.Event()
    seen_before_release: list[str] = []

    async def slow_bridge() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        yield ToolCallStartEvent(tool_call_id="c", tool_call_name="research_specialist")
        yield ToolCallEndEvent(tool_call_id="c")
        sid = current_run().start("c", "research_specialist")
        specialist_says(sid, "live", "m")
        await release.wait()  # the bridge is stuck inside the tool
        yield ToolCallResultEvent(message_id="r", tool_call_id="c", content="done")
        yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)

    events = stream(slow_bridge())
    async for event in events:
        seen_before_release.append(event["type"])
        if event["type"] == "TEXT_MESSAGE_END":
            break
    assert "SUBAGENT_STARTED" in seen_before_release and "TEXT_MESSAGE_CONTENT" in seen_before_release
    await events.aclose()


async def test_parallel_delegations_are_attributed_by_tool_call_id() -> None:
    async def parallel() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        for cid in ("a", "b"):
            yield ToolCallStartEvent(tool_call_id=cid, tool_call_name="research_specialist")
            yield ToolCallEndEvent(tool_call_id=cid)
        run = current_run()
        sa, sb = run.start("a", "research_specialist"), run.start("b", "research_specialist")
        run.emit(TextMessageStartEvent(message_id="ma"), sa)
        run.emit(TextMessageStartEvent(message_id="mb"), sb)
        run.emit(TextMessageContentEvent(message_id="mb", delta="B"), sb)
        run.emit(TextMessageContentEvent(message_id="ma", delta="A"), sa)
        run.emit(TextMessageEndEvent(message_id="ma"), sa)
        run.emit(TextMessageEndEvent(message_id="mb"), sb)
        yield ToolCallResultEvent(message_id="r1", tool_call_id="b", content="B")
        yield ToolCallResultEvent(message_id="r2", tool_call_id="a", content="A")
        yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)

    events = await collect(parallel())
    assert verify_events(events) == []
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            expected = subagent_run_id_for("a" if event["delta"] == "A" else "b")
            assert event["subagentRunId"] == expected
    finished = [e["subagentRunId"] for e in events if e["type"] == "SUBAGENT_FINISHED"]
    assert finished == [subagent_run_id_for("b"), subagent_run_id_for("a")]


async def test_specialist_failure_becomes_subagent_error() -> None:
    def boom(subagent_id: str) -> None:
        current_run().fail(subagent_id, "specialist crashed", code="SPECIALIST_ERROR")

    events = await collect(delegating_bridge(during=boom))
    assert verify_events(events) == []
    errors = [e for e in events if e["type"] == "SUBAGENT_ERROR"]
    assert errors == [
        {
            "type": "SUBAGENT_ERROR",
            "subagentRunId": subagent_run_id_for("call-1"),
            "message": "specialist crashed",
            "code": "SPECIALIST_ERROR",
        }
    ]
    assert "SUBAGENT_FINISHED" not in [e["type"] for e in events]


async def interrupted_bridge(call_id: str = "call-1") -> AsyncIterator[BaseEvent]:
    yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
    yield ToolCallStartEvent(tool_call_id=call_id, tool_call_name="research_specialist")
    yield ToolCallEndEvent(tool_call_id=call_id)
    sid = current_run().start(call_id, "research_specialist")
    specialist_says(sid, "asking", "m1")
    outcome = RunFinishedInterruptOutcome(
        interrupts=[Interrupt(id=f"v1:agent_as_tool:{call_id}:x", reason="tool_call", tool_call_id="inner")]
    )
    yield RunFinishedEvent(thread_id=THREAD, run_id=RUN, outcome=outcome)


def owner(interrupt: Interrupt) -> str | None:
    prefix = "v1:agent_as_tool:"
    return interrupt.id[len(prefix) :].split(":")[0] if interrupt.id.startswith(prefix) else None


async def test_interrupt_mid_delegation_suspends_and_resume_continues_the_same_id() -> None:
    route = pipeline(interrupt_owner=owner)
    first = await collect(interrupted_bridge(), route)
    assert verify_events(first) == []
    sid = subagent_run_id_for("call-1")
    finished = [e for e in first if e["type"] == "SUBAGENT_FINISHED"]
    assert finished == [
        {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": sid,
            "outcome": {"type": "suspended", "interruptIds": ["v1:agent_as_tool:call-1:x"]},
        }
    ]
    [interrupt] = first[-1]["outcome"]["interrupts"]
    assert interrupt["subagentRunId"] == sid
    assert interrupt["toolCallId"] == "call-1::inner", "the specialist's call, by the id the client saw"

    async def resumed() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id="r2")
        again = current_run().start("call-1", "research_specialist")
        specialist_says(again, "done", "m2")
        yield ToolCallResultEvent(message_id="res", tool_call_id="call-1", content="done")
        yield RunFinishedEvent(thread_id=THREAD, run_id="r2")

    second = await collect(resumed(), route, run_id="r2")
    assert [e["subagentRunId"] for e in second if e["type"] == "SUBAGENT_STARTED"] == [sid]
    assert verify_thread([first, second]) == []


async def test_run_error_closes_open_subagents_with_subagent_error() -> None:
    async def failing() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        yield ToolCallStartEvent(tool_call_id="c", tool_call_name="research_specialist")
        yield ToolCallEndEvent(tool_call_id="c")
        current_run().start("c", "research_specialist")
        yield RunErrorEvent(message="model exploded", code="MODEL_ERROR")
        yield TextMessageStartEvent(message_id="late")  # must never reach the wire

    events = await collect(failing())
    assert [e["type"] for e in events][-2:] == ["SUBAGENT_ERROR", "RUN_ERROR"]
    assert verify_events(events) == []


async def test_a_bridge_that_raises_still_ends_with_a_terminal_event() -> None:
    async def raising() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        yield ToolCallStartEvent(tool_call_id="c", tool_call_name="research_specialist")
        yield ToolCallEndEvent(tool_call_id="c")
        current_run().start("c", "research_specialist")
        raise TimeoutError("model did not answer")

    events = await collect(raising(), error_code="MODEL_TIMEOUT")
    assert events[-1] == {"type": "RUN_ERROR", "message": "model did not answer", "code": "MODEL_TIMEOUT"}
    assert verify_events(events) == []


async def test_a_bridge_that_stops_mid_run_gets_a_terminal_event() -> None:
    async def cut() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        yield ToolCallStartEvent(tool_call_id="c", tool_call_name="research_specialist")
        yield ToolCallEndEvent(tool_call_id="c")
        current_run().start("c", "research_specialist")

    events = await collect(cut())
    assert [e["type"] for e in events][-2:] == ["SUBAGENT_ERROR", "RUN_ERROR"]
    assert events[-1]["code"] == "INCOMPLETE_RUN"
    assert verify_events(events) == []


async def test_a_run_ended_early_sends_what_it_produced_before_closing_it() -> None:
    """Its clients left (``end_by``) while a SUBAGENT_STARTED was still waiting to go out: the start
    goes first, then the SUBAGENT_ERROR closing it, then the RUN_ERROR; nothing produced later."""
    route = pipeline()
    ended = asyncio.Event()

    async def cut_by_the_client() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        yield ToolCallStartEvent(tool_call_id="c", tool_call_name="research_specialist")
        yield ToolCallEndEvent(tool_call_id="c")
        current_run().start("c", "research_specialist")
        run.end_by(0, "CLIENT_GONE", "Every client of this run left.")
        ended.set()
        await asyncio.Event().wait()  # the bridge would go on; the pump ends the run
        yield TextMessageStartEvent(message_id="late")

    route.bridge.events = cut_by_the_client()
    reader = PipelineRun(route, request())
    run = reader.run
    events = parse_sse(b"".join([frame async for _, frame in reader]))
    assert ended.is_set()
    assert [e["type"] for e in events][-3:] == ["SUBAGENT_STARTED", "SUBAGENT_ERROR", "RUN_ERROR"], events
    assert events[-1]["code"] == "CLIENT_GONE"
    assert verify_events(events) == []


async def test_nothing_is_injected_after_the_terminal_event() -> None:
    async def late_injection() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        run = current_run()
        yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)
        run.start("c", "research_specialist")
        yield TextMessageStartEvent(message_id="late")

    events = await collect(late_injection())
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]


async def test_an_id_is_never_started_twice_in_a_run() -> None:
    def restart(subagent_id: str) -> None:
        run = current_run()
        run.finish(subagent_id)
        run.start("call-1", "research_specialist")

    events = await collect(delegating_bridge(during=restart))
    assert [e["type"] for e in events].count("SUBAGENT_STARTED") == 1
    assert verify_events(events) == []


async def test_disabled_keeps_specialist_content_but_no_lifecycle_or_attribution() -> None:
    events = await collect(delegating_bridge(), enabled=False)
    assert verify_events(events) == []
    assert not [e for e in events if e["type"].startswith("SUBAGENT_")]
    assert not [e for e in events if "subagentRunId" in e]
    assert "finding" in [e.get("delta") for e in events]


async def test_disabled_native_subagents_leave_a_valid_parent_stream() -> None:
    """A bridge that emits SUBAGENT_* itself attributes its specialists' steps too; turned off, two
    parallel specialists' steps would collide as the parent's own, so they go with the attribution."""

    async def native_parallel() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        yield StepStartedEvent(step_name="tools")
        for sub in ("a-sub", "b-sub"):
            yield SubagentStartedEvent(subagent_run_id=sub, name="research_specialist")
            yield StepStartedEvent(step_name="model", subagent_run_id=sub)
        for sub in ("a-sub", "b-sub"):
            yield TextMessageStartEvent(message_id=f"{sub}-m", subagent_run_id=sub)
            yield TextMessageContentEvent(message_id=f"{sub}-m", delta="finding", subagent_run_id=sub)
            yield TextMessageEndEvent(message_id=f"{sub}-m", subagent_run_id=sub)
            yield StepFinishedEvent(step_name="model", subagent_run_id=sub)
            yield SubagentFinishedEvent(subagent_run_id=sub)
        yield StepFinishedEvent(step_name="tools")
        yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)

    events = await collect(native_parallel(), enabled=False)
    assert verify_events(events) == []
    assert not [e for e in events if e["type"].startswith("SUBAGENT_") or "subagentRunId" in e]
    assert [e["stepName"] for e in events if e["type"] == "STEP_STARTED"] == ["tools"]
    assert [e.get("delta") for e in events].count("finding") == 2


async def test_native_bridge_latches_stand_down_for_the_whole_route() -> None:
    route = pipeline()

    async def native_mid_delegation() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        yield ToolCallStartEvent(tool_call_id="c", tool_call_name="research_specialist")
        yield ToolCallEndEvent(tool_call_id="c")
        current_run().start("c", "research_specialist")  # ours, already announced
        await asyncio.sleep(0)
        yield SubagentStartedEvent(subagent_run_id="native-1", name="research_specialist")
        yield TextMessageStartEvent(message_id="n", subagent_run_id="native-1")
        yield TextMessageEndEvent(message_id="n", subagent_run_id="native-1")
        yield ToolCallResultEvent(message_id="r", tool_call_id="c", content="x")
        from ag_ui.core import SubagentFinishedEvent

        yield SubagentFinishedEvent(subagent_run_id="native-1")
        yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)

    first = await collect(native_mid_delegation(), route)
    assert route.latch.tripped
    assert verify_events(first) == []
    ours = [e for e in first if e.get("subagentRunId") == subagent_run_id_for("c")]
    assert [e["type"] for e in ours] == ["SUBAGENT_STARTED", "SUBAGENT_FINISHED"]
    assert "outcome" not in ours[1]  # closed neutrally

    # Every later run on the route injects nothing, from its first delegation on.
    second = await collect(delegating_bridge("call-2"), route)
    assert not [e for e in second if e["type"].startswith("SUBAGENT_")]


async def test_consumer_that_stops_reading_closes_the_bridge() -> None:
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[BaseEvent]:
        try:
            yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
            while True:
                await asyncio.sleep(0.01)
                yield TextMessageStartEvent(message_id="x")
        finally:
            closed.set()

    events = stream(endless())
    await anext(events)
    await events.aclose()
    await asyncio.wait_for(closed.wait(), timeout=5)


async def test_cancelled_consumer_cancels_the_pending_bridge_step() -> None:
    cancelled = asyncio.Event()

    async def hung() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)

    started = asyncio.Event()

    async def consume() -> None:
        async for _ in stream(hung()):
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), timeout=5)  # the run started: the bridge now waits forever
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(cancelled.wait(), timeout=5)


@pytest.mark.parametrize(
    ("props", "default", "expected"),
    [
        ({}, True, True),
        ({"subagentEvents": False}, True, False),
        ({"subagentEvents": "on"}, False, True),
        (None, False, False),
        ({"subagentEvents": "maybe"}, True, True),
    ],
)
def test_per_request_override(props: object, default: bool, expected: bool) -> None:
    assert subagent_events_enabled(props, default) is expected


# --- property: any interleaving of parallel delegations yields a verifier-clean stream -------

ACTIONS = st.lists(
    st.tuples(st.sampled_from(["text", "tool", "fail", "result", "yield"]), st.integers(0, 2)),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(actions=ACTIONS, interrupt=st.booleans(), error=st.booleans(), enabled=st.booleans())
def test_random_interleavings_always_verify(actions, interrupt: bool, error: bool, enabled: bool) -> None:
    async def bridge() -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=THREAD, run_id=RUN)
        calls = [f"c{i}" for i in range(3)]
        for cid in calls:
            yield ToolCallStartEvent(tool_call_id=cid, tool_call_name="research_specialist")
        run = current_run()
        ended: set[str] = set()
        for step, (kind, index) in enumerate(actions):
            cid = calls[index]
            if cid in ended:
                continue
            if kind == "yield":
                await asyncio.sleep(0)
                continue
            sid = run.start(cid, "research_specialist")  # idempotent; ends the parent call early
            if kind == "text":
                specialist_says(sid, "t", f"{cid}-m{step}")
            elif kind == "tool":
                inner = f"{cid}::i{step}"
                run.emit(ToolCallStartEvent(tool_call_id=inner, tool_call_name="lookup_fact"), sid)
                run.emit(ToolCallEndEvent(tool_call_id=inner), sid)
                run.emit(ToolCallResultEvent(message_id=f"{inner}-r", tool_call_id=inner, content="f"), sid)
            elif kind == "fail":
                run.fail(sid, "no")
            elif kind == "result":
                ended.add(cid)
                yield ToolCallEndEvent(tool_call_id=cid)
                yield ToolCallResultEvent(message_id=f"{cid}-r", tool_call_id=cid, content="done")
        if error:
            yield RunErrorEvent(message="stop", code="X")
            return
        for cid in calls:
            if cid not in ended:
                yield ToolCallEndEvent(tool_call_id=cid)
        if interrupt:
            outcome = RunFinishedInterruptOutcome(
                interrupts=[Interrupt(id=f"v1:agent_as_tool:{calls[0]}:i", reason="tool_call")]
            )
            yield RunFinishedEvent(thread_id=THREAD, run_id=RUN, outcome=outcome)
        else:
            yield RunFinishedEvent(thread_id=THREAD, run_id=RUN)

    events = asyncio.run(collect(bridge(), enabled=enabled, interrupt_owner=owner))
    assert verify_events(events) == [], events
