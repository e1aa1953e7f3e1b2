"""Strict top-level ``resume`` for bridges that have none of their own: one gate per route.

Why: the protocol's human approval is a RUN_FINISHED whose outcome lists interrupts, answered by a
new run on the same thread whose top-level ``resume`` addresses every open interrupt exactly once.
ag-ui-strands and agent-framework-ag-ui enforce that themselves; other bridges read a resume in
their own convention and check little. A runtime whose bridge lacks the rules puts this gate among
its stages (outside any stage that turns the bridge's convention into the standard outcome) and
translates the resume it lets through into its bridge's own shape.

What the gate holds per thread, as one record in the app's store (``store``; shared by every
replica when the state is): the interrupts still open, and the answer that settled the last ones
(so a replay of it is recognised, for an hour). Threads waiting for an answer are the app's
approval ledger's to bound (``app/approvals.py``), which drops one through :meth:`forget`. The
gate reads and writes a thread's record only while the run holds the thread's lease
(``app.runs``: one run per thread at a time, ``THREAD_BUSY`` for a second), so no two runs race
on it.

The answers, with their stable codes (docs/errors.md):

===============================================================  ==============================
request                                                          answer
===============================================================  ==============================
new input (no resume) while interrupts are open                  ``PENDING_INTERRUPTS``
a resume naming an id that is not open (and never was)           ``UNKNOWN_INTERRUPT_ID``
a resume naming an interrupt twice                               ``DUPLICATE_INTERRUPT_ID``
a resume that leaves an open interrupt unanswered (or is empty)  ``PARTIAL_RESUME``
a resolved answer whose payload the interrupt's schema refuses   ``INVALID_PAYLOAD``
the settled answer sent again                                    ``RUN_FINISHED``, nothing runs
a different answer to an interrupt already settled               ``INTERRUPT_ALREADY_ANSWERED``
===============================================================  ==============================

A refusal is a complete run, RUN_STARTED then RUN_ERROR, and changes nothing: the open interrupts
can still be answered. An accepted resume settles its interrupts before the bridge runs, so a
run that then fails is never run twice by a retry of the same resume.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field

import jsonschema
from ag_ui.core import (
    BaseEvent,
    EventType,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
)

from runtimes.base import FINISHED, HeldThreads, Situation
from store import Store

PENDING_INTERRUPTS = "PENDING_INTERRUPTS"
UNKNOWN_INTERRUPT_ID = "UNKNOWN_INTERRUPT_ID"
DUPLICATE_INTERRUPT_ID = "DUPLICATE_INTERRUPT_ID"
PARTIAL_RESUME = "PARTIAL_RESUME"
INVALID_PAYLOAD = "INVALID_PAYLOAD"
INTERRUPT_ALREADY_ANSWERED = "INTERRUPT_ALREADY_ANSWERED"

GATE_ANSWERS: dict[Situation, tuple[str, ...]] = {
    "resume with an unknown interrupt id": (UNKNOWN_INTERRUPT_ID,),
    "partial resume (one of two pending approvals answered)": (PARTIAL_RESUME,),
    "resume on a thread that never had an interrupt": (UNKNOWN_INTERRUPT_ID,),
    "resume of an approval already answered, with a different answer": (INTERRUPT_ALREADY_ANSWERED,),
    "the same resume sent again after it was answered (replay)": (FINISHED,),
    "resume payload without the approved boolean": (INVALID_PAYLOAD,),
    "resume payload missing": (INVALID_PAYLOAD,),
    "resume payload not an object": (INVALID_PAYLOAD,),
    "resume with an empty list while an approval is pending": (PARTIAL_RESUME,),
    "resume naming the same interrupt twice": (DUPLICATE_INTERRUPT_ID,),
    "new user input while an approval is pending": (PENDING_INTERRUPTS,),
    "a second run on a thread while its first run is in flight": ("THREAD_BUSY",),
    # THREAD_BUSY while the first runs; the idempotent replay if the first has already finished
    "the same resume sent twice at once": ("THREAD_BUSY", FINISHED),
}
"""How a route behind the gate answers each situation of docs/errors.md section 2 (its
``Known.answers``); THREAD_BUSY is the app's lease (``app.runs``), before the gate."""

APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
"""The ``responseSchema`` of an approval interrupt: the answer says whether the call may run."""


