"""Whose thread it is: with several named tokens, every principal has threads of its own.

Why: when more than one token may call the server, a thread belongs to the principal that created
it, and another principal's run, resume or reconnect on it must go exactly as on a thread that does
not exist, so that nobody learns which thread ids others use. Namespacing gives exactly that: the
server keeps each thread as ``<principal>:<threadId>``, so another principal naming the same
``threadId`` names another thread (new and empty, on every replica, since every key in the store
and in the bridges is built from the server's name of the thread). The client never sees the
server's name: events that carry a ``threadId`` carry the one it sent. With one token or none,
there is one principal and names are the clients' own.
"""

from __future__ import annotations

from ag_ui.core import BaseEvent, RunAgentInput


def scoped(run_input: RunAgentInput, principal: str) -> RunAgentInput:
    """``run_input`` with its thread as the server keeps it for ``principal`` ("" for the only one)."""
    if not principal:
        return run_input
    return run_input.model_copy(update={"thread_id": f"{principal}:{run_input.thread_id}"})


def as_client_named(event: BaseEvent, thread_id: str) -> BaseEvent:
    """``event`` with the thread named as the client named it."""
    if getattr(event, "thread_id", thread_id) != thread_id:
        return event.model_copy(update={"thread_id": thread_id})
    return event
