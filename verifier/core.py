"""An AG-UI event-stream verifier: the rules of the TypeScript client's ``verifyEvents`` in Python.

Why: the AG-UI Python SDK ships event models but no verifier, so nothing on the Python side checks
that a stream is a legal *sequence*. These rules follow ``@ag-ui/client``'s ``verifyEvents``
(run lifecycle, start/content/end pairing, subagent lifecycle and ownership, no ``null`` on
optional subagent fields) and add what a thread needs on top: every STATE_DELTA must apply as an
RFC 6902 patch to the state so far, a TOOL_CALL_RESULT must name a tool call the thread has seen,
and a subagent id may only come back on a later run if it was suspended.

Events are wire-form dicts (camelCase keys, ``type`` as the string name). Problems are strings;
an empty list means the stream is valid. Unlike the TS verifier, which stops at the first error,
this one keeps going and reports every problem it can see.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
from ag_ui.core import EventType

Owner = str | None
"""Who an event belongs to: a ``subagentRunId``, or None for the parent agent."""


@dataclass(frozen=True)
class Span:
    """One start/content/end family; ``id_field`` None means an id-less legacy span."""

    label: str
    id_field: str | None
    start: str
    middle: tuple[str, ...]
    end: str
    registry: str | None  # which owner registry the id lives in (ids are shared across spans)


SPANS: tuple[Span, ...] = (
    Span("text message", "messageId", "TEXT_MESSAGE_START", ("TEXT_MESSAGE_CONTENT",), "TEXT_MESSAGE_END", "message"),
    Span("tool call", "toolCallId", "TOOL_CALL_START", ("TOOL_CALL_ARGS",), "TOOL_CALL_END", "toolCall"),
    Span("reasoning span", "messageId", "REASONING_START", (), "REASONING_END", "reasoning"),
    Span(
        "reasoning message",
        "messageId",
        "REASONING_MESSAGE_START",
        ("REASONING_MESSAGE_CONTENT",),
        "REASONING_MESSAGE_END",
        "reasoning",
    ),
    Span("thinking span", None, "THINKING_START", (), "THINKING_END", None),
    Span(
        "thinking message",
        None,
        "THINKING_TEXT_MESSAGE_START",
        ("THINKING_TEXT_MESSAGE_CONTENT",),
        "THINKING_TEXT_MESSAGE_END",
        None,
    ),
)
SPAN_BY_TYPE: dict[str, tuple[Span, str]] = {
    kind: (span, role)
    for span in SPANS
    for kind, role in [(span.start, "start"), (span.end, "end"), *((m, "middle") for m in span.middle)]
}

# Optional lifecycle fields that must be omitted rather than sent as null.
NULL_FORBIDDEN: dict[str, tuple[str, ...]] = {
    "SUBAGENT_STARTED": ("description", "parentSubagentRunId", "parentToolCallId", "parentMessageId"),
    "SUBAGENT_FINISHED": ("outcome",),
    "SUBAGENT_ERROR": ("code",),
}
SUBAGENT_OUTCOMES = frozenset({"success", "suspended"})
KNOWN_TYPES = frozenset(kind.value for kind in EventType)
NO_ID = "<no id>"


@dataclass
class RunScope:
    """What is open or known inside one run; a new RUN_STARTED starts a fresh one."""

    open: dict[str, dict[str, Owner]] = field(default_factory=lambda: {span.label: {} for span in SPANS})
    steps: dict[tuple[Owner, str], None] = field(default_factory=dict)
    owners: dict[str, dict[str, Owner]] = field(
        default_factory=lambda: {"message": {}, "toolCall": {}, "reasoning": {}, "activity": {}}
    )
    subagents_active: dict[str, None] = field(default_factory=dict)
    subagents_done: set[str] = field(default_factory=set)


class ThreadVerifier:
    """Verifies the streams of one thread in order, carrying what outlives a run.

    A resume is a second HTTP request, so state, the tool calls seen so far and the subagents
    left suspended must survive from one stream to the next. Feed each response to
    :meth:`verify_stream` in the order the runs happened.
    """

    def __init__(self, state: Any = None, messages: Iterable[dict] = ()) -> None:
        self.state: Any = {} if state is None else copy.deepcopy(state)
        self.tool_calls: set[str] = {call_id for message in messages for call_id in _tool_call_ids(message)}
        self.suspended: set[str] = set()  # subagents that may continue on a later run
        self.ended: set[str] = set()  # subagents finished for good in an earlier run
        self.phase = "idle"  # idle | running | finished | errored
        self.run = RunScope()

    def verify_stream(self, events: list[dict]) -> list[str]:
        """Check one HTTP response (it may hold several runs back to back)."""
        if not events:
            return ["the stream has no events"]
        self.phase, self.run = "idle", RunScope()
        problems = [
            f"event {index} {event.get('type')}: {problem}"
            for index, event in enumerate(events)
            for problem in self.check(event)
        ]
        if self.phase == "running":
            still_open = "; ".join(self._open_items())
            problems.append(
                "the stream ended inside a run: no RUN_FINISHED or RUN_ERROR"
                + (f" (still open: {still_open})" if still_open else "")
            )
        return problems

    def check(self, event: dict) -> list[str]:
        """Problems with ``event`` given everything before it; updates the bookkeeping."""
        kind = event.get("type")
        if kind not in KNOWN_TYPES:
            return [f"'{kind}' is not an AG-UI event type"]
        problems = self._lifecycle(kind) + self._nulls(kind, event)
        if kind in SPAN_BY_TYPE:
            problems += self._span(event, *SPAN_BY_TYPE[kind])
        else:
            handler = getattr(self, f"_on_{str(kind).lower()}", None)
            if handler is not None:
                problems += handler(event)
        return problems

    # -- run lifecycle -------------------------------------------------------------------------

    def _lifecycle(self, kind: str | None) -> list[str]:
        if self.phase == "errored" and kind != "RUN_STARTED":
            return ["the run already errored with RUN_ERROR; only a new RUN_STARTED may follow"]
        if self.phase == "finished" and kind != "RUN_STARTED":
            return ["the run already finished with RUN_FINISHED; only a new RUN_STARTED may follow"]
        if self.phase == "idle" and kind not in ("RUN_STARTED", "RUN_ERROR"):
            self.phase = "running"  # said once; the rest is checked as if the run had started
            return ["the first event must be RUN_STARTED"]
        if self.phase == "running" and kind == "RUN_STARTED":
            return ["RUN_STARTED while a run is still active; finish it with RUN_FINISHED first"]
        return []

    def _on_run_started(self, event: dict) -> list[str]:
        if self.phase != "running":
            self.run = RunScope()
        self.phase = "running"
        return self._seed_owners(((event.get("input") or {}).get("messages")) or [], replace=False)

    def _on_run_finished(self, event: dict) -> list[str]:
        still_open = self._open_items()
        self.phase = "finished"
        self._close_subagents_for_thread()
        problems = [f"RUN_FINISHED while {'; '.join(still_open)} still open"] if still_open else []
        interrupts = (event.get("outcome") or {}).get("interrupts") or []
        problems += [
            f"interrupt '{interrupt.get('id')}' has subagentRunId: null; omit the field instead"
            for interrupt in interrupts
            if isinstance(interrupt, dict) and "subagentRunId" in interrupt and interrupt["subagentRunId"] is None
        ]
        return problems

    def _on_run_error(self, event: dict) -> list[str]:
        self.phase = "errored"
        self._close_subagents_for_thread()
        return []

    def _open_items(self) -> list[str]:
        """Everything still open in the run, one entry per kind: "tool calls 'c1', 'c2'"."""
        parts = [f"steps {', '.join(self._step_names())}"] if self.run.steps else []
        parts += [f"{span.label}s {_names(ids)}" for span in SPANS if (ids := self.run.open[span.label])]
        if self.run.subagents_active:
            parts.append(f"subagents {_names(self.run.subagents_active)}")
        return parts

    def _step_names(self) -> list[str]:
        return [f"'{name}'" + ("" if owner is None else f" (subagent '{owner}')") for owner, name in self.run.steps]

    # -- null on optional fields ---------------------------------------------------------------

    def _nulls(self, kind: str | None, event: dict) -> list[str]:
        names = [name for name in ("subagentRunId", *NULL_FORBIDDEN.get(str(kind), ())) if name in event]
        problems = [f"'{name}: null'; the field is optional, omit it" for name in names if event[name] is None]
        outcome = event.get("outcome") if kind == "SUBAGENT_FINISHED" else None
        if isinstance(outcome, dict) and "interruptIds" in outcome and outcome["interruptIds"] is None:
            problems.append("'outcome.interruptIds: null'; the field is optional, omit it")
        return problems

    # -- start / content / end pairing ---------------------------------------------------------

    def _span(self, event: dict, span: Span, role: str) -> list[str]:
        span_id = event.get(span.id_field, NO_ID) if span.id_field else NO_ID
        is_open = self.run.open[span.label]
        owner: Owner = event.get("subagentRunId")
        if role == "start":
            if span_id in is_open:
                return [f"{span.label} '{span_id}' is already in progress; end it first"]
            problems = self._start_owner(span, span_id, owner, event)
            is_open[span_id] = owner
            return problems
        if span_id not in is_open:
            return [f"no active {span.label} '{span_id}'; send {span.start} first"]
        problems = self._same_owner(span, span_id, owner)
        if role == "end":
            del is_open[span_id]
        return problems

    def _start_owner(self, span: Span, span_id: str, owner: Owner, event: dict) -> list[str]:
        """Record who opened ``span_id``; a reopened id must keep its earlier owner."""
        if span.registry is None:
            return []
        owners = self.run.owners[span.registry]
        problems = []
        if span.registry == "toolCall":
            self.tool_calls.add(span_id)
            parent_id = event.get("parentMessageId")
            if parent_id in self.run.owners["message"]:
                parent_owner = self.run.owners["message"][parent_id]
                if owner is not None and owner != parent_owner:
                    problems.append(
                        f"subagentRunId '{owner}' does not match parent message '{parent_id}', owned by "
                        f"{_who(parent_owner)}; a tool call belongs to the message that carries it"
                    )
                owner = parent_owner if owner is None else owner
        if span_id in owners:
            return problems + self._same_owner(span, span_id, owner)
        owners[span_id] = owner
        return problems

    def _same_owner(self, span: Span, span_id: str, owner: Owner) -> list[str]:
        """An event that names its owner must name the opener's (omitting it inherits)."""
        if span.registry is None or owner is None:
            return []
        opener = self.run.owners[span.registry].get(span_id)
        if opener == owner:
            return []
        return [f"subagentRunId '{owner}' does not match {_who(opener)}, which opened {span.label} '{span_id}'"]

    # -- steps ---------------------------------------------------------------------------------

    def _on_step_started(self, event: dict) -> list[str]:
        key = (event.get("subagentRunId"), event.get("stepName"))
        if key in self.run.steps:
            return [f"step '{key[1]}' is already active for {_who(key[0])}"]
        self.run.steps[key] = None
        return []

    def _on_step_finished(self, event: dict) -> list[str]:
        owner, name = key = (event.get("subagentRunId"), event.get("stepName"))
        if key in self.run.steps:
            del self.run.steps[key]
            return []
        elsewhere = [other for other, open_name in self.run.steps if open_name == name]
        if elsewhere:
            return [f"step '{name}' is open under {_who(elsewhere[0])}, not {_who(owner)}; its starter must finish it"]
        return [f"step '{name}' was never started"]

    # -- other ownership seeds -----------------------------------------------------------------

    def _on_messages_snapshot(self, event: dict) -> list[str]:
        return self._seed_owners(event.get("messages") or [], replace=True)

    def _seed_owners(self, messages: list[dict], *, replace: bool) -> list[str]:
        """Messages (input echo or snapshot) tell who owns their ids and which tool calls exist."""
        problems = []
        for message in messages:
            if not isinstance(message, dict) or not isinstance(message.get("id"), str):
                continue
            if "subagentRunId" in message and message["subagentRunId"] is None:
                problems.append(f"message '{message['id']}' has subagentRunId: null; omit the field instead")
            registry = {"reasoning": "reasoning", "activity": "activity"}.get(message.get("role"), "message")
            owner = message.get("subagentRunId")
            if replace or message["id"] not in self.run.owners[registry]:
                self.run.owners[registry][message["id"]] = owner
            for call_id in _tool_call_ids(message):
                self.tool_calls.add(call_id)
                if replace or call_id not in self.run.owners["toolCall"]:
                    self.run.owners["toolCall"][call_id] = owner
        return problems

    def _on_activity_snapshot(self, event: dict) -> list[str]:
        activities = self.run.owners["activity"]
        if event.get("messageId") not in activities or event.get("replace") is not False:
            activities[event.get("messageId")] = event.get("subagentRunId")
        return []

    def _on_activity_delta(self, event: dict) -> list[str]:
        return self._owned("activity", "activity", event.get("messageId"), event.get("subagentRunId"))

    def _on_reasoning_encrypted_value(self, event: dict) -> list[str]:
        entity, subtype, owner = event.get("entityId"), event.get("subtype"), event.get("subagentRunId")
        if subtype == "tool-call":
            return self._owned("toolCall", "tool call", entity, owner)
        if subtype == "message" and entity in self.run.owners["message"]:
            return self._owned("message", "message", entity, owner)
        return self._owned("reasoning", "reasoning message", entity, owner)

    def _owned(self, registry: str, label: str, item_id: Any, owner: Owner) -> list[str]:
        owners = self.run.owners[registry]
        if owner is None or item_id not in owners or owners[item_id] == owner:
            return []
        return [f"subagentRunId '{owner}' does not match {_who(owners[item_id])}, which opened {label} '{item_id}'"]

    # -- tool results and state ----------------------------------------------------------------

    def _on_tool_call_result(self, event: dict) -> list[str]:
        self.run.owners["message"][event.get("messageId")] = event.get("subagentRunId")
        call_id = event.get("toolCallId")
        if call_id in self.tool_calls:
            return []
        return [f"TOOL_CALL_RESULT names tool call '{call_id}', which this thread has never seen"]

    def _on_state_snapshot(self, event: dict) -> list[str]:
        self.state = copy.deepcopy(event.get("snapshot"))
        return []

    def _on_state_delta(self, event: dict) -> list[str]:
        try:
            self.state = jsonpatch.apply_patch(self.state, event.get("delta"), in_place=False)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError) as exc:
            return [f"STATE_DELTA does not apply as a JSON Patch to the state so far: {type(exc).__name__}: {exc}"]
        return []

    # -- subagents -----------------------------------------------------------------------------

    def _on_subagent_started(self, event: dict) -> list[str]:
        sub_id, parent = event.get("subagentRunId"), event.get("parentSubagentRunId")
        if not isinstance(sub_id, str):
            return ["SUBAGENT_STARTED needs a string subagentRunId"]
        problems = [] if isinstance(event.get("name"), str) else ["SUBAGENT_STARTED needs a string name"]
        if sub_id in self.run.subagents_active:
            problems.append(f"subagent '{sub_id}' is already active; finish it first")
        elif sub_id in self.run.subagents_done:
            problems.append(f"subagent '{sub_id}' already finished in this run; subagent ids are per invocation")
        elif sub_id in self.ended:
            problems.append(
                f"subagent '{sub_id}' finished in an earlier run without being suspended; only a suspended "
                "subagent may continue on a later run"
            )
        if parent is not None and parent not in self.run.subagents_active and parent not in self.run.subagents_done:
            problems.append(f"parentSubagentRunId '{parent}' was not started in this run")
        self.suspended.discard(sub_id)
        self.run.subagents_active[sub_id] = None
        return problems

    def _on_subagent_finished(self, event: dict) -> list[str]:
        problems = self._end_subagent(event)
        outcome = event.get("outcome")
        if outcome is None:
            return problems
        if not isinstance(outcome, dict) or outcome.get("type") not in SUBAGENT_OUTCOMES:
            kind = outcome.get("type") if isinstance(outcome, dict) else outcome
            return [*problems, f"outcome type '{kind}' is neither 'success' nor 'suspended'"]
        ids = outcome.get("interruptIds")
        if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
            problems.append("outcome.interruptIds must be an array of strings")
        if outcome["type"] == "suspended" and isinstance(event.get("subagentRunId"), str):
            self.suspended.add(event["subagentRunId"])
        return problems

    def _on_subagent_error(self, event: dict) -> list[str]:
        problems = self._end_subagent(event)
        return problems if isinstance(event.get("message"), str) else [*problems, "SUBAGENT_ERROR needs a message"]

    def _end_subagent(self, event: dict) -> list[str]:
        sub_id = event.get("subagentRunId")
        if not isinstance(sub_id, str):
            return [f"{event.get('type')} needs a string subagentRunId"]
        if sub_id not in self.run.subagents_active:
            return [f"no active subagent '{sub_id}'; send SUBAGENT_STARTED first"]
        del self.run.subagents_active[sub_id]
        self.run.subagents_done.add(sub_id)
        return []

    def _close_subagents_for_thread(self) -> None:
        """At a run's end, what finished without suspending can never come back on this thread."""
        self.ended |= self.run.subagents_done - self.suspended


def _tool_call_ids(message: Any) -> list[str]:
    calls = message.get("toolCalls") if isinstance(message, dict) else None
    return [call["id"] for call in calls or [] if isinstance(call, dict) and isinstance(call.get("id"), str)]


def _names(items: Iterable[str]) -> str:
    return ", ".join(f"'{item}'" for item in items)


def _who(owner: Owner) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


def verify_events(events: list[dict], history: ThreadVerifier | None = None) -> list[str]:
    """Problems in one SSE response's events; ``history`` carries a thread's earlier runs."""
    return (history or ThreadVerifier()).verify_stream(events)


def verify_thread(runs: Iterable[list[dict]], state: Any = None) -> list[str]:
    """Problems across the responses of one thread (e.g. an interrupt, then its resume)."""
    verifier = ThreadVerifier(state=state)
    return [f"run {number}: {problem}" for number, run in enumerate(runs) for problem in verifier.verify_stream(run)]
