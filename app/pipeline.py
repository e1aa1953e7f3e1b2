"""The one per-run pipeline every route uses, composed here and nowhere else.

A validated ``RunAgentInput`` goes in once; the SSE bytes of exactly one run come out. The stages,
innermost first, and why they sit where they do:

1. ``bridge.run(input)``: the runtime's upstream AG-UI bridge (``runtimes/<name>/``); while a
   bridge that owns a sidecar says it is down (``runtimes.base.available``), RUN_ERROR
   ``RUNTIME_UNAVAILABLE`` at once instead.
2. ``bridge.stages``: the runtime's own fixes to what its bridge emits (complete snapshots, model
   error codes, cancelled approvals...), declared by the runtime, applied in its order; then
   ``ApprovalLedger.stage`` (``app.approvals``), which decides what a run may leave parked (and
   answers a resume of an evicted approval); then ``limit_model_calls`` (``runtimes.budget``),
   which gives the run its model-call budget before any of them starts the bridge.
3. ``emit_subagents`` (``emitters.core``): SUBAGENT_* lifecycle and attribution. Inside the error
   boundary, so it sees the terminal event it must close its subagents before; it closes them on
   an exception or an early stop too, before the boundary reports it.
4. :func:`one_run`, the error boundary: the stream is exactly one run, RUN_STARTED first and one
   terminal event last, whatever the stages inside did (an escaping exception becomes RUN_ERROR
   with the bridge's name for it, a stop mid-run becomes RUN_ERROR ``INCOMPLETE_RUN``).
5. ``Pump.drain`` (``app.pump``): stages 1-4 run in one task and context of their own, with
   backpressure; what the dialects put out of band is merged in live; a run ended early (at
   shutdown, or when its clients left) ends with RUN_ERROR ``SERVER_SHUTDOWN`` or ``CLIENT_GONE``,
   its subagents closed first. Then ``as_client_named`` (``app.principals``): the stages above see
   the thread as the server keeps it for the request's principal, the client sees its own name.
6. :func:`encode_sse`: each event as its SSE frame; an event that cannot be encoded ends the run
   with RUN_ERROR ``ENCODING_ERROR`` instead of a cut stream.
7. ``log_run`` (``app.runlog``): one summary line per run, of what its clients were sent (the one
   line a failure gets; the stages above log their detail at debug).

What comes out (:meth:`RoutePipeline.open`) is each event with its frame; ``app.runs`` writes them
to the run's replay log, which the run's clients read. Every stage closes its input when it ends,
so a run ended early (its clients left, the server stops) stops the bridge at once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

from ag_ui.core import BaseEvent, EventType, RunAgentInput, RunErrorEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder

from app.approvals import CODES as APPROVAL_CODES
from app.approvals import ApprovalLedger
from app.config import Settings
from app.principals import as_client_named, scoped
from app.pump import SERVER_SHUTDOWN, Pump
from app.runlog import log_run
from app.runs import CODES as RUN_CODES
from app.runs import STATE_UNAVAILABLE
from emitters.core import NativeLatch, SubagentRun, emit_subagents, subagent_events_enabled
from runtimes.base import TERMINAL, Bridge, Runtime, available
from runtimes.budget import limit_model_calls
from runtimes.model_errors import MODEL_CODES
from store import Store, StoreUnavailable

logger = logging.getLogger("agui.pipeline")

INCOMPLETE_RUN = "INCOMPLETE_RUN"
RUNTIME_UNAVAILABLE = "RUNTIME_UNAVAILABLE"
ENCODING_ERROR = "ENCODING_ERROR"
INTERNAL_ERROR = "INTERNAL_ERROR"
RUNTIME_ERROR = "RUNTIME_ERROR"
PIPELINE_CODES = frozenset(
    {INCOMPLETE_RUN, RUNTIME_UNAVAILABLE, ENCODING_ERROR, INTERNAL_ERROR, RUNTIME_ERROR, SERVER_SHUTDOWN}
)
"""The RUN_ERROR codes the pipeline itself sends (docs/errors.md, with every other code)."""
_ENCODER = EventEncoder()


@dataclass
class RoutePipeline:
    """Everything one mounted route keeps between runs: its runtime, bridge, native latch and ledger,
    over the app's store."""

    runtime: Runtime
    bridge: Bridge
    settings: Settings
    store: Store
    latch: NativeLatch = field(init=False)
    ledger: ApprovalLedger = field(init=False)
    codes: frozenset[str] = field(init=False)
    """Every RUN_ERROR code this route documents; a bridge's other codes go out as RUNTIME_ERROR."""

    def __post_init__(self) -> None:
        self.latch = NativeLatch(self.runtime.route, expected=self.runtime.native_subagents)
        self.ledger = ApprovalLedger(
            self.settings.approval_limits(), self.bridge.forget, self.store, self.runtime.route
        )
        self.codes = PIPELINE_CODES | RUN_CODES | MODEL_CODES | APPROVAL_CODES | self.runtime.known.run_error_codes()

    def open(self, run_input: RunAgentInput, principal: str = "") -> OpenRun:
        """One run of ``run_input`` for ``principal`` (``app.principals``): its events with their
        SSE frames, and how to end it early."""
        client_thread_id, run_input = run_input.thread_id, scoped(run_input, principal)
        subagents = SubagentRun(
            self.latch,
            thread_id=run_input.thread_id,
            out=lambda event: pump.put(event),
            enabled=subagent_events_enabled(run_input.forwarded_props, self.settings.agui_subagent_events),
            interrupt_owner=self.bridge.interrupt_owner,
        )
        pump = Pump(closing=lambda reason: subagents.visible(subagents.close_all(reason)))
        if available(self.bridge):
            events = self.bridge.run(run_input)
            for stage in self.bridge.stages:
                events = stage(events, run_input)
            events = self.ledger.stage(events, run_input)
        else:  # the bridge never sees it, so nothing of the thread changes: a new run can follow
            down = (
                f"The {self.runtime.title} runtime is not running right now; it is being restarted. Try again shortly."
            )
            events = _refusal(run_input, RUNTIME_UNAVAILABLE, down)
        events = limit_model_calls(events, self.settings.agui_max_model_calls)
        events = one_run(emit_subagents(events, subagents), run_input, self.bridge, self.codes)
        events = pump.drain(events)
        if run_input.thread_id != client_thread_id:  # the server names the thread for its principal
            events = as_client_named(events, client_thread_id)
        return OpenRun(self._logged(encode_sse(events), run_input), pump.end_by)

    def refuse(self, run_input: RunAgentInput, code: str, message: str) -> AsyncIterator[tuple[BaseEvent, bytes]]:
        """A run answered before anything of it starts: RUN_STARTED, then RUN_ERROR ``code``."""
        return self._logged(encode_sse(_refusal(run_input, code, message)), run_input)

    def _logged(
        self, frames: AsyncIterator[tuple[BaseEvent, bytes]], run_input: RunAgentInput
    ) -> AsyncIterator[tuple[BaseEvent, bytes]]:
        return log_run(frames, runtime=self.runtime.name, thread_id=run_input.thread_id, run_id=run_input.run_id)


