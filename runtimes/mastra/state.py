"""Shared and predictive state on the Mastra route.

@ag-ui/mastra 1.1.2 carries the client's state only as Mastra *working memory*: it writes the
request's state into the agent's memory before the run and sends the memory back as a
STATE_SNAPSHOT after it, and only the working-memory tool streams predictively. That needs a
Mastra Memory with storage per thread, which then also keeps each thread's messages and
deduplicates the client's history against them. The route keeps the sidecar free of per-thread
memory (the client's messages are the history, as on the other routes) and puts the state tools'
effect on the wire here instead:

* every run opens with the request's state (a STATE_SNAPSHOT, as the other routes' bridges send)
  and a PredictState CUSTOM event: ``write_document``'s ``document`` argument is the state key
  ``document`` while it streams (a client fills it in from TOOL_CALL_ARGS);
* when ``update_recipe`` or ``write_document`` has run (its TOOL_CALL_RESULT), a STATE_SNAPSHOT of
  the request's state with that key set from the call's arguments: every other key is kept.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, CustomEvent, EventType, RunAgentInput, StateSnapshotEvent

from runtimes import script

STATE_TOOLS = {script.UPDATE_RECIPE: ("recipe", "recipe"), script.WRITE_DOCUMENT: ("document", "document")}
"""Tool -> (the state key it sets, the argument that holds the value)."""
PREDICT_STATE = [{"state_key": "document", "tool": script.WRITE_DOCUMENT, "tool_argument": "document"}]


async def shared_state(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    state = copy.deepcopy(run_input.state) if isinstance(run_input.state, dict) else {}
    calls: dict[str, tuple[str, str]] = {}
    arguments: dict[str, str] = {}
    async with aclosing(events):
        async for event in events:
            yield event
            kind = event.type
            if kind == EventType.RUN_STARTED:
                yield StateSnapshotEvent(snapshot=copy.deepcopy(state))
                yield CustomEvent(name="PredictState", value=PREDICT_STATE)
            elif kind == EventType.TOOL_CALL_START and event.tool_call_name in STATE_TOOLS:
                calls[event.tool_call_id] = STATE_TOOLS[event.tool_call_name]
                arguments[event.tool_call_id] = ""
            elif kind == EventType.TOOL_CALL_ARGS and event.tool_call_id in arguments:
                arguments[event.tool_call_id] += event.delta
            elif kind == EventType.TOOL_CALL_RESULT and event.tool_call_id in calls:
                key, argument = calls.pop(event.tool_call_id)
                try:
                    value = json.loads(arguments.pop(event.tool_call_id))[argument]
                except (ValueError, KeyError, TypeError):
                    continue
                state[key] = value
                yield StateSnapshotEvent(snapshot=copy.deepcopy(state))
