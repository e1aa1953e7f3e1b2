"""Microsoft Agent Framework runtime: ``POST /msaf/agent`` behind agent-framework-ag-ui.

This module is light on purpose (the registry, the benchmarks and the docs read it); the runtime
itself is imported when the app builds the bridge.
"""

from __future__ import annotations

from runtimes.base import FINISHED, Bridge, Gap, Known, Runtime
from runtimes.config import RuntimeSettings
from store import Store


def _build(settings: RuntimeSettings, store: Store) -> Bridge:
    from runtimes.msaf.bridge import MsafBridge

    return MsafBridge(settings, store, runtime.route)


MIXED_APPROVALS = (
    "agent-framework-ag-ui 1.7.0: approving one and rejecting the other of two parallel approvals "
    "re-raises the rejected one as a new interrupt, never runs the approved one, and closes a tool "
    "call it never opened on the resume (TOOL_CALL_END without TOOL_CALL_START)."
)

runtime = Runtime(
    name="msaf",
    title="Microsoft Agent Framework",
    bridge_package="agent-framework-ag-ui",
    packages=("agent-framework-core",),
    build=_build,
    loggers=("agent_framework", "agent_framework_ag_ui"),
    bare_app="runtimes.msaf.bare:bare_app",
    known=Known(
        answers={
            "resume with an unknown interrupt id": ("APPROVAL_RESUME_NOT_FOUND",),
            "partial resume (one of two pending approvals answered)": ("APPROVAL_RESUME_MISSING_INTERRUPT",),
            "resume on a thread that never had an interrupt": ("APPROVAL_RESUME_NOT_FOUND",),
            "resume of an approval already answered, with a different answer": ("APPROVAL_RESUME_INVALID",),
            "the same resume sent again after it was answered (replay)": (FINISHED,),
            "resume payload without the approved boolean": ("APPROVAL_RESUME_INVALID",),
            "resume payload missing": ("APPROVAL_RESUME_INVALID",),
            "resume payload not an object": ("APPROVAL_RESUME_INVALID",),
            "resume with an empty list while an approval is pending": ("APPROVAL_RESUME_INVALID",),
            "resume naming the same interrupt twice": ("APPROVAL_RESUME_INVALID",),
            "new user input while an approval is pending": ("APPROVAL_RESUME_REQUIRED",),
            "a second run on a thread while its first run is in flight": ("THREAD_BUSY",),
            # THREAD_BUSY while the first runs; once it has finished, the bridge replays the stored
            # result; never a second execution
            "the same resume sent twice at once": ("THREAD_BUSY", FINISHED),
        },
        gaps=(
            Gap(
                "approval (interrupt + resume)",
                "upstream",
                f"{MIXED_APPROVALS} Single approvals (approve, reject, cancel) and same-answer pairs work. "
                "Strict xfail in tests/test_msaf_approvals.py.",
            ),
            Gap(
                "subagent suspended",
                "upstream",
                "agent-framework-core 1.23: an agent used as a tool (`as_tool`) raises ToolExecutionException when "
                "the specialist asks for approval instead of carrying the request to the parent run, so there is "
                "nothing to suspend. The server ends the subagent with SUBAGENT_ERROR code "
                "SUBAGENT_APPROVAL_UNSUPPORTED and the parent tells the user; nothing hangs and nothing runs.",
            ),
        ),
        notes=(
            "Specialist approvals are not propagated by `as_tool` (agent_framework core raises "
            "ToolExecutionException): the subagent ends with SUBAGENT_ERROR SUBAGENT_APPROVAL_UNSUPPORTED.",
            "Mixed decisions on two parallel approvals are broken upstream (see the gaps); the Python "
            "verifier and the published client both reject that resume stream, and "
            "`tests/test_captures.py` expects them to until the bridge is fixed.",
            "A rejected approval's result reaches the client only in MESSAGES_SNAPSHOT (no TOOL_CALL_RESULT "
            "event). A cancelled one gets a TOOL_CALL_RESULT and a reply from `runtimes/msaf/cancel.py`: "
            "the bridge alone answers an all-cancelled resume with RUN_STARTED, RUN_FINISHED and nothing else.",
            "Every run opens with a PredictState CUSTOM event and a STATE_SNAPSHOT of the state schema's "
            "defaults (`document`, `recipe`); the bridge omits `outcome` on a successful RUN_FINISHED "
            '(legacy success), so the route adds `{type: "success"}` as Strands sends it.',
            "agent-framework-ag-ui 1.7.0 shows the model the client's state as a user message inserted before "
            "the request's last user message; on an approved resume that message lands between the assistant's "
            "tool call and its result, a conversation OpenAI and other strict servers refuse (HTTP 400). "
            "`runtimes/msaf/conversation.py` moves it before the turn's user message; the state still reaches "
            "the model, as user content.",
            "With shared state (AGUI_STATE_URL) a thread's approvals (agent-framework-ag-ui's approval lifecycle "
            "and tool-approval state, the route's gated calls) live in the engine between runs, one record per "
            "thread that asked for one (`agui:/msaf/agent:approvals:<thread>`, about 1.5 KB per waiting approval "
            "and 2.5 KB per settled one; 7 days while one waits, 5 minutes once settled): each run loads it into an "
            "approval store of its own and writes it back before its terminal event (`runtimes/msaf/shared.py`), so "
            "any replica answers a resume, a replay or a refusal as one process would, with the same codes. A run "
            "that starts while an approval waits takes it out of the engine until it ends: if its replica dies (or "
            "the engine fails) before that, a retry gets APPROVAL_RESUME_NOT_FOUND, and an approved tool never "
            "runs twice.",
            "The bridge emits no SUBAGENT_* events and holds the delegating call's TOOL_CALL_END back until "
            "its result; `emitters/msaf.py` merges the specialist's in-process updates into the stream, "
            "live, and the emitter core closes the call before SUBAGENT_STARTED and drops the late duplicate.",
        ),
        invalid_captures={
            "approval_mixed": f"{MIXED_APPROVALS} (docs/matrix.md, gaps; strict xfail in tests/test_msaf_approvals.py)"
        },
    ),
)
"""What ``app.registry`` mounts."""
