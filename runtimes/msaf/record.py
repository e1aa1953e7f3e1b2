"""One thread's approval state of agent-framework-ag-ui, as a JSON record another process can load.

Why: the runner keeps what a resume is checked against (which approvals are pending, how settled
ones were answered and what their tools returned, the approval middleware's state) in an approval
store it builds in process memory (``InMemoryAGUIApprovalStateStore``, agent-framework-ag-ui
1.7.0), with no persistence seam (``snapshot_store`` is not one: it carries the transcript, and a
replica whose lifecycle lacks an approval retires it). With shared state (``runtimes.msaf.shared``)
a run loads its thread's record into a store of its own and writes the store back as a record.

:func:`dump` and :func:`load` move, exactly, everything a store holds for one thread: the
lifecycle's occurrences (``ApprovalOccurrence``, with their decision and outcome; tool results as
``Content.to_dict``, the upstream persistence form), the lifecycle's two interrupt indexes, the
tool-approval state, and the route's own gated calls (``cancel.GatedCall``). The occurrences keep
their identity (its ``occurrence_id`` is written into collected approval responses).

Private state of agent-framework-ag-ui 1.7.0 used here, because the lifecycle offers no other way
to add or list an occurrence with its identity: ``ApprovalLifecycle._occurrences``,
``_pending_by_interrupt``, ``_terminal_by_interrupt`` and ``_locks_by_identity``; and the fields
of its dataclasses, which this codec names one by one. :func:`require_private` fails the bridge's
construction if any of them changed, so an upgrade breaks the boot and the suite, not a resume.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from threading import RLock
from typing import Any

from agent_framework import Content
from agent_framework_ag_ui._approval_lifecycle import (
    ApprovalExecutionOwner,
    ApprovalLifecycle,
    ApprovalOccurrence,
    ApprovalOccurrenceIdentity,
    ApprovalOutcome,
    ApprovalSnapshotReconciliation,
    ApprovalStatus,
    ReplayableToolResult,
    ResumeDecision,
)
from agent_framework_ag_ui._approval_state import (
    DEFAULT_INDETERMINATE_RETENTION_SECONDS,
    DEFAULT_PENDING_RETENTION_SECONDS,
    InMemoryAGUIApprovalStateStore,
    approval_state_thread_id,
)

from runtimes.msaf.cancel import GatedCall, PendingApprovals

APPROVAL_STORE_ENTRIES = 50_000
"""Room for every approval the app's ledger may park, and for settled ones: the upstream store
refuses every new approval once it is full (its own default, 10,000 kept a day, a flood filled)."""
SETTLED_RETENTION_S = 300.0
"""How long a settled approval is kept against a duplicate execution (its replay repeats the result)."""
INDETERMINATE_RETENTION_S = float(DEFAULT_INDETERMINATE_RETENTION_SECONDS)
"""How long an approval that may have run without a result is kept (upstream's default, 7 days)."""
VERSION = 1
"""Bumped when the record's shape changes; a record of another version fails the run, unchanged."""
LIFECYCLE_INDEXES = ("_occurrences", "_pending_by_interrupt", "_terminal_by_interrupt", "_locks_by_identity")
"""The private dicts of ``ApprovalLifecycle`` read and written here."""
FIELDS: dict[type, frozenset[str]] = {
    ApprovalOccurrence: frozenset(
        {
            "identity",
            "thread_ids",
            "name",
            "arguments",
            "owner",
            "function_call_id",
            "active_interrupt_id",
            "scope",
            "aliases",
            "response_id",
            "already_approved_requests",
            "server_label",
            "idempotency_key",
            "requires_client_resume",
            "status",
            "pending_since",
            "replayable_results",
            "decision",
            "outcome",
            "terminal_at",
        }
    ),
    ApprovalOccurrenceIdentity: frozenset({"thread_id", "occurrence_id", "interrupt_id", "call_id"}),
    ResumeDecision: frozenset({"interrupt_id", "accepted", "arguments", "name", "original_arguments"}),
    ApprovalOutcome: frozenset({"identity", "replayable_results", "result_group", "snapshot_reconciliation"}),
    ApprovalSnapshotReconciliation: frozenset({"interrupt_id", "identity", "status", "retire_interrupt"}),
    ReplayableToolResult: frozenset({"content"}),
}
"""The upstream dataclasses this codec writes, with the fields it knows."""
HELD = frozenset({ApprovalStatus.PENDING, ApprovalStatus.CLAIMED, ApprovalStatus.EXECUTING})
"""Statuses whose aliases sit in the lifecycle's pending index (the others are terminal)."""


def approval_store(*, wall_clock: bool = False) -> InMemoryAGUIApprovalStateStore:
    """The approval store the route's runner uses. ``wall_clock``: its lifecycle times approvals by
    the wall clock (upstream's default, ``monotonic``, means nothing in another process or host),
    for a store whose records other processes load."""
    store = InMemoryAGUIApprovalStateStore(
        max_entries=APPROVAL_STORE_ENTRIES, terminal_retention_seconds=SETTLED_RETENTION_S
    )
    if wall_clock:
        store.lifecycle = ApprovalLifecycle(
            max_entries=APPROVAL_STORE_ENTRIES,
            pending_retention_seconds=DEFAULT_PENDING_RETENTION_SECONDS,
            indeterminate_retention_seconds=INDETERMINATE_RETENTION_S,
            terminal_retention_seconds=SETTLED_RETENTION_S,
            clock=time.time,
        )
    return store


def require_private() -> None:
    """Fail now if agent-framework-ag-ui no longer has what this codec reads and writes."""
    lifecycle = ApprovalLifecycle()
    missing = [name for name in LIFECYCLE_INDEXES if not isinstance(getattr(lifecycle, name, None), dict)]
    missing += [
        f"{kind.__name__} fields {sorted(known ^ {f.name for f in dataclasses.fields(kind)})}"
        for kind, known in FIELDS.items()
        if known != {f.name for f in dataclasses.fields(kind)}
    ]
    if missing:
        raise RuntimeError(f"agent-framework-ag-ui changed: {'; '.join(missing)} (read by runtimes/msaf/record.py)")


@dataclass
class ThreadApprovals:
    """What one run of a thread works with: a store of its own (the runner checks the resume
    against it and records new approvals in it) and the route's gated calls of the thread."""

    thread_id: str
    store: InMemoryAGUIApprovalStateStore
    pending: PendingApprovals = field(default_factory=PendingApprovals)

    @property
    def key(self) -> str:
        """The thread's key in the runner's store (the route runs unscoped: no approval scope)."""
        return approval_state_thread_id(scope=None, thread_id=self.thread_id)

    def waiting(self) -> bool:
        """Some approval of the thread still waits for its answer (or is being run)."""
        return any(o.status in HELD for o in self.store.lifecycle.occurrences_for_thread(thread_id=self.key))

    def paused(self) -> bool:
        """The record must outlive the settled-result window: something waits, or may have run
        without a result (``INDETERMINATE``, kept for the lifecycle's indeterminate retention)."""
        statuses = {o.status for o in self.store.lifecycle.occurrences_for_thread(thread_id=self.key)}
        return bool(statuses & (HELD | {ApprovalStatus.INDETERMINATE}))


def dump(approvals: ThreadApprovals) -> bytes | None:
    """The thread's record, or None when the store holds nothing of it."""
    lifecycle = approvals.store.lifecycle
    occurrences = list(lifecycle.occurrences_for_thread(thread_id=approvals.key))  # purges expired ones first
    tool_state = approvals.store.get_tool_approval_state(approvals.key)
    gated = approvals.pending.get(approvals.thread_id)
    if not occurrences and tool_state is None and not gated:
        return None
    number = {o.identity: i for i, o in enumerate(occurrences)}

    def index(entries: Mapping[tuple[str, str], ApprovalOccurrenceIdentity]) -> list[list[Any]]:
        return [[thread, alias, number[at]] for (thread, alias), at in entries.items() if at in number]

    record = {
        "v": VERSION,
        "occurrences": [_occurrence(o) for o in occurrences],
        "pending": index(lifecycle._pending_by_interrupt),
        "terminal": index(lifecycle._terminal_by_interrupt),
        "tool_state": tool_state,
        "gated": {i: dataclasses.asdict(call) for i, call in gated.items()},
    }
    return json.dumps(record, separators=(",", ":")).encode()


def load(raw: bytes | None, approvals: ThreadApprovals) -> None:
    """Put the record ``raw`` into ``approvals`` (a fresh store: nothing of another thread in it)."""
    if raw is None:
        return
    record = json.loads(raw)
    if record.get("v") != VERSION:
        raise RuntimeError(f"an approval record of version {record.get('v')!r}; this server reads {VERSION}")
    lifecycle = approvals.store.lifecycle
    occurrences = [_occurrence_from(data) for data in record["occurrences"]]
    for occurrence in occurrences:
        lifecycle._occurrences[occurrence.identity] = occurrence
        lifecycle._locks_by_identity[occurrence.identity] = RLock()
    for thread, alias, i in record["pending"]:
        lifecycle._pending_by_interrupt[(thread, alias)] = occurrences[i].identity
    for thread, alias, i in record["terminal"]:
        lifecycle._terminal_by_interrupt[(thread, alias)] = occurrences[i].identity
    if record["tool_state"] is not None:
        approvals.store.set_tool_approval_state(approvals.key, record["tool_state"])
    approvals.pending.put(approvals.thread_id, {i: GatedCall(**call) for i, call in record["gated"].items()})


def _occurrence(o: ApprovalOccurrence) -> dict[str, Any]:
    return {
        "identity": dataclasses.asdict(o.identity),
        "thread_ids": list(o.thread_ids),
        "name": o.name,
        "arguments": o.arguments,
        "owner": o.owner.value,
        "function_call_id": o.function_call_id,
        "active_interrupt_id": o.active_interrupt_id,
        "scope": o.scope,
        "aliases": list(o.aliases),
        "response_id": o.response_id,
        "already_approved_requests": list(o.already_approved_requests),
        "server_label": o.server_label,
        "idempotency_key": o.idempotency_key,
        "requires_client_resume": o.requires_client_resume,
        "status": o.status.value,
        "pending_since": o.pending_since,
        "replayable_results": [r.content.to_dict() for r in o.replayable_results],
        "decision": dataclasses.asdict(o.decision) if o.decision is not None else None,
        "outcome": _outcome(o.outcome) if o.outcome is not None else None,
        "terminal_at": o.terminal_at,
    }


def _occurrence_from(data: dict[str, Any]) -> ApprovalOccurrence:
    return ApprovalOccurrence(
        **{
            **data,
            "identity": ApprovalOccurrenceIdentity(**data["identity"]),
            "thread_ids": tuple(data["thread_ids"]),
            "owner": ApprovalExecutionOwner(data["owner"]),
            "aliases": tuple(data["aliases"]),
            "already_approved_requests": tuple(data["already_approved_requests"]),
            "status": ApprovalStatus(data["status"]),
            "replayable_results": [ReplayableToolResult(Content.from_dict(c)) for c in data["replayable_results"]],
            "decision": ResumeDecision(**data["decision"]) if data["decision"] is not None else None,
            "outcome": _outcome_from(data["outcome"]) if data["outcome"] is not None else None,
        }
    )


def _outcome(outcome: ApprovalOutcome) -> dict[str, Any]:
    reconciliation = outcome.snapshot_reconciliation
    return {
        "identity": dataclasses.asdict(outcome.identity),
        "replayable_results": [r.content.to_dict() for r in outcome.replayable_results],
        "result_group": [c.to_dict() for c in outcome.result_group],
        "reconciliation": {
            "interrupt_id": reconciliation.interrupt_id,
            "identity": dataclasses.asdict(reconciliation.identity) if reconciliation.identity is not None else None,
            "status": reconciliation.status.value if reconciliation.status is not None else None,
            "retire_interrupt": reconciliation.retire_interrupt,
        },
    }


def _outcome_from(data: dict[str, Any]) -> ApprovalOutcome:
    reconciliation = data["reconciliation"]
    return ApprovalOutcome(
        identity=ApprovalOccurrenceIdentity(**data["identity"]),
        replayable_results=tuple(ReplayableToolResult(Content.from_dict(c)) for c in data["replayable_results"]),
        result_group=tuple(Content.from_dict(c) for c in data["result_group"]),
        snapshot_reconciliation=ApprovalSnapshotReconciliation(
            interrupt_id=reconciliation["interrupt_id"],
            identity=ApprovalOccurrenceIdentity(**reconciliation["identity"])
            if reconciliation["identity"] is not None
            else None,
            status=ApprovalStatus(reconciliation["status"]) if reconciliation["status"] is not None else None,
            retire_interrupt=reconciliation["retire_interrupt"],
        ),
    )
