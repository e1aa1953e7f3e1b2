"""The runs every benchmark target is asked to do, as wire-form ``RunAgentInput`` bodies.

One source of truth so the floor, the bare bridges and this project's routes stream the same
conversation. The plain prompt is long on purpose: the offline model quotes it back, so the reply
is ~100 streamed chunks, like a real model's answer, and events/s measures streaming rather than
request setup alone. It avoids every trigger word of ``runtimes.script``.
"""

from __future__ import annotations

import json

from app.registry import RUNTIMES as REGISTERED
from verifier.client import run_input

PLAIN_PROMPT = " ".join(
    [
        "Tell me a little about the sea.",
        *(f"Sentence {n} keeps the tide rolling in over the sand and back out again." for n in range(1, 21)),
    ]
)
DELEGATION_PROMPT = "Research the history of Lisbon"
WARMUP_PROMPT = "Hello there!"
"""A short streamed reply: warms a paced server up in a few chunks."""

SCENARIOS: dict[str, str] = {"plain": PLAIN_PROMPT, "delegation": DELEGATION_PROMPT}
"""Scenario name -> the user message that triggers it on the offline model."""

RUNTIMES: dict[str, str] = {runtime.name: runtime.route for runtime in REGISTERED}
"""Runtime name -> the path its route (ours and its bare bridge's) is mounted on."""
BARE_APPS: dict[str, str] = {runtime.name: runtime.bare_app for runtime in REGISTERED}
"""Runtime name -> the ``module:factory`` of its bare bridge app."""
BARE_COMMANDS: dict[str, tuple[str, ...]] = {runtime.name: runtime.bare_command for runtime in REGISTERED}
"""Runtime name -> the command serving its bare bridge on ``{port}`` (a bridge that is not a Python app)."""


def route_of(runtime: str) -> str:
    return RUNTIMES[runtime]


def run_body(prompt: str) -> bytes:
    """A fresh ``RunAgentInput`` (new thread and run ids), encoded once, ready to POST."""
    return json.dumps(run_input(prompt)).encode()
