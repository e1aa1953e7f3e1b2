"""The runs every benchmark target is asked to do, as wire-form ``RunAgentInput`` bodies.

One source of truth so the floor, the bare bridges and this project's routes stream the same
conversation. The plain prompt is long on purpose: the offline model quotes it back, so the reply
is ~100 streamed chunks, like a real model's answer, and events/s measures streaming rather than
request setup alone. It avoids every trigger word of ``runtimes.script``.
"""

from __future__ import annotations

import json
import uuid

PLAIN_PROMPT = " ".join(
    [
        "Tell me a little about the sea.",
        *(f"Sentence {n} keeps the tide rolling in over the sand and back out again." for n in range(1, 21)),
    ]
)
DELEGATION_PROMPT = "Research the history of Lisbon"

SCENARIOS: dict[str, str] = {"plain": PLAIN_PROMPT, "delegation": DELEGATION_PROMPT}
"""Scenario name -> the user message that triggers it on the offline model."""

RUNTIMES: tuple[str, ...] = ("strands", "msaf")


def route_of(runtime: str) -> str:
    """The path every runtime route (ours and the bare bridges') is mounted on."""
    return f"/{runtime}/agent"


def run_body(prompt: str, *, thread_id: str | None = None) -> bytes:
    """A fresh ``RunAgentInput`` (new thread and run ids), encoded once, ready to POST."""
    body = {
        "threadId": thread_id or f"bench-{uuid.uuid4().hex[:12]}",
        "runId": f"run-{uuid.uuid4().hex[:12]}",
        "messages": [{"id": f"msg-{uuid.uuid4().hex[:12]}", "role": "user", "content": prompt}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    return json.dumps(body).encode()
