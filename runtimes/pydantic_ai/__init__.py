"""Pydantic AI runtime: ``POST /pydantic-ai/agent`` behind pydantic-ai-slim's AG-UI adapter.

This module is light on purpose (the registry, the benchmarks and the docs read it); the runtime
itself is imported when the app builds the bridge. The route's name has a dash, the package an
underscore: nothing derives one from the other.
"""

from __future__ import annotations

from runtimes.base import FINISHED, Bridge, Known, Runtime
from runtimes.config import RuntimeSettings
from store import Store


def _build(settings: RuntimeSettings, store: Store) -> Bridge:
    from runtimes.pydantic_ai.bridge import PydanticAIBridge

    return PydanticAIBridge(settings, store, runtime.route)


runtime = Runtime(
    name="pydantic-ai",
    title="Pydantic AI",
    bridge_package="pydantic-ai-slim",
    build=_build,
    loggers=("pydantic_ai",),
    bare_app="runtimes.pydantic_ai.bare:bare_app",
    known=Known(
        # The shared interrupt gate's answers (runtimes/interrupts.py): the adapter is stateless.
        answers={
            "resume with an unknown interrupt id": ("UNKNOWN_INTERRUPT_ID",),
            "partial resume (one of two pending approvals answered)": ("PARTIAL_RESUME",),
            "resume on a thread that never had an interrupt": ("UNKNOWN_INTERRUPT_ID",),
            "resume of an approval already answered, with a different answer": ("INTERRUPT_ALREADY_ANSWERED",),
            "the same resume sent again after it was answered (replay)": (FINISHED,),
            "resume payload without the approved boolean": ("INVALID_PAYLOAD",),
            "resume payload missing": ("INVALID_PAYLOAD",),
            "resume payload not an object": ("INVALID_PAYLOAD",),
            "resume with an empty list while an approval is pending": ("PARTIAL_RESUME",),
            "resume naming the same interrupt twice": ("DUPLICATE_INTERRUPT_ID",),
            "new user input while an approval is pending": ("PENDING_INTERRUPTS",),
            "a second run on a thread while its first run is in flight": ("THREAD_BUSY",),
            # THREAD_BUSY while the first runs; the replay once it has finished (a very slow client)
            "the same resume sent twice at once": ("THREAD_BUSY", FINISHED),
        },
        notes=(
            "pydantic-ai-slim's AG-UI adapter is stateless (the client's `messages` are the history) and "
            "ends a run that waits for approvals with the standard interrupt outcome (`int-<toolCallId>`, its "
            "own `responseSchema`: `approved`, optional `editedArgs` and `reason`); the shared interrupt gate "
            "(`runtimes/interrupts.py`) adds the strict resume rules per thread.",
            "The adapter emits neither MESSAGES_SNAPSHOT nor a final STATE_SNAPSHOT; the route ends every "
            "completed run with both, from the adapter's own `on_complete` hook (and its `dump_messages`). The "
            "messages exclude the specialist's.",
            "Pydantic AI has no predictive state; the route sends a PredictState CUSTOM event before each "
            "`write_document` call, and the tool's STATE_SNAPSHOT carries the document.",
            "A rejected or cancelled approval gets a TOOL_CALL_RESULT (the adapter's own), followed by a "
            "REASONING_ENCRYPTED_VALUE event recording the `denied` outcome for the adapter's history.",
            "Delegation is Pydantic AI's agent delegation (the specialist runs inside the parent's tool); the "
            "adapter emits no SUBAGENT_* events, so `emitters/pydantic_ai.py` translates the specialist's "
            "`run_stream_events` into them, live. A specialist's approval defers the delegation call itself; "
            "the route shows the specialist's call as the interrupt and continues the specialist on the "
            "resume (`runtimes/pydantic_ai/approvals.py`).",
            "With shared state (`AGUI_STATE_URL`) the paused specialist (its message history, in Pydantic AI's "
            "own `ModelMessagesTypeAdapter` form, and the calls it waits on) is a record in the engine "
            "(`runtimes/pydantic_ai/shared.py`), not in a process: any replica continues it on the resume, and "
            "the approval ledger's eviction on any replica drops it. The rest of a thread is the client's (the "
            "adapter is stateless) or the interrupt gate's, already in the engine. The record expires 30 days and "
            "an hour after the pause (past the gate's record) and is deleted by the resume before the specialist "
            "continues, so a resume whose replica died is never continued twice. A run whose read or write of "
            "it failed ends with STATE_UNAVAILABLE.",
        ),
    ),
)
"""What ``app.registry`` mounts."""
