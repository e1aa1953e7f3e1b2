"""With shared state (``AGUI_STATE_URL``), a specialist paused at its approval waits in the engine.

Why: Pydantic AI's AG-UI adapter is stateless (the client's ``messages`` are the history, its
``resume`` the answers) and the interrupt gate keeps its records in the app's store already. What
the route kept in process memory between runs is the specialist that paused at its own approval
(``runtimes.pydantic_ai.approvals``: its message history and the calls it waits on), continued on
the resume. A resume reaching another replica, or a restarted one, found nothing to continue. So,
when the store is shared, the paused specialists of a thread are one record in it
(:class:`EngineSpecialists`), written through the app's store (``store.Store``: its engine client,
timeouts and ``StoreUnavailable``), never held by a process between runs:

* written when the run that paused them finishes (before RUN_FINISHED goes on, so before the gate
  records the open interrupts and the app's ledger parks the thread);
* read and deleted by the thread's next resume before the specialist continues (so a resume that
  dies midway never continues it twice: its retry is the gate's replay, which runs nothing). A run
  without a ``resume`` cannot answer a paused specialist (the gate refuses it while interrupts are
  open) and reads nothing;
* deleted by :meth:`EngineSpecialists.forget` when the app's approval ledger drops the thread, on
  whichever replica it runs.

No lock is needed: one run per thread at a time on every replica (the thread's lease, ``app.runs``).

The record (:func:`dump`, :func:`load`) is Pydantic AI's own serialization of the specialist's
history (``ModelMessagesTypeAdapter``, its documented way to store messages) and of the calls it
waits on (``ToolCallPart`` through a ``TypeAdapter``), one per paused delegation call, and which
interrupt stands for which call. Key ``agui:<route>:specialists:<thread>``, about 1.7 KB per
paused specialist of the demo (its history: the task, one lookup, the call it waits on). It
expires :data:`PAUSED_TTL_S` after it was written (an hour past the gate's open interrupt, so the
gate never lets a resume through to a specialist that is gone). No private state of
pydantic-ai-slim is used.
"""

from __future__ import annotations

import json

from ag_ui.core import RunAgentInput
from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessagesTypeAdapter, ToolCallPart

from runtimes.interrupts import OPEN_TTL_S
from runtimes.pydantic_ai.approvals import Paused
from runtimes.pydantic_ai.deps import Suspension
from store import Store

PAUSED_TTL_S = OPEN_TTL_S + 3600.0
"""A paused specialist's record: an hour past the interrupt gate's record of its interrupts (30 days)."""
VERSION = 1
"""Bumped when the record's shape changes; a record of another version fails the run, unchanged."""
CALLS = TypeAdapter(list[ToolCallPart])
"""The calls a specialist waits on, as Pydantic AI serializes a message part."""


class EngineSpecialists:
    """The route's paused specialists in ``store`` (shared by every replica), one record per thread
    under ``agui:<route>:specialists:``."""

    def __init__(self, store: Store, route: str) -> None:
        self._store = store
        self._prefix = f"agui:{route}:specialists:"

    async def keep(self, thread_id: str, paused: dict[str, Paused]) -> None:
        if paused:
            await self._store.put(self._prefix + thread_id, dump(paused), ttl_s=PAUSED_TTL_S)

    async def take(self, run_input: RunAgentInput) -> dict[str, Paused]:
        if not run_input.resume:
            return {}
        key = self._prefix + run_input.thread_id
        raw = await self._store.get(key)
        if raw is None:
            return {}
        await self._store.delete(key)  # continued once: never again, whatever happens to this run
        return load(raw)

    async def forget(self, thread_id: str) -> None:
        await self._store.delete(self._prefix + thread_id)

    def threads(self) -> frozenset[str]:
        """None: between runs the process holds no thread's specialists."""
        return frozenset()


def dump(paused: dict[str, Paused]) -> bytes:
    """The record of a thread's paused specialists (``paused``: interrupt id -> what it stands for)."""
    specialists: dict[str, dict[str, object]] = {}
    for where in paused.values():
        if where.parent_tool_call_id not in specialists:
            suspension = where.suspension
            specialists[where.parent_tool_call_id] = {
                "messages": ModelMessagesTypeAdapter.dump_python(suspension.messages, mode="json"),
                "approvals": CALLS.dump_python(suspension.approvals, mode="json"),
            }
    interrupts = {i: [where.parent_tool_call_id, where.tool_call_id] for i, where in paused.items()}
    record = {"v": VERSION, "specialists": specialists, "interrupts": interrupts}
    return json.dumps(record, separators=(",", ":")).encode()


def load(raw: bytes) -> dict[str, Paused]:
    """The paused specialists of the record ``raw`` (each delegation call's one suspension shared by
    its interrupts, as when they paused)."""
    record = json.loads(raw)
    if record.get("v") != VERSION:
        raise RuntimeError(f"a paused-specialist record of version {record.get('v')!r}; this server reads {VERSION}")
    suspensions = {
        parent: Suspension(
            ModelMessagesTypeAdapter.validate_python(data["messages"]), CALLS.validate_python(data["approvals"])
        )
        for parent, data in record["specialists"].items()
    }
    return {i: Paused(parent, call, suspensions[parent]) for i, (parent, call) in record["interrupts"].items()}
