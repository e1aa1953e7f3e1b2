"""The one per-run pipeline every route uses, composed here and nowhere else.

A validated ``RunAgentInput`` goes in once; the SSE bytes of exactly one run come out. The stages,
innermost first, and why they sit where they do:

1. ``bridge.run(input)``: the runtime's upstream AG-UI bridge (``runtimes/<name>/``); while a
   bridge that owns a sidecar says it is down (``runtimes.base.available``), RUN_ERROR
   ``RUNTIME_UNAVAILABLE`` at once instead.
2. ``bridge.stages``: the runtime's own fixes to what its bridge emits (complete snapshots, model
   error codes, cancelled approvals...), declared by the runtime, applied in its order.
3. ``emit_subagents`` (``emitters.core``): SUBAGENT_* lifecycle and attribution. Inside the error
   boundary, so it sees the terminal event it must close its subagents before; it closes them on
   an exception or an early stop too, before the boundary reports it.
4. :func:`one_run`, the error boundary: the stream is exactly one run, RUN_STARTED first and one
   terminal event last, whatever the stages inside did (an escaping exception becomes RUN_ERROR
   with the bridge's name for it, a stop mid-run becomes RUN_ERROR ``INCOMPLETE_RUN``).
5. ``Pump.drain`` (``app.pump``): stages 1-4 run in one task and context of their own, with
   backpressure; what the dialects put out of band is merged in live.
6. :func:`encode_sse`: each event as its SSE frame; an event that cannot be encoded ends the run
   with RUN_ERROR ``ENCODING_ERROR`` instead of a cut stream.
7. ``log_run`` (``app.runlog``): one summary line per run, of what the client was sent (the one
   line a failure gets; the stages above log their detail at debug).

Every stage closes its input when it ends, so a client that goes away stops the bridge at once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field

from ag_ui.core import BaseEvent, EventType, RunAgentInput, RunErrorEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder

from app.config import Settings
from app.pump import TERMINAL, Pump
from app.runlog import log_run
from emitters.core import NativeLatch, SubagentRun, emit_subagents, subagent_events_enabled
from runtimes.base import Bridge, Runtime, available

logger = logging.getLogger("agui.pipeline")

INCOMPLETE_RUN = "INCOMPLETE_RUN"
RUNTIME_UNAVAILABLE = "RUNTIME_UNAVAILABLE"
ENCODING_ERROR = "ENCODING_ERROR"
_ENCODER = EventEncoder()


@dataclass
class RoutePipeline:
    """Everything one mounted route keeps between runs: its runtime, bridge and native latch."""

    runtime: Runtime
    bridge: Bridge
    settings: Settings
    latch: NativeLatch = field(init=False)

    def __post_init__(self) -> None:
        self.latch = NativeLatch(self.runtime.route)

    def stream(self, run_input: RunAgentInput) -> AsyncIterator[bytes]:
        """The SSE bytes of one run of ``run_input``."""
        pump = Pump()
        subagents = SubagentRun(
            self.latch,
            thread_id=run_input.thread_id,
            out=pump.put,
            enabled=subagent_events_enabled(run_input.forwarded_props, self.settings.agui_subagent_events),
            interrupt_owner=self.bridge.interrupt_owner,
        )
        if available(self.bridge):
            events = self.bridge.run(run_input)
            for stage in self.bridge.stages:
                events = stage(events, run_input)
        else:
            events = _unavailable(run_input, self.runtime)
        events = one_run(emit_subagents(events, subagents), run_input, self.bridge)
        frames = encode_sse(pump.drain(events))
        return log_run(frames, runtime=self.runtime.name, thread_id=run_input.thread_id, run_id=run_input.run_id)


async def one_run(
    events: AsyncIterator[BaseEvent], run_input: RunAgentInput, bridge: Bridge
) -> AsyncIterator[BaseEvent]:
    """The error boundary: exactly one run, opened by RUN_STARTED and closed by one terminal event."""
    started = False
    try:
        async with aclosing(events):
            async for event in events:
                if not started and event.type != EventType.RUN_STARTED:
                    yield _run_started(run_input)
                started = True
                yield event
                if event.type in TERMINAL:
                    return
    except Exception as exc:  # noqa: BLE001 - whatever the bridge or a stage raised ends the run, reported
        error = _run_error(exc, bridge, run_input)
    else:
        error = RunErrorEvent(message="The run ended before it finished.", code=INCOMPLETE_RUN)
        logger.debug("code=%s thread=%.64r | the bridge stopped mid-run", INCOMPLETE_RUN, run_input.thread_id)
    if not started:
        yield _run_started(run_input)
    yield error


async def _unavailable(run_input: RunAgentInput, runtime: Runtime) -> AsyncIterator[BaseEvent]:
    logger.debug("code=%s runtime=%s | the runtime is down", RUNTIME_UNAVAILABLE, runtime.name)
    yield _run_started(run_input)
    yield RunErrorEvent(
        message=f"The {runtime.title} runtime is not running right now; it is being restarted. Try again shortly.",
        code=RUNTIME_UNAVAILABLE,
    )


def _run_started(run_input: RunAgentInput) -> RunStartedEvent:
    return RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)


def _run_error(exc: Exception, bridge: Bridge, run_input: RunAgentInput) -> RunErrorEvent:
    named = bridge.describe_error(exc)
    code = named.code if named is not None else type(exc).__name__
    message = str(named) if named is not None else (str(exc) or type(exc).__name__)
    logger.debug("code=%s thread=%.64r | the run failed: %s", code, run_input.thread_id, message, exc_info=exc)
    return RunErrorEvent(message=message, code=code)


async def encode_sse(events: AsyncIterator[BaseEvent]) -> AsyncIterator[tuple[BaseEvent, bytes]]:
    """Each event with its SSE frame. An event that cannot be encoded (a string that is not valid
    Unicode, a value JSON cannot hold) ends the stream with a RUN_ERROR the client can read."""
    async with aclosing(events):
        async for event in events:
            try:
                frame = _ENCODER.encode(event).encode()
            except Exception as exc:  # noqa: BLE001 - pydantic's serialization error, a non-UTF-8 string
                logger.debug("code=%s event=%s | cannot encode: %s", ENCODING_ERROR, event.type.value, exc)
                message = f"An event could not be encoded ({event.type.value})."
                error = RunErrorEvent(message=message, code=ENCODING_ERROR)
                yield error, _ENCODER.encode(error).encode()
                return
            yield event, frame
