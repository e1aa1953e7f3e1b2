"""ADK sessions in the shared engine (``AGUI_STATE_URL``): what any replica needs to go on with a thread.

Why: ag-ui-adk 0.7.1 keeps everything a later run of a thread depends on in the thread's ADK
session: the history ADK hands the model, the tool confirmation a resume answers (as events), and
the session state with the bridge's own records (``pending_tool_calls``, the LRO id remap, the
invocation a paused call continues). ADK's persistence seam for all of it is the session service
(``google.adk.sessions.BaseSessionService``); google-adk 2.13 ships it in process memory, over SQL
(SQLAlchemy async, SQLite) and on Vertex AI, not on Redis. :class:`RedisSessions` is that service
on plain Redis 7.0, with the semantics of ADK's ``InMemorySessionService``:

* ``create_session`` refuses an id that exists (``AlreadyExistsError``); ``get_session`` returns a
  session of its own with the ``app:`` and ``user:`` state merged in, its events filtered by
  ``GetSessionConfig``; ``delete_session`` removes it;
* ``append_event`` ignores partial events, applies ``temp:`` state to the caller's session only,
  and stores the event (ADK's own JSON, as its SQLite service stores it) with its state delta split
  into app, user and session state; an equal re-delivery (same id, same JSON) changes nothing. Each
  write is one Lua script, atomic for every other process;
* ``list_sessions`` is not offered (``NotImplementedError``, which ag-ui-adk reads as "cannot
  list"): listing would scan the engine, and this route finds a thread's session at the thread's
  id (``runtimes.adk.shared``).

Keys (``<a>``, ``<u>``, ``<s>``: app, user and session id, percent-encoded, so no id reaches into
another's keys), every one with a TTL:

=====================================  ====================================================
``agui:adk:session:<a>:<u>:<s>:meta``  the last update time; the session exists while this does
``…:state``                            hash: session state key -> JSON value
``…:events``                           list: the events as JSON, oldest first
``…:ids``                              hash: event id -> digest of its JSON (re-delivery check)
``agui:adk:app:<a>``                   hash: ``app:`` state (unprefixed key -> JSON value)
``agui:adk:user:<a>:<u>``              hash: ``user:`` state
=====================================  ====================================================

Every write gives the session's keys ``ttl_s`` (a thread nobody runs expires); :meth:`keep` gives
them another (a thread waiting for an approval waits longer). App and user state, shared by every
session, live as long as the longest of them.

One run reads its thread's session a dozen times or more (ag-ui-adk and ADK's runner each fetch it
afresh for every step). Within a run (:func:`watch`), the first read loads the session from the
engine and the run's later reads are copies of it with every write of the run applied, as
``InMemorySessionService`` serves them; writes still go to the engine first, each on its own. That
copy is never stale: the run holds the thread's lease (``app.runs``), so nothing else writes the
session meanwhile, and it goes with the run (the next run, here or on any replica, loads afresh).
The exception is app and user state, which other sessions may change during the run: a run sees
them as they were when it first read its session (this route uses neither).

Failures: the client has socket timeouts and no retries (as ``store.engine``), so an engine that is
down or silent raises ``store.StoreUnavailable`` within ``timeout_s``; so does a write to a session
the run has read that the engine no longer holds (it restarted without it). ag-ui-adk swallows many of its
session calls' exceptions (it logs them and goes on), so each failure is also recorded for the run
(:func:`failure`): the route ends a run whose engine failed with ``STATE_UNAVAILABLE``, whatever the
bridge made of it.
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
import json
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event
from google.adk.platform import time as platform_time
from google.adk.sessions import BaseSessionService, Session
from google.adk.sessions import _session_util as session_util
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse
from google.adk.sessions.state import State

from store import StoreUnavailable
from store.engine import TIMEOUT_S, UNAVAILABLE, engine_client

T = TypeVar("T")

CONNECTIONS = 32
"""Engine connections of the session service, per worker process (a run holds one per call)."""

# KEYS: meta, state, events, ids, app, user. ARGV[1] the last update time, ARGV[2] the session's
# TTL (ms), ARGV[3] the app and user state's TTL (ms); from ARGV[at], three runs of state writes
# (session, app, user), each a count n and then n key/JSON pairs.
_COMMIT = """
local function commit(at)
  local targets = {KEYS[2], KEYS[5], KEYS[6]}
  for i = 1, 3 do
    local n = tonumber(ARGV[at])
    if n > 0 then
      redis.call('HSET', targets[i], unpack(ARGV, at + 1, at + 2 * n))
      if i > 1 then redis.call('PEXPIRE', targets[i], ARGV[3]) end
    end
    at = at + 1 + 2 * n
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  for i = 2, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
end
"""
_CREATE = (
    _COMMIT
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
commit(4)
return 1
"""
)
# ARGV[4] the event's id, ARGV[5] the digest of its JSON, ARGV[6] its JSON; the state from ARGV[7].
_APPEND = (
    _COMMIT
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[4], ARGV[4]) == ARGV[5] then return 0 end
redis.call('RPUSH', KEYS[3], ARGV[6])
redis.call('HSET', KEYS[4], ARGV[4], ARGV[5])
commit(7)
return 1
"""
)
_MISSING = -1

SessionKey = tuple[str, str, str]
"""(app, user, session id)."""


@dataclass
class _Run:
    """What the service keeps for one run: the engine's failures, and the sessions the run has read
    (as stored, with every write of the run applied: under the thread's lease no one else writes them)."""

    failures: list[StoreUnavailable] = field(default_factory=list)
    sessions: dict[SessionKey, Session] = field(default_factory=dict)


_RUN: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("agui_adk_sessions_run", default=None)


def watch() -> None:
    """Give the current run its own record (before the bridge starts its tasks, which copy the
    run's context): its sessions are read from the engine afresh."""
    _RUN.set(_Run())


def _recorded(unavailable: StoreUnavailable) -> StoreUnavailable:
    """``unavailable``, recorded for the current run."""
    run = _RUN.get()
    if run is not None:
        run.failures.append(unavailable)
    return unavailable


def failure() -> StoreUnavailable | None:
    """The first engine failure of the current run, if any."""
    run = _RUN.get()
    return run.failures[0] if run is not None and run.failures else None


class RedisSessions(BaseSessionService):
    """ADK sessions in Redis at ``url``. Create it anywhere; it connects on first use."""

    def __init__(self, url: str, *, ttl_s: float, longest_ttl_s: float, timeout_s: float = TIMEOUT_S) -> None:
        self._redis = engine_client(url, connections=CONNECTIONS, timeout_s=timeout_s)
        self._ttl_ms = _ms(ttl_s)
        self._longest_ms = _ms(longest_ttl_s)
        self._create = self._redis.register_script(_CREATE)
        self._append = self._redis.register_script(_APPEND)

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        if not session_id or not session_id.strip():
            raise ValueError("RedisSessions needs the session's id (this route's is its thread's)")
        session_id = session_id.strip()
        deltas = session_util.extract_json_safe_state_delta(state or {})
        args = [platform_time.get_time(), self._ttl_ms, self._longest_ms, *_writes(deltas)]
        created = await self._engine(self._create(keys=self._keys(app_name, user_id, session_id), args=args))
        if not created:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        return await self._require(app_name, user_id, session_id)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        key = (app_name, user_id, session_id.strip() if session_id else session_id)
        run = _RUN.get()
        if run is None or key not in run.sessions:
            loaded = await self._load(*key)
            if loaded is None or run is None:
                return None if loaded is None else _recent(loaded, config)
            run.sessions[key] = loaded
        return copy.deepcopy(_recent(run.sessions[key], config))  # as InMemorySessionService: the caller's own

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        raise NotImplementedError("RedisSessions does not list sessions: a thread's session is at the thread's id")

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        session_id = session_id.strip()
        meta, state, events, ids, _, _ = self._keys(app_name, user_id, session_id)
        await self._engine(self._redis.delete(meta, state, events, ids))
        if (run := _RUN.get()) is not None:
            run.sessions.pop((app_name, user_id, session_id), None)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        as_json = event.model_dump_json(exclude_none=True)
        digest = hashlib.blake2b(as_json.encode(), digest_size=16).hexdigest()
        deltas = session_util.extract_json_safe_state_delta(event.actions.state_delta if event.actions else {})
        keys = self._keys(session.app_name, session.user_id, session.id)
        args = [event.timestamp, self._ttl_ms, self._longest_ms, event.id, digest, as_json, *_writes(deltas)]
        appended = await self._engine(self._append(keys=keys, args=args))
        run = _RUN.get()
        stored = run.sessions.get((session.app_name, session.user_id, session.id)) if run is not None else None
        if appended == _MISSING:
            if stored is not None:  # read by this run, under its thread's lease: the engine lost it (restarted)
                raise _recorded(StoreUnavailable(f"the state engine lost session {session.id!r} during the run"))
            raise SessionNotFoundError(f"Session {session.id} not found.")
        if not appended:  # an equal re-delivery: already stored and applied
            return event
        targets = [session] if stored is None or stored is session else [session, stored]  # the run's copy too
        for target in targets:
            target.last_update_time = event.timestamp
            self._commit_event_to_session(target, event)
        return event

    async def keep(self, *, app_name: str, user_id: str, session_id: str, ttl_s: float) -> None:
        """Give the session's keys ``ttl_s`` from now (none is created)."""
        ttl_ms = _ms(ttl_s)
        async with self._redis.pipeline(transaction=True) as pipe:
            for key in self._keys(app_name, user_id, session_id)[:4]:
                pipe.pexpire(key, ttl_ms)
            await self._engine(pipe.execute())

    async def _load(self, app_name: str, user_id: str, session_id: str) -> Session | None:
        """The session as the engine holds it, or None."""
        meta, state, events, _, app, user = self._keys(app_name, user_id, session_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.get(meta).hgetall(state).lrange(events, 0, -1).hgetall(app).hgetall(user)
            updated, stored, raw_events, app_state, user_state = await self._engine(pipe.execute())
        if updated is None:
            return None
        merged = {key.decode(): json.loads(value) for key, value in stored.items()}
        merged |= {State.APP_PREFIX + key.decode(): json.loads(value) for key, value in app_state.items()}
        merged |= {State.USER_PREFIX + key.decode(): json.loads(value) for key, value in user_state.items()}
        return Session(
            app_name=app_name,
            user_id=user_id,
            id=session_id,
            state=merged,
            events=[Event.model_validate_json(raw) for raw in raw_events],
            last_update_time=float(updated),
        )

    async def _require(self, app_name: str, user_id: str, session_id: str) -> Session:
        session = await self.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
        if session is None:  # created and gone at once: the engine lost it (restarted, or evicted it)
            raise _recorded(StoreUnavailable(f"the state engine lost session {session_id!r} as it was created"))
        return session

    async def _engine(self, call: Awaitable[T]) -> T:
        """``call``'s result; the engine's failures raised as ``StoreUnavailable`` and recorded for the run."""
        try:
            return await call
        except UNAVAILABLE as exc:
            raise _recorded(StoreUnavailable(f"the state engine failed: {type(exc).__name__}: {exc}")) from exc

    @staticmethod
    def _keys(app_name: str, user_id: str, session_id: str) -> list[str]:
        """meta, state, events, ids, app state, user state."""
        app, user = quote(app_name, safe=""), quote(user_id, safe="")
        session = f"agui:adk:session:{app}:{user}:{quote(session_id, safe='')}"
        own = [f"{session}:{suffix}" for suffix in ("meta", "state", "events", "ids")]
        return [*own, f"agui:adk:app:{app}", f"agui:adk:user:{app}:{user}"]


def _writes(deltas: dict[str, dict[str, Any]]) -> list[Any]:
    """The state writes of :data:`_COMMIT`: per scope (session, app, user), a count and key/JSON pairs."""
    args: list[Any] = []
    for scope in ("session", "app", "user"):
        delta = deltas[scope]
        args.append(len(delta))
        for key, value in delta.items():
            args += [key, json.dumps(value, separators=(",", ":"))]
    return args


def _recent(session: Session, config: GetSessionConfig | None) -> Session:
    """``session`` with its events as ``GetSessionConfig`` filters them (as ``InMemorySessionService`` does)."""
    if config is None:
        return session
    events = session.events
    if config.num_recent_events is not None:
        events = events[-config.num_recent_events :] if config.num_recent_events else []
    if config.after_timestamp is not None:
        events = [event for event in events if event.timestamp >= config.after_timestamp]
    return session.model_copy(update={"events": events})


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))
