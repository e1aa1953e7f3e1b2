"""The one seam between the app and an agent runtime.

Why a seam: the app serves several genuinely different runtimes through one per-run pipeline
(``app.pipeline``), and everything generic (the app, the tests, the benchmarks, the deploy checks)
must learn what a runtime is and how it differs from what the runtime's own package declares,
never from a branch that names it. So a runtime package exposes one :class:`Runtime` value:

* who it is (``name``, ``title``, ``bridge_package``; the route is derived from the name);
* how to build its :class:`Bridge` for a settings object and the app's store (the upstream AG-UI
  bridge plus the runtime's own stages), called once per app;
* what differs about it, as data: the RUN_ERROR codes its bridge answers refusals with, the gaps
  the runtime matrix explains, the upstream loggers to quiet, the distributions whose versions
  the wire captures record, the "bare bridge" app the benchmarks compare against.

Adding a runtime = a package under ``runtimes/`` exposing ``runtime`` + one line in
``app/registry.py``. Imports run one way: ``app`` -> ``runtimes`` -> ``emitters``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from importlib import metadata
from typing import Literal, Protocol, runtime_checkable

from ag_ui.core import BaseEvent, EventType, Interrupt, RunAgentInput

from runtimes.config import RuntimeSettings
from runtimes.model_errors import ModelError
from store import Store

Stage = Callable[[AsyncIterator[BaseEvent], RunAgentInput], AsyncIterator[BaseEvent]]
"""One step of a run's event stream: takes the stream so far and the run's input, yields the
stream on. A stage has one job, closes its input when it ends (``contextlib.aclosing``) and may
run code before it first pulls its input (that code runs in the run's own context)."""

InterruptOwner = Callable[[Interrupt], "str | None"]
"""The parent tool call id of the delegation that raised an interrupt, if a specialist raised it."""


@dataclass(frozen=True)
class HeldThreads:
    """Which threads a bridge holds something for right now: what bounds checks and operators read."""

    running: frozenset[str] = frozenset()
    """A run is in flight (the bridge refuses or queues a second one)."""
    paused: frozenset[str] = frozenset()
    """An approval is waiting for its resume."""
    cached: frozenset[str] = frozenset()
    """Per-thread objects kept between runs (bounded by ``AGUI_THREAD_CACHE_SIZE``)."""


class Bridge(Protocol):
    """A runtime's upstream AG-UI bridge, built once per app, serving every run of its route."""

    stages: Sequence[Stage]
    """The runtime's own stages, innermost first, applied by the pipeline to :meth:`run`'s stream."""
    interrupt_owner: InterruptOwner | None
    """The subagent emitter's hook: which delegation raised an interrupt (None: no specialist can)."""

    def run(self, run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The upstream bridge's event stream for one run, as the bridge emits it."""

    def describe_error(self, exc: BaseException) -> ModelError | None:
        """The model failure behind an exception that escaped :meth:`run`, or None."""

    def held_threads(self) -> HeldThreads:
        """What the bridge keeps per thread right now."""

    async def forget(self, thread_id: str) -> None:
        """Drop what the bridge keeps for a thread waiting for an approval: the app's approval
        ledger evicted it or refused to park it (``app/approvals.py``), on whichever replica; with
        shared state, that includes what the bridge keeps of it in the engine. A bridge never
        drops a waiting thread on its own."""


@runtime_checkable
class Lifecycle(Protocol):
    """What a bridge that owns something outside the app's process (a sidecar) adds to :class:`Bridge`.

    The app's lifespan enters :meth:`lifespan` of every bridge that has one: it starts what the
    bridge owns at startup and stops all of it at shutdown, whatever happened in between.
    """

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Start what the bridge owns; leaving the context stops it (no process left behind)."""

    def available(self) -> bool:
        """Whether a run can start now; cheap and never blocking (``GET /`` and every run ask it)."""


def available(bridge: Bridge) -> bool:
    """Whether ``bridge`` can serve a run now (a bridge without a :class:`Lifecycle` always can)."""
    return bridge.available() if isinstance(bridge, Lifecycle) else True


Situation = Literal[
    "resume with an unknown interrupt id",
    "partial resume (one of two pending approvals answered)",
    "resume on a thread that never had an interrupt",
    "resume of an approval already answered, with a different answer",
    "the same resume sent again after it was answered (replay)",
    "resume payload without the approved boolean",
    "resume payload missing",
    "resume payload not an object",
    "resume with an empty list while an approval is pending",
    "resume naming the same interrupt twice",
    "new user input while an approval is pending",
    "a second run on a thread while its first run is in flight",
    "the same resume sent twice at once",
]
"""A request that is well-formed but wrong for the thread's state: the rows of the second table
of docs/errors.md, by their names there."""

TERMINAL = frozenset({EventType.RUN_FINISHED, EventType.RUN_ERROR})
"""The events that end a run: nothing of the run follows one."""

FINISHED = "RUN_FINISHED"
"""In :attr:`Known.answers`: the situation is not refused; the run finishes."""


@dataclass(frozen=True)
class Gap:
    """A runtime-matrix cell that is not "yes", and why (the cause is never this project)."""

    surface: str
    """The matrix row, e.g. ``"subagent suspended"``."""
    cause: Literal["protocol", "upstream"]
    reason: str


@dataclass(frozen=True)
class Known:
    """How this runtime's route differs from the others, declared once, read by the tests, the
    matrix and the docs."""

    answers: Mapping[Situation, tuple[str, ...]]
    """Per situation, the RUN_ERROR codes (or :data:`FINISHED`) the bridge may answer with; more
    than one when the answer depends on timing the client controls."""
    gaps: tuple[Gap, ...] = ()
    notes: tuple[str, ...] = ()
    """Bridge behaviours worth knowing before building on this runtime (prose, for the matrix)."""
    invalid_captures: Mapping[str, str] = field(default_factory=dict)
    """Scenario -> why its committed capture is an invalid stream (an upstream bug both verifiers
    must keep rejecting until it is fixed)."""
    codes: tuple[str, ...] = ()
    """RUN_ERROR codes the bridge may send beyond those in ``answers`` (documented in docs/errors.md;
    any other code a bridge sends reaches the client as ``RUNTIME_ERROR``)."""

    def gap(self, surface: str) -> Gap | None:
        return next((gap for gap in self.gaps if gap.surface == surface), None)

    def run_error_codes(self) -> frozenset[str]:
        """Every RUN_ERROR code of the bridge's own this runtime documents."""
        return frozenset(code for answers in self.answers.values() for code in answers if code != FINISHED) | set(
            self.codes
        )


@dataclass(frozen=True)
class Runtime:
    """One agent runtime as the app mounts it."""

    name: str
    """Short id, also the first path segment: ``strands`` -> ``POST /strands/agent``."""
    title: str
    bridge_package: str
    """The upstream AG-UI bridge distribution the route stands on."""
    build: Callable[[RuntimeSettings, Store], Bridge]
    """The route's bridge for the app's settings and store (``store``: where thread state lives)."""
    known: Known
    packages: tuple[str, ...] = ()
    """Further distributions whose versions the captures record (the runtime's core)."""
    loggers: tuple[str, ...] = ()
    """Upstream loggers that log every event at INFO; quieted to warnings unless LOG_LEVEL=debug."""
    bare_app: str = ""
    """``module:factory`` of the bare upstream bridge on a plain FastAPI app, for ``make bench``."""
    native_subagents: bool = False
    """The bridge emits SUBAGENT_* itself: the route's subagent emitter stands down on its first
    one (``emitters.core.NativeLatch``). ``tests/test_native_probe.py`` holds every runtime to it."""
    bare_command: tuple[str, ...] = ()
    """Instead of ``bare_app``, for a bridge that is not a Python app: the command that serves the bare
    bridge on loopback port ``{port}`` at the route's path (it must stop, with anything it started,
    on SIGTERM)."""
    version: Callable[[str], str] = metadata.version
    """The installed version of one of its packages (``bridge_package``, ``packages``): the Python
    distribution's by default; a runtime whose bridge is not a Python package reads its own lock."""
    setup: str = ""
    """A module run as ``python -m <setup>`` with the app's Python, from anywhere, after the Python
    install (``make setup``, the image build, the boot check): installs what the runtime needs
    outside the Python lock (a sidecar's modules), idempotent and quick when nothing changed."""

    @property
    def route(self) -> str:
        return f"/{self.name}/agent"
