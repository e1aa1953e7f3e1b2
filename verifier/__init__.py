"""AG-UI event-stream verifier (Python port of ``@ag-ui/client``'s ``verifyEvents`` plus thread rules).

``verify_events(events)`` checks one SSE response; ``verify_thread([run1, run2])`` or a
:class:`ThreadVerifier` checks the responses of one thread in order (interrupt, then resume).
Every function returns a list of human-readable problems; an empty list means valid.
"""

from verifier.core import ThreadVerifier, verify_events, verify_thread
from verifier.sse import parse_sse

__all__ = ["ThreadVerifier", "parse_sse", "verify_events", "verify_thread"]
