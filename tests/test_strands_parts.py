"""The Strands route's own parts, below HTTP where that is the honest level: the bounded thread
cache (and that the bridge never loses a paused or busy thread to it), complete snapshots, the
interrupt owner, the scripted model's reading of a conversation, and a failing specialist."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from ag_ui.core import BaseEvent, EventType, Interrupt, RunAgentInput, StateSnapshotEvent, TextMessageStartEvent

import runtimes.strands.model as strands_model
from app.config import Settings
from app.pipeline import RoutePipeline
from emitters.strands import interrupt_owner
from runtimes.script import Reply, Turn
from runtimes.strands import runtime
from runtimes.strands.cache import ThreadAgentCache
from runtimes.strands.model import turn_from_messages
from runtimes.strands.state import complete_snapshots
from store import MemoryStore
from tests.wire import live_server, post_run, run_input, through_pipeline
from verifier import verify_events
from verifier.client import resume

ROUTE = runtime.route

# --- the cache ------------------------------------------------------------------------------


def test_cache_drops_the_least_recently_used_thread_beyond_its_size() -> None:
    evicted: list[str] = []
    cache = ThreadAgentCache(2, pinned=lambda thread, agent: False, on_evict=evicted.append)
    cache["a"], cache["b"] = "A", "B"
    assert cache["a"] == "A"  # a is now the most recently used
    cache["c"] = "C"
    assert list(cache) == ["a", "c"] and evicted == ["b"]


def test_cache_never_drops_a_pinned_thread() -> None:
    cache = ThreadAgentCache(1, pinned=lambda thread, agent: agent == "parked")
    cache["a"] = "parked"
    cache["b"] = "B"
    cache["c"] = "C"
    assert list(cache) == ["a", "c"]  # over size only by the pinned thread


async def _drain(pipeline: RoutePipeline, thread_id: str, message: str | None = None, **body: object) -> list[dict]:
    """One run through the route's pipeline (no HTTP), as the events a client decodes."""
    messages = [{"id": f"m-{thread_id}", "role": "user", "content": message}] if message else []
    data = RunAgentInput.model_validate(run_input(thread_id=thread_id, messages=messages, **body))
    return await through_pipeline(pipeline, data)


async def test_the_bridge_keeps_a_thread_waiting_for_approval_and_forgets_idle_ones() -> None:
    settings = Settings(agui_thread_cache_size=2, agui_script_delay_ms=0)
    store = MemoryStore()
    pipeline = RoutePipeline(runtime, runtime.build(settings, store), settings, store)
    agent = pipeline.bridge._agent
    parked = await _drain(pipeline, "parked", "delete notes.txt")
    (interrupt,) = parked[-1]["outcome"]["interrupts"]
    for thread in ("b", "c", "d"):
        await _drain(pipeline, thread, "Hello")
    assert pipeline.bridge.held_threads().cached == {"parked", "d"}
    answered = await _drain(pipeline, "parked", resume=resume([interrupt], payload={"approved": True}))
    assert answered[-1]["type"] == "RUN_FINISHED"
    assert any(e["type"] == "TOOL_CALL_RESULT" and "Deleted notes.txt." in e["content"] for e in answered)
    for thread in ("e", "f"):
        await _drain(pipeline, thread, "Hello")
    assert pipeline.bridge.held_threads().cached == {"e", "f"}  # answered, the thread is an ordinary one again
    assert "parked" not in agent._last_resume_fingerprint  # and its bridge bookkeeping went with it


# --- state ----------------------------------------------------------------------------------


async def _events(*events: BaseEvent) -> AsyncIterator[BaseEvent]:
    for event in events:
        yield event


async def test_every_snapshot_is_a_merge_into_the_state_so_far() -> None:
    bridge = _events(
        StateSnapshotEvent(snapshot={"keep": 1, "recipe": None}),
        TextMessageStartEvent(message_id="m", role="assistant"),
        StateSnapshotEvent(snapshot={"recipe": {"title": "Soup"}}),
        StateSnapshotEvent(snapshot={"keep": 1, "recipe": {"title": "Soup"}}),
    )
    run_input_ = RunAgentInput.model_validate(run_input("hi"))
    snapshots = [e.snapshot async for e in complete_snapshots(bridge, run_input_) if e.type == EventType.STATE_SNAPSHOT]
    assert snapshots == [{"keep": 1, "recipe": None}] + [{"keep": 1, "recipe": {"title": "Soup"}}] * 2


# --- interrupts -----------------------------------------------------------------------------


def test_interrupt_owner_reads_strands_agent_as_tool_prefix() -> None:
    inner = "v1:before_tool_call:tooluse_inner:f12a"
    assert interrupt_owner(Interrupt(id=f"v1:agent_as_tool:tooluse_P%3Ax:{inner}", reason="tool_call")) == "tooluse_P:x"
    assert interrupt_owner(Interrupt(id=inner, reason="tool_call")) is None


# --- the scripted model's view of a conversation ----------------------------------------------


def test_turn_names_results_by_their_tool_use_and_starts_at_the_latest_user_text() -> None:
    messages = [
        {"role": "user", "content": [{"text": "old question"}]},
        {"role": "assistant", "content": [{"text": "old answer"}]},
        {"role": "user", "content": [{"text": "What's the weather in Oslo?"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {}}}]},
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t1", "status": "success", "content": [{"json": {"city": "Oslo"}}]}}
            ],
        },
    ]
    turn = turn_from_messages(messages, frontend_tools=["change_background"])
    assert turn == Turn("What's the weather in Oslo?", [("get_weather", '{"city": "Oslo"}')], ("change_background",))


# --- a failing specialist ---------------------------------------------------------------------


def test_a_specialist_that_raises_ends_its_subagent_with_subagent_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_step = strands_model.specialist_step

    def exploding(turn: Turn) -> Reply:
        if "explode" in turn.user_text:
            raise RuntimeError("the specialist's model exploded")
        return real_step(turn)

    monkeypatch.setattr(strands_model, "specialist_step", exploding)
    with live_server(Settings(agui_script_delay_ms=1)) as base:
        result = post_run(base, ROUTE, run_input("Research why things explode"))
    assert verify_events(result.events) == []
    (started,) = result.of_type("SUBAGENT_STARTED")
    (error,) = result.of_type("SUBAGENT_ERROR")
    assert error["subagentRunId"] == started["subagentRunId"] and error["code"] == "SPECIALIST_ERROR"
    assert "the specialist's model exploded" in error["message"]
    assert not result.of_type("SUBAGENT_FINISHED")
    types = result.types()
    parent_result = next(
        i
        for i, e in enumerate(result.events)
        if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == started["parentToolCallId"]
    )
    assert types.index("SUBAGENT_ERROR") < parent_result
    assert result.terminal["type"] == "RUN_FINISHED"  # the parent goes on and answers
