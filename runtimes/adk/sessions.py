"""Per-thread memory of the ADK route, bounded by ``AGUI_THREAD_CACHE_SIZE`` (with shared state, the
engine holds the threads instead: ``runtimes.adk.shared``).

ag-ui-adk 0.7.1 keeps an ADK session per thread (history, state, pending calls) and, beside it,
its own per-thread bookkeeping; the session manager's only bound is time (a cleanup loop that
deletes sessions idle for 20 minutes), none of it counts threads. :class:`ThreadSessions` keeps the
threads whose runs reached the bridge, least recently used first, and after every run drops the
oldest idle ones beyond the bound: never a thread with a run in flight, never one waiting for an
approval (those are the app's approval ledger's to bound: it asks through :meth:`forget`).
Dropping a thread deletes its session and forgets the bridge's bookkeeping of it; a later run on
it starts a fresh session from the request's messages.

:class:`CountBoundedSessions` is the bridge's session manager with its time-based cleanup loop off:
the bound is this module's, and a loop task outliving every run is not wanted. :class:`Threads` is
what the bridge asks of either kind of thread keeping around each run.

Private state of ag-ui-adk 0.7.1 touched here, because the bridge offers no way to forget a
thread: ``SessionManager._delete_session`` / ``_start_cleanup_task`` and the ``ADKAgent`` dicts
keyed by ``(thread, user, app)`` in :data:`PER_THREAD`. :func:`require_private` fails the build at
once if any of them is gone (or the bridge's ``_start_background_execution``, extended by
``runtimes.adk.bridge``), so an upgrade that renames them breaks the boot and the suite, loudly.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from ag_ui.core import BaseEvent
from ag_ui_adk import ADKAgent, SessionManager
from google.adk.sessions import BaseSessionService, InMemorySessionService

PER_THREAD_DICTS = ("_session_lookup_cache", "_open_interrupts", "_active_executions")
PER_THREAD_SETS = ("_cache_checked_keys", "_sessions_verified_locally")
PER_THREAD = (*PER_THREAD_DICTS, *PER_THREAD_SETS)
"""``ADKAgent``'s own per-thread bookkeeping, keyed by ``(thread_id, user_id, app_name)``."""


class Threads(Protocol):
    """What the bridge keeps of the threads it serves, and what it does around each run."""

    running: set[str]
    """The threads with a run in flight here."""

    def started(self, thread_id: str) -> None:
        """A run of the thread starts (before the bridge's first step)."""

    async def finishing(self, thread_id: str, terminal: BaseEvent) -> None:
        """The run's terminal event is about to go out (everything of the run is written)."""

    async def ended(self, thread_id: str) -> None:
        """The run is over (its stream closed, its ADK runner stopped)."""

    async def forget(self, thread_id: str) -> None:
        """Drop the thread and its session (the app's approval ledger asks)."""

    def cached(self) -> frozenset[str]:
        """The threads whose per-thread state is kept here between runs."""


class CountBoundedSessions(SessionManager):
    """ag-ui-adk's session manager with thread ids as session ids, without its cleanup loop."""

    def __init__(self, service: BaseSessionService) -> None:
        super().__init__(
            session_service=service,
            delete_session_on_cleanup=True,
            save_session_to_memory_on_cleanup=False,  # a dropped thread is gone, not archived in memory
            use_thread_id_as_session_id=True,  # so dropping a session also drops its processed-message marks
        )

    def _start_cleanup_task(self) -> None:
        """No time-based cleanup: :class:`ThreadSessions` bounds the sessions by count (or the
        engine's TTLs do: ``runtimes.adk.shared``)."""


class ThreadSessions:
    """The threads the bridge holds a session for, bounded, and which of them are running."""

    def __init__(
        self,
        agent: ADKAgent,
        service: InMemorySessionService,
        *,
        app_name: str,
        user_id: str,
        max_threads: int,
        paused: Callable[[], frozenset[str]],
    ) -> None:
        self._agent = agent
        self._service = service
        self._app_name = app_name
        self._user_id = user_id
        self._max_threads = max_threads
        self._paused = paused
        self._threads: OrderedDict[str, None] = OrderedDict()
        self._to_forget: set[str] = set()  # let go by the ledger, dropped when a run ends
        self.running: set[str] = set()

    def key(self, thread_id: str) -> tuple[str, str, str]:
        """The bridge's key of a thread's bookkeeping."""
        return (thread_id, self._user_id, self._app_name)

    def started(self, thread_id: str) -> None:
        self._threads[thread_id] = None
        self._threads.move_to_end(thread_id)
        self.running.add(thread_id)

    async def finishing(self, thread_id: str, terminal: BaseEvent) -> None:
        """Nothing to do: the session is in this process's memory."""

    async def forget(self, thread_id: str) -> None:
        """Drop the thread when a run of the route next ends (the app's ledger asks while a run of
        the route is ending, so that is its own end, or the end of the run that parked the
        approval which evicted this one)."""
        self._to_forget.add(thread_id)

    async def ended(self, thread_id: str) -> None:
        """The thread's run is over: drop the threads the ledger let go, then the least recently
        used idle ones beyond the bound."""
        self.running.discard(thread_id)
        for forgotten in [t for t in self._to_forget if t not in self.running]:
            self._to_forget.discard(forgotten)
            self._threads.pop(forgotten, None)
            await self._forget(forgotten)
        paused = self._paused()
        excess = len(self._threads) - self._max_threads
        for candidate in list(self._threads):  # least recently used first
            if excess <= 0:
                return
            if candidate in self.running or candidate in paused:
                continue
            del self._threads[candidate]
            excess -= 1
            await self._forget(candidate)

    def cached(self) -> frozenset[str]:
        return frozenset(self._threads)

    async def _forget(self, thread_id: str) -> None:
        session = await self._service.get_session(app_name=self._app_name, user_id=self._user_id, session_id=thread_id)
        if session is not None:
            await self._agent._session_manager._delete_session(session)
        drop_bookkeeping(self._agent, self.key(thread_id))


def drop_bookkeeping(agent: ADKAgent, key: tuple[str, str, str]) -> None:
    """Forget the bridge's own per-thread bookkeeping of ``key`` (never the thread's session)."""
    for name in PER_THREAD_DICTS:
        getattr(agent, name).pop(key, None)
    for name in PER_THREAD_SETS:
        getattr(agent, name).discard(key)


def require_private(agent: ADKAgent) -> None:
    """Fail now if ag-ui-adk no longer has the private state this route reads."""
    missing = [name for name in (*PER_THREAD, "_session_manager") if not hasattr(agent, name)]
    hooks = ((ADKAgent, "_start_background_execution"), (SessionManager, "_delete_session"))
    hooks += ((SessionManager, "_start_cleanup_task"),)
    missing += [f"{owner.__name__}.{name}" for owner, name in hooks if not hasattr(owner, name)]
    if missing:
        raise RuntimeError(f"ag-ui-adk changed: no {', '.join(missing)} (read by this route)")
