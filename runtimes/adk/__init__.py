"""Google ADK runtime: ``POST /adk/agent`` behind ag-ui-adk.

This module is light on purpose (the registry, the benchmarks and the docs read it); the runtime
itself is imported when the app builds the bridge.
"""

from __future__ import annotations

from runtimes.base import FINISHED, Bridge, Gap, Known, Runtime
from runtimes.config import RuntimeSettings


def _build(settings: RuntimeSettings) -> Bridge:
    from runtimes.adk.bridge import AdkBridge

    return AdkBridge(settings)


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
                "nothing hangs and nothing runs.",
            ),
        ),
        notes=(),
    ),
)
"""What ``app.registry`` mounts."""
