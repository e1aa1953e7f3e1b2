"""Every surface as a client drives it: the first request, and how the client answers the result.

One table (``SCENARIOS``) for everything that drives a route through every surface: the
``agui-tour`` command (``verifier.tour``), and the test suite's captures, live comparisons and
real-model runs. A scenario's later turn is built the way a client builds it from what it holds:
the history of the last ``MESSAGES_SNAPSHOT`` (the request's own messages when there is none),
then a top-level ``resume`` answering every open interrupt, or a tool message for every tool call
the client was asked to run. The triggers are the offline model's (``GET /`` lists them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.client import history_after, interrupts, resume, run_input
from verifier.core import ThreadVerifier

FRONTEND_TOOL = {
    "name": "change_background",
    "description": "Change the page background colour.",
    "parameters": {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]},
}
INITIAL_STATE = {"keep": "me"}  # a sibling key every state surface must leave alone

FollowUp = Callable[[dict, list[dict]], dict | None]
"""Builds the next request from the previous request and its events; None when there is nothing to answer."""


def client_state(request: dict, events: list[dict]) -> object:
    """The state a client holds after a run: snapshots replace it, deltas patch it."""
    verifier = ThreadVerifier(state=request["state"])
    verifier.verify_stream(events)
    return verifier.state


def next_request(request: dict, events: list[dict], messages: list[dict], **extra: object) -> dict:
    """The client's next run on the same thread, carrying the messages and state it holds."""
    return run_input(
        thread_id=request["threadId"],
        messages=messages,
        state=client_state(request, events),
        tools=request["tools"],
        **extra,
    )


Answer = tuple[str, object]
"""One interrupt's answer: ``(status, payload)``; payload None is left out of the resume entry."""
APPROVE: Answer = ("resolved", {"approved": True})
REJECT: Answer = ("resolved", {"approved": False})
CANCEL: Answer = ("cancelled", None)


def resume_with(*answers: Answer) -> FollowUp:
    """Answer the previous run's interrupts in order; a single answer answers every one of them."""

    def follow_up(request: dict, events: list[dict]) -> dict | None:
        pending = interrupts(events)
        if not pending:
            return None
        chosen = answers * len(pending) if len(answers) == 1 else answers
        entries = [
            entry
            for interrupt, (status, payload) in zip(pending, chosen, strict=True)
            for entry in resume([interrupt], status, payload)
        ]
        return next_request(request, events, history_after(request, events), resume=entries)

    return follow_up


def answer_tool_calls(content: str) -> FollowUp:
    """What a frontend-tool host does: one tool message for every call that has no result yet."""

    def follow_up(request: dict, events: list[dict]) -> dict | None:
        history = history_after(request, events)
        answered = {message.get("toolCallId") for message in history if message["role"] == "tool"}
        pending = [
            call["id"] for message in history for call in message.get("toolCalls") or [] if call["id"] not in answered
        ]
        if not pending:
            return None
        tool_messages = [
            {"id": f"tool-result-{call_id}", "role": "tool", "toolCallId": call_id, "content": content}
            for call_id in pending
        ]
        return next_request(request, events, [*history, *tool_messages])

    return follow_up


@dataclass(frozen=True)
class Scenario:
    """One surface on one thread: the first user message, then at most one client answer."""

    surface: str
    """File stem of its captures; the ``runtimes.script.FEATURES`` name where one maps."""
    message: str
    state: dict = field(default_factory=dict)
    tools: tuple[dict, ...] = ()
    follow_up: FollowUp | None = None

    @property
    def turns(self) -> int:
        return 2 if self.follow_up else 1

    def first_request(self) -> dict:
        return run_input(self.message, state=dict(self.state), tools=list(self.tools))


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("text", "Hello there!"),
    Scenario("backend_tool", "What's the weather in Tokyo?"),
    Scenario(
        "frontend_tool",
        "Please call change_background",
        tools=(FRONTEND_TOOL,),
        follow_up=answer_tool_calls("the background is blue now"),
    ),
    Scenario("approval", "delete notes.txt", follow_up=resume_with(APPROVE)),
    Scenario("approval_rejected", "delete notes.txt", follow_up=resume_with(REJECT)),
    Scenario("approval_cancelled", "delete notes.txt", follow_up=resume_with(CANCEL)),
    Scenario("approval_mixed", "delete a.txt and b.txt", follow_up=resume_with(APPROVE, REJECT)),
    Scenario("shared_state", "Make me a recipe for pancakes", state=INITIAL_STATE),
    Scenario("predictive_state", "Write a story about dragons", state=INITIAL_STATE),
    Scenario("subagent", "Research the history of Lisbon"),
    Scenario("parallel_subagents", "Compare Lisbon and Porto"),
    Scenario("subagent_approval", "Research old logs and delete logs.txt", follow_up=resume_with(APPROVE)),
)
SCENARIO_BY_SURFACE = {scenario.surface: scenario for scenario in SCENARIOS}


Post = Callable[[dict], list[dict]]
"""Sends one RunAgentInput to the route being driven and returns the events of its response."""


def play(scenario: Scenario, post: Post) -> list[tuple[dict, list[dict]]]:
    """Drive ``scenario`` through ``post``: the first run, then the client's answer when there is
    one to give. Returns each request with its events."""
    request = scenario.first_request()
    turns = [(request, post(request))]
    if scenario.follow_up is not None:
        answer = scenario.follow_up(request, turns[0][1])
        if answer is not None:
            turns.append((answer, post(answer)))
    return turns
