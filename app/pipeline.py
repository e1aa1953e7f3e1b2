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
5. ``Pump`` (``app.pump``): stages 1-4 run in one task and context of their own, which delivers
   every event as it is made; what the dialects put out of band is delivered live, between them; a
   run ended early (at shutdown, or when its clients left) ends with RUN_ERROR ``SERVER_SHUTDOWN``
   or ``CLIENT_GONE``, its subagents closed first.
6. :class:`_Wire`, in that task, per event: ``as_client_named`` (``app.principals``: the stages
   above see the thread as the server keeps it for the request's principal, the client sees its
   own name), then the SSE frame (an event that cannot be encoded ends the run with RUN_ERROR
   ``ENCODING_ERROR`` instead of a cut stream), then ``RunLog`` (``app.runlog``: one summary line
   per run, of what its clients were sent; the stages above log their detail at debug).

What comes out (:meth:`RoutePipeline.open`) is each event with its frame, handed to the run's
:class:`Delivery` (``app.runs`` writes them to the run's replay log, which the run's clients read)
as plain calls in the run's task: no task or generator per stage after the pump. Every stage
closes its input when it ends, so a run ended early (its clients left, the server stops) stops
the bridge at once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Protocol

from ag_ui.core import BaseEvent, EventType, RunAgentInput, RunErrorEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder

from app.approvals import CODES as APPROVAL_CODES
from app.approvals import ApprovalLedger
from app.config import Settings
from app.principals import as_client_named, scoped
from app.pump import SERVER_SHUTDOWN, Pump
from app.runlog import RunLog
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

    def open(self, run_input: RunAgentInput, principal: str, out: Delivery) -> OpenRun:
        """Start one run of ``run_input`` for ``principal`` (``app.principals``): its events go to
        ``out`` with their SSE frames as they are made; the run's bridge starts now, in its own task."""
        client_thread_id, run_input = run_input.thread_id, scoped(run_input, principal)
        subagents = SubagentRun(
            self.latch,
            thread_id=run_input.thread_id,
            out=lambda event: pump.put(event),
            enabled=subagent_events_enabled(run_input.forwarded_props, self.settings.agui_subagent_events),
            interrupt_owner=self.bridge.interrupt_owner,
        )
        wire = self._wire(run_input, client_thread_id, out)
        pump = Pump(wire.send, closing=lambda reason: subagents.visible(subagents.close_all(reason)), room=out.room)
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
        pump.start(one_run(emit_subagents(events, subagents), run_input, self.bridge, self.codes), wire.finish)
        return OpenRun(pump.end_by, pump.stop)

    def refuse(self, run_input: RunAgentInput, principal: str, code: str, message: str, out: Delivery) -> None:
        """A run answered before anything of it starts: RUN_STARTED, then RUN_ERROR ``code``, sent to
        ``out`` now (whose ``finish`` is then its owner's to call)."""
        client_thread_id, run_input = run_input.thread_id, scoped(run_input, principal)
        wire = self._wire(run_input, client_thread_id, out)
        wire.send(_run_started(run_input))
        wire.send(RunErrorEvent(message=message, code=code))

    def _wire(self, run_input: RunAgentInput, client_thread_id: str, out: Delivery) -> _Wire:
        log = RunLog(runtime=self.runtime.name, thread_id=run_input.thread_id, run_id=run_input.run_id)
        renamed = run_input.thread_id != client_thread_id  # the server names the thread for its principal
        return _Wire(out, log, client_thread_id if renamed else None)


class Delivery(Protocol):
    """Where one run's events go, each with its SSE frame (``app.runs``: the run's replay log).
    Called in order, in the run's own task (or where an event is put out of band); none may raise."""

    def send(self, event: BaseEvent, frame: bytes) -> None:
        """One event of the run, as its clients get it."""

    def room(self) -> Awaitable[object] | None:
        """What the run waits for before it takes its next event (the writes catching up), or None."""

    async def finish(self) -> None:
        """The run is over and its bridge closed: called once, after the last :meth:`send`."""


@dataclass(frozen=True)
class OpenRun:
    """One run through the pipeline, started: ``end_by(grace_s, code, message)`` ends it early with
    RUN_ERROR ``code`` (its open subagents closed first); ``stop()`` ends it now, sending nothing more."""

    end_by: Callable[[float, str, str], None]
    stop: Callable[[], None]


class _Wire:
    """A run's events on their way out, each a plain call in the run's task: named for the client,
    encoded as its SSE frame, counted for the run's log line, then delivered."""

    def __init__(self, out: Delivery, log: RunLog, client_thread_id: str | None) -> None:
        self._out = out
        self._log = log
        self._client_thread_id = client_thread_id  # None: the client's name is the server's

    def send(self, event: BaseEvent) -> bool:
        """Deliver ``event`` (the pump's ``Deliver``): True once it went out as the terminal event."""
        if self._client_thread_id is not None:
            event = as_client_named(event, self._client_thread_id)
        try:
            frame = _ENCODER.encode(event).encode()
        except Exception as exc:  # noqa: BLE001 - pydantic's serialization error, a non-UTF-8 string
            # An event that cannot be encoded (a string that is not valid Unicode, a value JSON
            # cannot hold) ends the stream with a RUN_ERROR the client can read.
            logger.debug("code=%s event=%s | cannot encode: %s", ENCODING_ERROR, event.type.value, exc)
            event = RunErrorEvent(message=f"An event could not be encoded ({event.type.value}).", code=ENCODING_ERROR)
            frame = _ENCODER.encode(event).encode()
        self._log.seen(event)
        self._out.send(event, frame)
        return event.type in TERMINAL

    async def finish(self) -> None:
        self._log.ended()
        await self._out.finish()


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