@dataclass(frozen=True)
class OpenRun:
    """One run through the pipeline: iterate ``frames`` once; ``end_by(grace_s, code, message)``
    ends it early with RUN_ERROR ``code`` (its open subagents closed first)."""

    frames: AsyncIterator[tuple[BaseEvent, bytes]]
    end_by: Callable[[float, str, str], None]


async def _refusal(run_input: RunAgentInput, code: str, message: str) -> AsyncIterator[BaseEvent]:
    yield _run_started(run_input)
    yield RunErrorEvent(message=message, code=code)


async def one_run(
    events: AsyncIterator[BaseEvent], run_input: RunAgentInput, bridge: Bridge, codes: frozenset[str]
) -> AsyncIterator[BaseEvent]:
    """The error boundary: exactly one run, opened by RUN_STARTED and closed by one terminal event,
    a RUN_ERROR always with one of the route's documented ``codes``."""
    started = False
    try:
        async with aclosing(events):
            async for event in events:
                if not started and event.type != EventType.RUN_STARTED:
                    yield _run_started(run_input)
                started = True
                if event.type == EventType.RUN_ERROR and event.code not in codes:
                    logger.debug("code=%s | a bridge code no document lists, sent as %s", event.code, RUNTIME_ERROR)
                    event = event.model_copy(update={"code": RUNTIME_ERROR})
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


def _run_started(run_input: RunAgentInput) -> RunStartedEvent:
    return RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)


def _run_error(exc: Exception, bridge: Bridge, run_input: RunAgentInput) -> RunErrorEvent:
    if isinstance(exc, StoreUnavailable):
        logger.warning(
            "code=%s thread=%.64r | the state store failed mid-run: %s", STATE_UNAVAILABLE, run_input.thread_id, exc
        )
        return RunErrorEvent(message="The state store became unavailable during the run.", code=STATE_UNAVAILABLE)
    named = bridge.describe_error(exc)
    code = named.code if named is not None else INTERNAL_ERROR
    message = str(named) if named is not None else f"The run failed ({type(exc).__name__})."
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
