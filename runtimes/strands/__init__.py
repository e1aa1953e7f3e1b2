"""AWS Strands Agents runtime: ``POST /strands/agent`` behind ag-ui-strands.

This module is light on purpose (the registry, the benchmarks and the docs read it); the runtime
itself is imported when the app builds the bridge.
"""

from __future__ import annotations

from runtimes.base import FINISHED, Bridge, Known, Runtime
from runtimes.config import RuntimeSettings
from store import Store


def _build(settings: RuntimeSettings, store: Store) -> Bridge:
    from runtimes.strands.bridge import StrandsBridge

    return StrandsBridge(settings, store, runtime.route)


runtime = Runtime(
    name="strands",
    title="AWS Strands Agents",
    bridge_package="ag-ui-strands",
    packages=("strands-agents",),
    build=_build,
    loggers=("ag_ui_strands", "strands"),
    bare_app="runtimes.strands.bare:bare_app",
    known=Known(
        answers={
            "resume with an unknown interrupt id": ("INTERRUPT_RESUME_ERROR",),
            "partial resume (one of two pending approvals answered)": ("PARTIAL_RESUME",),
            "resume on a thread that never had an interrupt": ("UNKNOWN_INTERRUPT_ID",),
            "resume of an approval already answered, with a different answer": ("UNKNOWN_INTERRUPT_ID",),
            "the same resume sent again after it was answered (replay)": (FINISHED,),
            "resume payload without the approved boolean": ("INVALID_PAYLOAD",),
            "resume payload missing": ("INVALID_PAYLOAD",),
            "resume payload not an object": ("INVALID_PAYLOAD",),
            "resume with an empty list while an approval is pending": ("INTERRUPT_RESUME_ERROR",),
            "resume naming the same interrupt twice": ("INTERRUPT_RESUME_ERROR",),
            "new user input while an approval is pending": ("PENDING_INTERRUPTS",),
            "a second run on a thread while its first run is in flight": ("THREAD_BUSY",),
            # THREAD_BUSY while the first runs; should the first already have finished (a very slow
            # client), the idempotent replay
            "the same resume sent twice at once": ("THREAD_BUSY", FINISHED),
        },
        notes=(
            "ag-ui-strands 0.4.1 emits a tool's state hook result as a STATE_SNAPSHOT of only the keys the "
            "hook returned, which would erase sibling keys on the client; `runtimes/strands/state.py` "
            "merges every snapshot into the run's state, so each snapshot on the wire is complete.",
            "Predictive state is a PredictState CUSTOM event before the tool call (the client fills "
            "`document` from the streamed argument); the bridge sends no STATE_DELTA, and the final "
            "STATE_SNAPSHOT carries the document.",
            "MESSAGES_SNAPSHOT excludes the specialist's messages: a client that replaces its history with "
            "the snapshot keeps the specialist's work only as the attributed events it rendered live.",
            "The bridge emits no SUBAGENT_* events; `emitters/strands.py` translates the specialist's "
            "forwarded stream into them, live.",
            "A rejected approval's result is a TOOL_CALL_RESULT; the bridge also forwards the runtime's "
            "`tool_cancel_event` as a RAW event.",
            "With shared state (`AGUI_STATE_URL`), each thread is a Strands session in the engine "
            "(`runtimes/strands/sessions.py`: `RepositorySessionManager` through the bridge's "
            "`session_manager_provider`, one Redis hash per thread): read before each run, written before each "
            "event goes on, so any replica resumes any thread and none goes on from a copy of its own. It expires "
            "7 days after its last write while an approval waits, 1 day otherwise; when the approval ledger "
            "drops the thread (an eviction, or an approval it refuses to park), it is deleted.",
            "With shared state the conversation is the server's: over a session, ag-ui-strands 0.4.1 gives the "
            "model the session's history and only the newest user message (and frontend tool results) from the "
            "request, instead of rebuilding the history from `messages`. Edits to earlier messages are not "
            "seen, and a thread whose session expired or was evicted starts over from its newest message.",
        ),
    ),
)
"""What ``app.registry`` mounts."""
