"""LangGraph runtime: ``POST /langgraph/agent`` behind ag-ui-langgraph.

This module is light on purpose (the registry, the benchmarks and the docs read it); the runtime
itself is imported when the app builds the bridge.
"""

from __future__ import annotations

from runtimes.base import Bridge, Known, Runtime
from runtimes.config import RuntimeSettings
from runtimes.interrupts import GATE_ANSWERS
from store import Store


def _build(settings: RuntimeSettings, store: Store) -> Bridge:
    from runtimes.langgraph.bridge import LangGraphBridge

    return LangGraphBridge(settings, store)


runtime = Runtime(
    name="langgraph",
    title="LangGraph",
    bridge_package="ag-ui-langgraph",
    packages=("langgraph",),
    build=_build,
    loggers=("ag_ui_langgraph",),
    bare_app="runtimes.langgraph.bare:bare_app",
    native_subagents=True,
    known=Known(
        # The bridge checks no resume itself; the shared interrupt gate answers (runtimes/interrupts.py).
        answers=GATE_ANSWERS,
        notes=(
            'ag-ui-langgraph emits the subagent surface itself (`subagent_visibility="attributed"`), so the '
            "route has no dialect: the app's subagent emitter stands down on the first native SUBAGENT_* "
            "(tests/test_native_probe.py proves it live). The bridge's subagent lifecycle is written for "
            "deepagents' `task` tool; for any other delegation tool it names the subagent after its checkpoint "
            "namespace (`tools:<task id>`), links no parent tool call, closes it only at the end of the run "
            "(after the parent's TOOL_CALL_RESULT, without an outcome) and never suspends it. "
            "`runtimes/langgraph/subagents.py` puts those rules right at the boundary.",
            "Interrupts use the bridge's own switches: the standard RUN_FINISHED interrupt outcome "
            "(`emit_interrupt_outcome=True`) and no legacy `on_interrupt` CUSTOM event "
            "(`enable_legacy_on_interrupt_event=False`). The bridge checks no resume (an unknown id, a partial "
            "or a replayed resume reach the graph), so the shared interrupt gate enforces the top-level `resume`. "
            "ag-ui-langgraph 0.0.47 resumes two interrupts with a map LangGraph 1.2 refuses; the route resumes "
            "with LangGraph's id-keyed map (`RouteAgent`). A bare `forwardedProps.command.resume` value "
            "(LangGraph's own convention) answers the thread's one open interrupt (with none open it is "
            "refused like any resume that names nothing open).",
            "The bridge filters every STATE_SNAPSHOT to the graph's state schema, dropping the client's other "
            "keys, and includes the LangChain transcript (`messages`) and the request's `tools`; "
            "`runtimes/langgraph/state.py` opens each run with the client's state and lays each snapshot over "
            "it without those two, sending one only when it changes what the client holds (the bridge sends "
            "one whenever a node ends, so parallel tools would place them as timing has it). "
            "Predictive state is a PredictState CUSTOM event before the tool call; the final STATE_SNAPSHOT "
            "carries the document. A successful RUN_FINISHED has no `outcome` (legacy success).",
            "`LangGraphAgent` keeps per-run state on itself (ag-ui#1277): every run gets its own `clone()`, "
            "sharing the compiled graph and the checkpointer (LangGraph's `InMemorySaver`: idle threads bounded "
            "by `AGUI_THREAD_CACHE_SIZE`; a thread waiting for an approval is the approval ledger's to drop).",
            "With shared state (`AGUI_STATE_URL`) the graph's checkpointer is in the engine "
            "(`runtimes/langgraph/engine_saver.py`: a `BaseCheckpointSaver` on plain Redis with LangGraph's own "
            "`JsonPlusSerializer`; langgraph-checkpoint-redis needs the RedisJSON and RediSearch modules, which "
            "Redis 7.0 lacks): LangGraph reads and writes each thread's checkpoints there as the graph runs, and "
            "no process keeps a thread between runs, so a run goes on from the engine's state on any replica. "
            "A thread's keys expire 24 h after its last run, 30 days and an hour after a run that ended waiting "
            "for an approval (the interrupt gate's 30 days, and an hour); the approval ledger's eviction deletes "
            "them from any replica, with the suspended specialist's record. A run during which the engine failed "
            "ends with `STATE_UNAVAILABLE` (the bridge would answer its own RUN_ERROR without a code). A graph step "
            "costs a few engine round trips (read the latest checkpoint, write the next one and its writes).",
            "The bridge catches what the graph raises and answers with a RUN_ERROR without a code; the route "
            "names model failures at the model (`runtimes/langgraph/errors.py`).",
            "On a resume the bridge streams the resumed tool call again (TOOL_CALL_START/ARGS/END, same id) "
            "before its result, since it was not streamed in that run; for a suspended specialist that comes "
            "after the subagent's continuation. The specialist's own tool call ids are the bridge's (unique per "
            "subagent), not `<parent>::<inner>`.",
            "With subagent events off, MESSAGES_SNAPSHOT still tags the specialist's messages with "
            "`subagentRunId`: the bridge reads the tag on the next request to keep those messages out of the "
            "parent's graph state.",
            "On a real model the bridge reads a streamed answer only as OpenAI streams it: one tool call per chunk, "
            "a call's name before its arguments, the finish reason on a chunk of its own (it drops a chunk with a "
            "finish reason whole). Endpoints that send every tool call whole in the final chunk (Ollama, "
            "llama.cpp) would lose arguments and calls on the wire; the route's chat model cuts such chunks into "
            "OpenAI's pieces (`runtimes/langgraph/model.py`).",
        ),
    ),
)
"""What ``app.registry`` mounts."""
