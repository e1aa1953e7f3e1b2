"""Google ADK runtime: ``POST /adk/agent`` behind ag-ui-adk.

This module is light on purpose (the registry, the benchmarks and the docs read it); the runtime
itself is imported when the app builds the bridge.
"""

from __future__ import annotations

from runtimes.base import FINISHED, Bridge, Gap, Known, Runtime
from runtimes.config import RuntimeSettings
from store import Store


def _build(settings: RuntimeSettings, store: Store) -> Bridge:
    from runtimes.adk.bridge import AdkBridge

    return AdkBridge(settings, store)


runtime = Runtime(
    name="adk",
    title="Google ADK",
    bridge_package="ag-ui-adk",
    packages=("google-adk",),
    build=_build,
    loggers=("ag_ui_adk", "google_adk", "google.adk"),
    bare_app="runtimes.adk.bare:bare_app",
    known=Known(
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
            # THREAD_BUSY while the first runs; the replay of the settled answer once it has finished
            "the same resume sent twice at once": ("THREAD_BUSY", FINISHED),
        },
        gaps=(
            Gap(
                "subagent suspended",
                "upstream",
                "google-adk 2.13: an agent used as a tool (`AgentTool`) runs in a nested runner whose session is "
                "discarded when the tool returns, so a call the specialist paused for confirmation can never be "
                "resumed (ADK says so itself and answers the parent with an error text). The server ends the "
                "subagent with SUBAGENT_ERROR code SUBAGENT_APPROVAL_UNSUPPORTED and the parent tells the user; "
                "nothing hangs and nothing runs. ADK's pointer for pausable specialists is a sub-agent in "
                "`mode='single_turn'` (run inline in the parent's session by ADK 2's node runtime), a different "
                "delegation mechanism not used here; whether ag-ui-adk 0.7.1 carries a pause through it is unverified.",
            ),
        ),
        notes=(
            "ag-ui-adk 0.7.1 reports ADK's tool confirmation (`require_confirmation`) as a long-running "
            "`adk_request_confirmation` call plus a placeholder result for the gated call, and an interrupt whose "
            "toolCallId is the confirmation call; `runtimes/adk/interrupts.py` turns it into the standard approval "
            "(reason tool_call, toolCallId = the gated call, responseSchema) and keeps the placeholder result off the "
            "wire. The `adk_request_confirmation` call itself stays on the wire, as the bridge sends it.",
            "Two approvals answered in one resume: the bridge hands ADK one turn per message the answers are anchored "
            "to, and ADK reads only the last turn, so the route puts every resumed confirmation call in one assistant "
            "message; then both answers reach ADK together (approve one, reject the other works).",
            "Predictive state: a PredictState CUSTOM event, then write_document's argument streamed as ADK "
            "`partial_args` chunks (as Gemini 3 streams them), which the bridge follows under a call id of its own; "
            "the document lands in state (STATE_DELTA, final STATE_SNAPSHOT) when the tool runs. On a real "
            "OpenAI-compatible model the route passes on write_document's streamed arguments the same way (one "
            "streamed call per model answer: the bridge follows one at a time); every other call arrives whole.",
            "`AgentTool` runs the specialist unary in a nested runner: its text arrives as one chunk per message. "
            "`emitters/adk.py` (a runner plugin, which AgentTool hands to the nested runner) puts the specialist's "
            "events on the wire live; the bridge emits no SUBAGENT_* events.",
            "MESSAGES_SNAPSHOT is rebuilt from the ADK session with message ids of its own (not the client's); "
            "STATE_SNAPSHOT carried the bridge's bookkeeping keys (`_ag_ui_*`, `pending_tool_calls`), which "
            "`runtimes/adk/state.py` keeps off the wire.",
            "With shared state (`AGUI_STATE_URL`) each thread's ADK session (history, state, the paused "
            "confirmation) lives in the engine, through ADK's own session seam (`runtimes/adk/redis_sessions.py`, "
            "a `BaseSessionService` on plain Redis), and nothing of a thread stays in a process between runs; "
            "so any replica continues any thread. The engine bounds it by time instead of AGUI_THREAD_CACHE_SIZE: "
            "a session expires 24 h after its last write, or 30 days and an hour after a run that ended waiting "
            "for an approval (past the interrupt gate's own record; the approval ledger still bounds how many "
            "wait). A later run on an expired thread starts a fresh history, as a dropped thread does in memory "
            "mode. A run during which the engine failed ends with STATE_UNAVAILABLE.",
        ),
    ),
)
"""What ``app.registry`` mounts."""
