"""What a client sends: request bodies and the answers to a run, built the way a client builds them.

One place for the shapes every driver of this server needs (the ``agui-verify`` command, the
tests, the load generator, the boot check): a fresh ``RunAgentInput``, the interrupts a run ended
with, the history a client holds after a run, and a resume answering every open interrupt.
"""

from __future__ import annotations

import uuid


def run_input(
    message: str | None = None,
    *,
    thread_id: str | None = None,
    messages: list[dict] | None = None,
    **extra: object,
) -> dict:
    """A RunAgentInput body (wire form) with fresh ids; ``message`` appends one user message and
    ``extra`` sets or replaces any other field (``state``, ``tools``, ``resume``, ...)."""
    history = list(messages or [])
    if message is not None:
        history.append({"id": f"msg-{uuid.uuid4().hex[:12]}", "role": "user", "content": message})
    body: dict = {
        "threadId": thread_id or f"thread-{uuid.uuid4().hex[:12]}",
        "runId": f"run-{uuid.uuid4().hex[:12]}",
        "messages": history,
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    body.update(extra)
    return body


def interrupts(events: list[dict]) -> list[dict]:
    """The interrupts a run ended with (RUN_FINISHED ``outcome.type == "interrupt"``), else none."""
    outcome = (events[-1].get("outcome") or {}) if events else {}
    return outcome.get("interrupts") or [] if outcome.get("type") == "interrupt" else []


def history_after(request: dict, events: list[dict]) -> list[dict]:
    """The messages a client holds after a run: the last MESSAGES_SNAPSHOT replaces what it sent."""
    snapshots = [event["messages"] for event in events if event.get("type") == "MESSAGES_SNAPSHOT"]
    return list(snapshots[-1] if snapshots else request["messages"])


def resume(pending: list[dict], status: str = "resolved", payload: object = None) -> list[dict]:
    """The top-level ``resume`` answering every one of ``pending`` the same way."""
    answer = {"status": status} | ({"payload": payload} if payload is not None else {})
    return [{"interruptId": interrupt["id"], **answer} for interrupt in pending]
