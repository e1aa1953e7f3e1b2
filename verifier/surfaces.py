"""What each surface must look like on the wire: one predicate per surface, over a driven thread.

A thread is what one scenario (``verifier.scenarios``) put on the wire: its requests and the events
of each response. Each predicate says yes, partial or no, and what it saw when the answer is not
yes; ``judge`` caps a stream the verifier rejects at partial. The runtime matrix (docs/matrix.md)
is these verdicts over the committed captures; ``agui-tour`` prints them for a live server.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import jsonpatch

from runtimes import script
from verifier.client import interrupts as _interrupts
from verifier.core import ThreadVerifier

Status = Literal["yes", "partial", "no"]


class Thread(Protocol):
    """One driven scenario: each request, and the events of its response, in order."""

    @property
    def requests(self) -> Sequence[dict]: ...

    @property
    def runs(self) -> Sequence[list[dict]]: ...


@dataclass(frozen=True)
class Played:
    """A :class:`Thread` held in memory (what ``agui-tour`` drives)."""

    requests: list[dict]
    runs: list[list[dict]]


@dataclass(frozen=True)
class Check:
    """One predicate's verdict on one captured thread, with what it saw when the answer is not yes."""

    status: Status
    observed: str = ""


YES = Check("yes")


def _no(observed: str) -> Check:
    return Check("no", observed)


def _partial(observed: str) -> Check:
    return Check("partial", observed)


# --- reading a captured thread ------------------------------------------------------------------


def _first(events: list[dict], kind: str, **fields: object) -> int | None:
    """Index of the first event of ``kind`` whose fields equal ``fields``."""
    for index, event in enumerate(events):
        if event["type"] == kind and all(event.get(key) == value for key, value in fields.items()):
            return index
    return None


def _finished(events: list[dict]) -> bool:
    """The run ended with RUN_FINISHED and no interrupt."""
    return bool(events) and events[-1]["type"] == "RUN_FINISHED" and not _interrupts(events)


def _parent_text(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT" and "subagentRunId" not in e)


def _states(thread: Thread) -> tuple[dict, list[object], object]:
    """(the state the client sent, every state it held along the way, the state it ends with):
    a snapshot replaces the state, a delta patches it (one that does not apply is skipped here;
    the verifier reports it)."""
    initial = thread.requests[0]["state"]
    state: object = copy.deepcopy(initial)
    held: list[object] = []
    for event in (event for events in thread.runs for event in events):
        if event["type"] == "STATE_SNAPSHOT":
            state = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            try:
                state = jsonpatch.apply_patch(state, event["delta"], in_place=False)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError):
                continue
        else:
            continue
        held.append(state)
    return initial, held, state


