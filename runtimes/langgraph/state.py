"""Complete state snapshots for the LangGraph route.

ag-ui-langgraph 0.0.47 builds each STATE_SNAPSHOT from the graph's state, filtered to the keys of
the graph's state schema: a key the client keeps in its state that the graph does not declare
(the demo's sibling ``keep``, an app's own keys) is missing from every snapshot, and a
STATE_SNAPSHOT *replaces* the client's state. The snapshot also carries two of the request's own
fields the bridge keeps in the graph state: ``messages`` (the LangChain transcript, which
MESSAGES_SNAPSHOT already delivers in the protocol's form) and ``tools`` (the tools the client
declared). This stage lays every snapshot over the state the client sent (and the run's snapshots
so far), without those two, so each snapshot on the wire is the client's whole state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType, RunAgentInput

REQUEST_FIELDS = frozenset({"messages", "tools"})
"""Graph state keys that are the request's own fields, not the client's state."""


async def client_state_snapshots(
    events: AsyncIterator[BaseEvent], run_input: RunAgentInput
) -> AsyncIterator[BaseEvent]:
    """Pass ``events`` through, every STATE_SNAPSHOT laid over the client's state so far."""
    state = dict(run_input.state) if isinstance(run_input.state, dict) else {}
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.STATE_SNAPSHOT and isinstance(event.snapshot, dict):
                state.update((key, value) for key, value in event.snapshot.items() if key not in REQUEST_FIELDS)
                event = event.model_copy(update={"snapshot": dict(state)})
            yield event
