"""Complete state snapshots for the Strands route.

ag-ui-strands 0.4.1 emits a tool's ``state_from_args`` / ``state_from_result`` return value as a
STATE_SNAPSHOT of only the keys the hook returned, and a STATE_SNAPSHOT *replaces* the client's
state: until the run's final snapshot, the client loses every sibling key. This wrapper tracks
the run's state and rewrites every snapshot as a merge into it (the same shallow merge the bridge
applies to its own ``current_state``), so every snapshot on the wire is the complete state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType, RunAgentInput


async def complete_snapshots(events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
    """Pass ``events`` through, with every STATE_SNAPSHOT merged into the state so far."""
    state: dict = {}
    async with aclosing(events):  # closing promptly releases the bridge's per-thread busy slot
        async for event in events:
            if event.type == EventType.STATE_SNAPSHOT and isinstance(event.snapshot, dict):
                state = {**state, **event.snapshot}
                event = event.model_copy(update={"snapshot": dict(state)})
            yield event
