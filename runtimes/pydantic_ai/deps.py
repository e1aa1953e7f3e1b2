"""What one run of the Pydantic AI route carries into its tools: its own state and delegations.

Why: the agents are built once and shared by every request, so nothing per request may live on
them. Pydantic AI hands each run its ``deps``; the route makes a new :class:`RunDeps` for every run.
It is a ``StateHandler`` (a dataclass with ``state``), so the AG-UI adapter writes the client's
state into it before the run starts and the tools read and replace it there.

It also carries the research specialists of the run across an approval (``delegation``): those that
paused this run (``suspended``, filled by the delegation tool) and those to continue on a resume
(``continuations``, filled by the bridge from what it kept for the thread).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.tools import DeferredToolResults


@dataclass(frozen=True)
class Suspension:
    """A specialist run that ended waiting for approvals: its history and the calls it waits on."""

    messages: list[ModelMessage]
    approvals: list[ToolCallPart]


@dataclass(frozen=True)
class Continuation:
    """How to continue a suspended specialist: its history and the answers to its calls."""

    messages: list[ModelMessage]
    results: DeferredToolResults


@dataclass
class RunDeps:
    """One run's dependencies; ``state`` is the client's shared state (Pydantic AI's ``StateHandler``)."""

    state: dict[str, Any] = field(default_factory=dict)
    suspended: dict[str, Suspension] = field(default_factory=dict)
    """Specialists that paused in this run, by the delegation call's id."""
    continuations: dict[str, Continuation] = field(default_factory=dict)
    """Specialists this run continues, by the delegation call's id."""
