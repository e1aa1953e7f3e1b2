"""Complete, meaningful state snapshots for the LangGraph route.

ag-ui-langgraph 0.0.47 builds each STATE_SNAPSHOT from the graph's state, filtered to the keys of
the graph's state schema: a key the client keeps in its state that the graph does not declare
(the demo's sibling ``keep``, an app's own keys) is missing from every snapshot, and a
STATE_SNAPSHOT *replaces* the client's state. The snapshot also carries two of the request's own
fields the bridge keeps in the graph state: ``messages`` (the LangChain transcript, which
MESSAGES_SNAPSHOT already delivers in the protocol's form) and ``tools`` (the tools the client
declared). And it sends one whenever a graph node ends with any change, so two tools running in
parallel put their snapshots wherever timing has them, mostly repeating the state unchanged.

This stage opens every run with the state the client holds (a STATE_SNAPSHOT of the state it
sent, right after RUN_STARTED), lays each of the bridge's snapshots over it without those two
request fields, and sends a snapshot only when it changes what the client holds. So each snapshot
on the wire is the client's whole state, and a new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from ag_ui.core import BaseEvent, EventType, RunAgentInput, StateSnapshotEvent

REQUEST_FIELDS = frozenset({"messages", "tools"})
"""Graph state keys that are the request's own fields, not the client's state."""


async def client_state_snapshots(
    events: AsyncIterator[BaseEvent], run_input: RunAgentInput
) -> AsyncIterator[BaseEvent]:
    """Pass ``events`` through with the client's state opened, completed and never repeated."""
    state = dict(run_input.state) if isinstance(run_input.state, dict) else {}
    async with aclosing(events):
        async for event in events:
            if event.type == EventType.STATE_SNAPSHOT and isinstance(event.snapshot, dict):
                update = {key: value for key, value in event.snapshot.items() if key not in REQUEST_FIELDS}
                if all(key in state and state[key] == value for key, value in update.items()):
                    continue  # nothing the client does not hold already
                state.update(update)
                event = event.model_copy(update={"snapshot": dict(state)})
            yield event
            if event.type == EventType.RUN_STARTED:
                yield StateSnapshotEvent(snapshot=dict(state))