def _tool_results(events: list[dict]) -> dict[str, str]:
    """What the client holds as each tool call's result after a run: TOOL_CALL_RESULT events, and
    the tool messages of the last MESSAGES_SNAPSHOT (some bridges send a result only there)."""
    results = {e["toolCallId"]: e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    snapshots = [e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    for message in snapshots[-1] if snapshots else []:
        if message.get("role") == "tool":
            results.setdefault(message["toolCallId"], message["content"])
    return results


# --- the predicates, one per surface -------------------------------------------------------------


def streamed_text(thread: Thread) -> Check:
    """The reply streams as several TEXT_MESSAGE_CONTENT chunks of one message in a run that finishes."""
    events = thread.runs[0]
    chunks: dict[str, int] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            chunks[event["messageId"]] = chunks.get(event["messageId"], 0) + 1
    if not chunks or not _finished(events):
        return _no("no finished run with text content")
    return YES if max(chunks.values()) >= 2 else _partial("the reply arrives in one chunk")


def backend_tool(thread: Thread) -> Check:
    """The server runs get_weather: TOOL_CALL_START/ARGS/END, its TOOL_CALL_RESULT, then the reply
    streams after the result."""
    events = thread.runs[0]
    start = _first(events, "TOOL_CALL_START", toolCallName=script.GET_WEATHER)
    if start is None:
        return _no("no get_weather tool call")
    call_id = events[start]["toolCallId"]
    end = _first(events, "TOOL_CALL_END", toolCallId=call_id)
    result = _first(events, "TOOL_CALL_RESULT", toolCallId=call_id)
    if end is None or result is None:
        return _partial("the call is not closed or has no TOOL_CALL_RESULT")
    after = _first(events[result:], "TEXT_MESSAGE_CONTENT")
    return YES if after is not None and _finished(events) else _partial("no reply after the tool result")


def frontend_tool(thread: Thread) -> Check:
    """Turn 1 streams a call to the client-declared tool and finishes without running it (no
    TOOL_CALL_RESULT, no interrupt); turn 2, carrying the client's tool message, replies with it."""
    first = thread.runs[0]
    declared = {tool["name"] for tool in thread.requests[0]["tools"]}
    starts = [e for e in first if e["type"] == "TOOL_CALL_START" and e["toolCallName"] in declared]
    if not starts:
        return _no("no call to the declared tool")
    call_id = starts[0]["toolCallId"]
    if _first(first, "TOOL_CALL_RESULT", toolCallId=call_id) is not None or not _finished(first):
        return _partial("the server ran the client's tool, or the run did not finish")
    if len(thread.runs) < 2:
        return _partial("no second turn with the client's result")
    answers = [m["content"] for m in thread.requests[1]["messages"] if m.get("toolCallId") == call_id]
    reply = _parent_text(thread.runs[1])
    if answers and answers[0] in reply and _finished(thread.runs[1]):
        return YES
    return _partial("the reply after the client's tool message does not use its result")


RAN = "Deleted "  # how the offline delete_file answers when it runs: "Deleted <path>."


def approval(thread: Thread) -> Check:
    """Turn 1 ends with RUN_FINISHED outcome interrupt naming each gated call, none of which ran;
    turn 2 answers every interrupt with the top-level resume and finishes without a new interrupt,
    each call holding a result (TOOL_CALL_RESULT or the snapshot's tool message) that shows it ran
    exactly when it was approved."""
    first = thread.runs[0]
    interrupts = _interrupts(first)
    started = {e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_START"}
    if not interrupts:
        return _no("turn 1 has no interrupt outcome")
    ran_early = _tool_results(first)
    if any(i.get("toolCallId") not in started or i.get("toolCallId") in ran_early for i in interrupts):
        return _partial("an interrupt names no streamed call, or a gated call ran before the decision")
    if len(thread.runs) < 2:
        return _partial("no resume turn")
    second = thread.runs[1]
    if not _finished(second):
        return _partial("the resume did not finish cleanly (it ended in an error or a new interrupt)")
    decisions = {entry["interruptId"]: entry for entry in thread.requests[1]["resume"]}
    results = _tool_results(second)
    for interrupt in interrupts:
        decision = decisions[interrupt["id"]]
        approved = decision["status"] == "resolved" and (decision.get("payload") or {}).get("approved") is True
        result = results.get(interrupt["toolCallId"])
        if result is None:
            return _partial(f"call {interrupt['toolCallId']} has no result after the resume")
        if (RAN in result) != approved:
            return _partial(f"call {interrupt['toolCallId']}: approved={approved} but the result is {result!r}")
    return YES


def shared_state(thread: Thread) -> Check:
    """update_recipe puts `recipe` into the state the client ends with, and no state the client
    holds on the way loses a key it sent (the sibling `keep`)."""
    initial, held, final = _states(thread)
    if not isinstance(final, dict) or not (final.get("recipe") or {}).get("title"):
        return _no("the client's final state has no recipe")
    lost = [state for state in held if not all(isinstance(state, dict) and key in state for key in initial)]
    return _partial(f"{len(lost)} state update(s) drop a sibling key") if lost else YES


def predictive_state(thread: Thread) -> Check:
    """While write_document's argument streams (several TOOL_CALL_ARGS), the client can already show
    `document`: STATE_DELTA patches of /document arrive between its TOOL_CALL_START and TOOL_CALL_END,
    or a PredictState CUSTOM event maps that argument to `document` before TOOL_CALL_END; the final
    state has the document."""
    events = thread.runs[0]
    start = _first(events, "TOOL_CALL_START", toolCallName=script.WRITE_DOCUMENT)
    _, _, final = _states(thread)
    if start is None or not isinstance(final, dict) or not final.get("document"):
        return _no("no write_document call, or no document in the final state")
    call_id = events[start]["toolCallId"]
    end = _first(events, "TOOL_CALL_END", toolCallId=call_id)
    during = events[start:end]
    args = [e for e in during if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == call_id]
    deltas = [e for e in during if e["type"] == "STATE_DELTA" and any(op["path"] == "/document" for op in e["delta"])]
    mapping = {"state_key": "document", "tool": script.WRITE_DOCUMENT, "tool_argument": "document"}
    predicted = any(
        e["type"] == "CUSTOM" and e["name"] == "PredictState" and mapping in (e["value"] or []) for e in events[:end]
    )
    if len(args) >= 2 and (deltas or predicted):
        return YES
    return _partial("the document arrives only after the tool call (no streamed prediction)")


def _delegations_live(events: list[dict]) -> tuple[int, list[str]]:
    """(delegations seen, what is wrong with them): each SUBAGENT_STARTED, then content attributed
    to it, then its SUBAGENT_FINISHED (success), then the parent call's TOOL_CALL_RESULT."""
    problems = []
    starts = [i for i, e in enumerate(events) if e["type"] == "SUBAGENT_STARTED"]
    for start in starts:
        sub, parent = events[start]["subagentRunId"], events[start].get("parentToolCallId")
        content = _first(events, "TEXT_MESSAGE_CONTENT", subagentRunId=sub)
        finished = _first(events, "SUBAGENT_FINISHED", subagentRunId=sub)
        result = _first(events, "TOOL_CALL_RESULT", toolCallId=parent)
        in_order = None not in (content, finished, result) and start < content < finished < result
        if not in_order or (events[finished].get("outcome") or {}).get("type") != "success":
            problems.append(f"{sub}: not STARTED < attributed text < FINISHED(success) < parent result")
    return len(starts), problems


def subagents_live(thread: Thread) -> Check:
    """Each delegation (one, or two in parallel): SUBAGENT_STARTED naming the parent tool call, then
    text attributed to it by subagentRunId, then SUBAGENT_FINISHED outcome success, then the parent
    call's TOOL_CALL_RESULT."""
    events = thread.runs[0]
    delegations = [
        e
        for e in events
        if e["type"] == "TOOL_CALL_START"
        and e["toolCallName"] == script.RESEARCH_SPECIALIST
        and "subagentRunId" not in e
    ]
    seen, problems = _delegations_live(events)
    if not seen:
        return _no("no SUBAGENT_STARTED")
    if seen != len(delegations):
        problems.append(f"{len(delegations)} delegations but {seen} SUBAGENT_STARTED")
    return _partial("; ".join(problems)) if problems else YES


def subagent_suspended(thread: Thread) -> Check:
    """Turn 1: the specialist's approval ends its subagent with SUBAGENT_FINISHED outcome suspended,
    whose interruptIds are in the run's interrupt outcome; turn 2 (the resume) continues the same
    subagentRunId with SUBAGENT_STARTED and finishes it (success) before the parent's TOOL_CALL_RESULT."""
    first = thread.runs[0]
    suspended = [
        e for e in first if e["type"] == "SUBAGENT_FINISHED" and (e.get("outcome") or {}).get("type") == "suspended"
    ]
    if not suspended:
        errors = [f"SUBAGENT_ERROR {e.get('code')}" for e in first if e["type"] == "SUBAGENT_ERROR"]
        return _no(", ".join(errors) or "no suspended subagent")
    sub = suspended[0]["subagentRunId"]
    asked = {i["id"] for i in _interrupts(first)}
    if not asked or not set(suspended[0]["outcome"].get("interruptIds") or []) <= asked:
        return _partial("the suspended outcome's interruptIds are not the run's interrupts")
    if len(thread.runs) < 2:
        return _partial("no resume turn")
    second = thread.runs[1]
    _, problems = _delegations_live(second)
    if _first(second, "SUBAGENT_STARTED", subagentRunId=sub) is None or problems or not _finished(second):
        return _partial("the resume does not continue the suspended subagent to success")
    return YES


# --- the matrix ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Surface:
    """One row: a title, and which predicate judges which captured scenarios."""

    title: str
    predicate: Callable[[Thread], Check]
    scenarios: tuple[str, ...]


SURFACES: tuple[Surface, ...] = (
    Surface("text", streamed_text, ("text",)),
    Surface("backend tool", backend_tool, ("backend_tool",)),
    Surface("frontend tool", frontend_tool, ("frontend_tool",)),
    Surface(
        "approval (interrupt + resume)",
        approval,
        ("approval", "approval_rejected", "approval_cancelled", "approval_mixed"),
    ),
    Surface("shared state", shared_state, ("shared_state",)),
    Surface("predictive state", predictive_state, ("predictive_state",)),
    Surface("subagents live", subagents_live, ("subagent", "parallel_subagents")),
    Surface("subagent suspended", subagent_suspended, ("subagent_approval",)),
)


def judge(thread: Thread, predicate: Callable[[Thread], Check]) -> Check:
    """``predicate``'s verdict, capped at partial when the Python verifier rejects the stream."""
    verdict = predicate(thread)
    verifier = ThreadVerifier(state=thread.requests[0]["state"], messages=thread.requests[0]["messages"])
    problems = [problem for events in thread.runs for problem in verifier.verify_stream(events)]
    if problems and verdict.status == "yes":
        return _partial(f"invalid stream: {problems[0]}")
    if problems:
        return Check(verdict.status, f"{verdict.observed}; invalid stream: {problems[0]}")
    return verdict
