"""The ADK route's threads with shared state (``AGUI_STATE_URL``): the engine holds them, no process does.

Why: with several workers or replicas a run of a thread may land on any of them, and the run
before it may have been anywhere. So, when the store is shared:

* each thread's ADK session lives in the engine (``runtimes.adk.redis_sessions``), bounded by time
  instead of by ``AGUI_THREAD_CACHE_SIZE``: :data:`IDLE_TTL_S` after its last write, and
  :data:`PAUSED_TTL_S` once a run ends waiting for an approval (a little longer than the interrupt
  gate keeps the open interrupt, so the gate never lets a resume through to a session that is gone;
  the app's approval ledger bounds how many wait, and drops one through :meth:`SharedThreads.forget`);
* nothing of a thread stays in this process between runs: ag-ui-adk's per-thread bookkeeping (its
  session lookup cache, open interrupts, executions, and the session manager's processed-message
  marks) is dropped when a run starts and when it ends. Each run starts from the engine's state, the
  way a replica that never saw the thread does; ag-ui-adk 0.7.1 plans for that ("multi-instance":
  it finds the session through the session service, reads pending calls from session state, and of
  a history it has no marks for, hands ADK only the newest user message);
* the bridge's restart heuristic (``ADKAgent._verify_pending_tool_calls``) is off: on a thread's
  first run in a process it clears the session's pending calls "when no execution is active on this
  instance", which with replicas is every time, and would drop what another replica paused for;
* a thread's session is found with one read at its thread's id (:class:`SharedSessions`), never by
  listing every session;
* a run during which the engine failed ends with ``STATE_UNAVAILABLE`` (the pipeline's code for a
  ``store.StoreUnavailable``), even where ag-ui-adk logged the failure and went on.

Private parts of ag-ui-adk 0.7.1 used here, checked at construction (:func:`require_private`):
``ADKAgent._sessions_verified_locally`` and the per-thread dicts ``runtimes.adk.sessions`` already
forgets, and ``SessionManager._untrack_session``, the one way to drop the manager's tracking and
processed-message marks of a thread without touching its session.
"""

from __future__ import annotations

from ag_ui.core import BaseEvent, EventType
from ag_ui_adk import ADKAgent, SessionManager

from runtimes.adk import redis_sessions
from runtimes.adk.redis_sessions import RedisSessions
from runtimes.adk.sessions import CountBoundedSessions, drop_bookkeeping
from runtimes.interrupts import OPEN_TTL_S

IDLE_TTL_S = 24 * 3600.0
"""A thread's session lives this long after its last write: a day's pause in a conversation keeps
its history (memory mode keeps the 256 most recent threads instead)."""
PAUSED_TTL_S = OPEN_TTL_S + 3600.0
"""A thread waiting for an approval: an hour past the interrupt gate's record of it (30 days)."""


def engine_sessions(url: str) -> RedisSessions:
    """The route's ADK session service in the engine at ``url``."""
    return RedisSessions(url, ttl_s=IDLE_TTL_S, longest_ttl_s=PAUSED_TTL_S)


class SharedSessions(CountBoundedSessions):
    """The bridge's session manager over the engine's sessions."""

    async def resolve_existing_session(self, thread_id: str, app_name: str, user_id: str) -> object | None:
        """The thread's session: the one at its id (every session here is created there). The
        upstream lookup would then list every session of the user for a thread it has not seen,
        which in the engine is a scan."""
        return await self.get_session(thread_id, app_name, user_id, raise_on_error=True)


class SharedThreads:
    """The route's threads in the engine; this process holds a thread only while running it."""

    def __init__(self, agent: ADKAgent, sessions: RedisSessions, *, app_name: str, user_id: str) -> None:
        require_private()
        self._agent = agent
        self._sessions = sessions
        self._app_name = app_name
        self._user_id = user_id
        self.running: set[str] = set()

    def started(self, thread_id: str) -> None:
        redis_sessions.watch()
        self._drop(thread_id)
        self._agent._sessions_verified_locally.add((thread_id, self._user_id, self._app_name))
        self.running.add(thread_id)

    async def finishing(self, thread_id: str, terminal: BaseEvent) -> None:
        """Fail the run if the engine failed during it; keep a thread that waits for an approval."""
        failed = redis_sessions.failure()
        if failed is not None:
            raise failed
        if terminal.type == EventType.RUN_FINISHED and getattr(terminal.outcome, "interrupts", None):
            await self._sessions.keep(
                app_name=self._app_name, user_id=self._user_id, session_id=thread_id, ttl_s=PAUSED_TTL_S
            )

    async def ended(self, thread_id: str) -> None:
        self.running.discard(thread_id)
        self._drop(thread_id)

    async def forget(self, thread_id: str) -> None:
        """Delete the thread's session from the engine now: nothing writes it any more (the ledger
        asks once the run's RUN_FINISHED is out, or for a thread whose lease nobody holds)."""
        await self._sessions.delete_session(app_name=self._app_name, user_id=self._user_id, session_id=thread_id)

    def cached(self) -> frozenset[str]:
        return frozenset()

    def _drop(self, thread_id: str) -> None:
        """Forget this process's bookkeeping of the thread, never its session."""
        drop_bookkeeping(self._agent, (thread_id, self._user_id, self._app_name))
        session_key = (self._app_name, self._user_id, thread_id)
        self._agent._session_manager._untrack_session(session_key, self._user_id, thread_id=thread_id)


def require_private() -> None:
    """Fail now if ag-ui-adk no longer has what this module reaches into beyond what
    ``sessions.require_private`` checks."""
    if not hasattr(SessionManager, "_untrack_session"):
        raise RuntimeError("ag-ui-adk changed: no SessionManager._untrack_session (read by the ADK route)")
