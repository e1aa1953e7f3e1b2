"""The client's shared state without ag-ui-adk's own bookkeeping.

ag-ui-adk 0.7.1 keeps what it needs per thread in the ADK session state (``_ag_ui_thread_id``,
``_ag_ui_app_name``, ``_ag_ui_user_id``, ``pending_tool_calls``, ``lro_tool_call_id_remap``...) and
reports the whole session state in every STATE_SNAPSHOT. A client holds what it is sent and sends
it back with its next run, and the bridge writes the client's state over the session's: a stale
``pending_tool_calls`` coming back would overwrite the bridge's record of the calls waiting for an
answer. :func:`without_bridge_state` (a stage) keeps those keys off the wire; every key the client
or a tool set is untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType, RunAgentInput

BRIDGE_KEYS = frozenset({"pending_tool_calls", "lro_tool_call_id_remap"})
BRIDGE_PREFIX = "_ag_ui_"


def is_bridge_key(key: object) -> bool:
    return isinstance(key, str) and (key in BRIDGE_KEYS or key.startswith(BRIDGE_PREFIX))


async def without_bridge_state(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.STATE_SNAPSHOT and isinstance(event.snapshot, dict):
                snapshot = {key: value for key, value in event.snapshot.items() if not is_bridge_key(key)}
                event = event.model_copy(update={"snapshot": snapshot})
            elif event.type == EventType.STATE_DELTA:
                delta = [op for op in event.delta if not is_bridge_key(_top_key(op))]
                if not delta:
                    continue
                event = event.model_copy(update={"delta": delta})
            yield event


def _top_key(operation: object) -> str:
    """The state key a JSON Patch operation touches (its path's first token)."""
    path = str(operation.get("path", "")) if isinstance(operation, dict) else ""
    tokens = path.split("/")
    return tokens[1] if len(tokens) > 1 else ""