class Refused(Exception):
    """A request the gate answers with RUN_ERROR ``code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Replayed(Exception):
    """The settled answer sent again: the run finishes without running anything."""


OPEN_TTL_S = 30 * 24 * 3600.0
"""A record with open interrupts: kept until answered or forgotten (the ledger bounds how many)."""
SETTLED_TTL_S = 3600.0
"""A record with only the settled answer: kept this long to recognise its replay."""


@dataclass
class _Thread:
    open: dict[str, Interrupt] = field(default_factory=dict)
    settled: dict[str, str] = field(default_factory=dict)  # interrupt id -> its answer, canonical JSON

    def dump(self) -> bytes:
        opened = {i: interrupt.model_dump(mode="json", by_alias=True) for i, interrupt in self.open.items()}
        return json.dumps({"open": opened, "settled": self.settled}, separators=(",", ":")).encode()

    @classmethod
    def load(cls, raw: bytes) -> _Thread:
        data = json.loads(raw)
        opened = {i: Interrupt.model_validate(interrupt) for i, interrupt in data["open"].items()}
        return cls(open=opened, settled=data["settled"])


class InterruptGate:
    """The open interrupts of every thread of one route, and the rules a resume must meet. ``name``
    keeps the route's records apart from other routes' in the store."""

    def __init__(self, store: Store, name: str) -> None:
        self._store = store
        self._prefix = f"agui:gate:{name}:"
        self._paused: set[str] = set()  # this process's view: the threads it last saw waiting

    async def stage(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The gate as a pipeline stage: refuse or replay before the bridge starts, record after."""
        thread_id = run_input.thread_id
        try:
            thread = await self.admit(run_input)
        except (Refused, Replayed) as answer:
            async with aclosing(events):  # never started: nothing of the bridge runs
                pass
            yield RunStartedEvent(thread_id=thread_id, run_id=run_input.run_id)
            if isinstance(answer, Refused):
                yield RunErrorEvent(message=str(answer), code=answer.code)
            else:
                yield RunFinishedEvent(thread_id=thread_id, run_id=run_input.run_id)
            return
        async with aclosing(events):
            async for event in events:
                if event.type == EventType.RUN_FINISHED:
                    thread.open = {i.id: i for i in getattr(event.outcome, "interrupts", None) or []}
                    await self._save(thread_id, thread)
                yield event

    async def admit(self, run_input: RunAgentInput) -> _Thread:
        """Check one request against its thread; on success the resume's interrupts are settled
        (written before the bridge runs). Raises :class:`Refused` or :class:`Replayed`."""
        thread_id = run_input.thread_id
        raw = await self._store.get(self._prefix + thread_id)
        thread = _Thread.load(raw) if raw is not None else None
        resume = run_input.resume
        if thread is None:
            if resume:
                raise Refused(UNKNOWN_INTERRUPT_ID, "Nothing on this thread is waiting for an answer.")
            return _Thread()
        if not resume and not thread.open:
            pass  # an ordinary run (an empty resume with nothing open is no resume)
        elif resume is None:
            raise Refused(
                PENDING_INTERRUPTS,
                f"{len(thread.open)} interrupt(s) on this thread wait for an answer: resume them first.",
            )
        else:
            self._check_resume(thread, resume)
            thread.settled = {entry.interrupt_id: _answer(entry) for entry in resume}
            thread.open = {}
            await self._save(thread_id, thread)
        return thread

    async def forget(self, thread_id: str) -> None:
        """Drop a thread waiting for an answer (the app's approval ledger evicted or refused it)."""
        self._paused.discard(thread_id)
        await self._store.delete(self._prefix + thread_id)

    def held_threads(self) -> HeldThreads:
        """The threads this process last saw waiting (with shared state, another replica may since
        have answered one)."""
        return HeldThreads(paused=frozenset(self._paused))

    async def _save(self, thread_id: str, thread: _Thread) -> None:
        if thread.open:
            self._paused.add(thread_id)
        else:
            self._paused.discard(thread_id)
        if thread.open or thread.settled:
            ttl_s = OPEN_TTL_S if thread.open else SETTLED_TTL_S
            await self._store.put(self._prefix + thread_id, thread.dump(), ttl_s=ttl_s)
        else:
            await self._store.delete(self._prefix + thread_id)

    def _check_resume(self, thread: _Thread, resume: list[ResumeEntry]) -> None:
        ids = [entry.interrupt_id for entry in resume]
        if not thread.open:
            answers = {entry.interrupt_id: _answer(entry) for entry in resume}
            if ids and answers == thread.settled:
                raise Replayed()
            if ids and set(ids) <= set(thread.settled):
                raise Refused(INTERRUPT_ALREADY_ANSWERED, "These interrupts were already answered otherwise.")
            raise Refused(UNKNOWN_INTERRUPT_ID, "Nothing on this thread is waiting for an answer.")
        unknown = [i for i in ids if i not in thread.open]
        if unknown:
            raise Refused(UNKNOWN_INTERRUPT_ID, f"No open interrupt {unknown[0]!r} on this thread.")
        if len(set(ids)) != len(ids):
            raise Refused(DUPLICATE_INTERRUPT_ID, "The resume answers an interrupt more than once.")
        missing = [i for i in thread.open if i not in ids]
        if missing:
            raise Refused(PARTIAL_RESUME, f"The resume must answer every open interrupt; {len(missing)} unanswered.")
        for entry in resume:
            schema = thread.open[entry.interrupt_id].response_schema
            if entry.status == "resolved" and schema:
                try:
                    jsonschema.validate(entry.payload, schema)
                except jsonschema.ValidationError as exc:
                    raise Refused(INVALID_PAYLOAD, f"The answer to {entry.interrupt_id!r}: {exc.message}") from None


def _answer(entry: ResumeEntry) -> str:
    return json.dumps(
        {"status": entry.status, "payload": entry.payload}, sort_keys=True, separators=(",", ":"), default=str
    )
