"""The Strands route's threads in the shared engine (``AGUI_STATE_URL``): one Strands session each.

Why: ag-ui-strands keeps one Strands agent per thread in this process's memory, and what a later
run of the thread depends on lives in that agent: its conversation, ``agent.state`` (where the
bridge also mirrors its own resume bookkeeping: the open interrupts' schemas, the last resume's
fingerprint, the frontend waits) and its interrupt checkpoint (``_interrupt_state``, which also
holds a paused specialist's turn). Upstream's seam for keeping that elsewhere is a Strands session
manager, which the bridge asks for when it builds a thread's agent
(``StrandsAgentConfig.session_manager_provider``) and which restores the agent from its session:
``RepositorySessionManager`` over a ``SessionRepository``. This module is that repository, on plain
Redis, and the cycle of one run around it (:meth:`EngineSessions.stage`, under the thread's lease,
so no other run of the thread reads or writes the session meanwhile):

* before the bridge starts, the thread's copies in this process are dropped (a replica that served
  the thread earlier would otherwise go on from its own stale agent: resume from a checkpoint
  another replica already answered, and run an approved tool twice), and its session is read from
  the engine, in one ``HGETALL``;
* while the run goes, Strands reads and writes the session through :class:`ThreadSession`, in
  memory: its repository calls are synchronous (hook callbacks), and none of them waits on the
  engine, so nothing blocks the event loop;
* before each event the bridge emits goes on, and when the run ends, what Strands changed is
  written back, in one ``MULTI`` of ``HSET`` and ``PEXPIRE``: the engine is never behind what a
  client has seen (a resume's approved call is recorded as run before its result goes out).

Layout: one hash per thread, ``agui:<route>:session:<thread>``, whose fields are Strands' own
records as JSON (``to_dict``): ``session``, ``agent:<agent id>``, ``message:<agent id>:<index>``.
It expires :data:`PAUSED_TTL_S` after its last write while the thread waits for an answer, and
:data:`IDLE_TTL_S` after it otherwise. Engine failures raise :class:`store.StoreUnavailable`
within :data:`store.engine.TIMEOUT_S` (the pipeline answers RUN_ERROR ``STATE_UNAVAILABLE``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput
from strands.session import RepositorySessionManager, SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from store import StoreUnavailable
from store.engine import UNAVAILABLE, engine_client

logger = logging.getLogger("agui.strands.sessions")

PAUSED_TTL_S = 7 * 24 * 3600.0
"""A thread waiting for an approval (or a frontend tool's answer): a week. The approval ledger keeps
a waiting thread until it is answered or evicted (``AGUI_APPROVAL_MIN_AGE_S`` is only how long it is
safe from eviction), so its checkpoint must outlive any wait a person plausibly makes."""
IDLE_TTL_S = 24 * 3600.0
"""A thread with nothing waiting: a day after its last run. Its session is the model's memory of
the conversation (the bridge does not replay the client's history over a session), and idle threads
are most threads, so they go sooner; a thread used again within a day keeps its memory."""
CONNECTIONS = 32
"""Engine connections per process; a run holds one only for the length of a command."""
SESSION = "session"


class ThreadSession(SessionRepository):
    """One thread's Strands session, as read from the engine when its run began. Strands reads and
    writes it here, in memory; :meth:`EngineSessions.stage` writes the changed records back."""

    def __init__(self, records: Mapping[bytes, bytes]) -> None:
        self._records: dict[str, dict[str, Any]] = {
            field.decode(): json.loads(value) for field, value in records.items()
        }
        self._changed: set[str] = set()
        self.forgotten = False
        """The app dropped the thread (``Bridge.forget``) while its run went on: write nothing more."""

    # --- what the engine side reads -----------------------------------------------------------
    def take_changes(self) -> dict[str, bytes]:
        """The records written since the last call, as JSON; :meth:`restore_changes` if they
        could not be saved."""
        changed, self._changed = self._changed, set()
        return {field: json.dumps(self._records[field], separators=(",", ":")).encode() for field in changed}

    def restore_changes(self, fields: Mapping[str, bytes]) -> None:
        self._changed |= set(fields)

    @property
    def paused(self) -> bool:
        """An agent of the session waits at its interrupt checkpoint (an approval, a frontend tool)."""
        return any(
            record.get("_internal_state", {}).get("interrupt_state", {}).get("activated") is True
            for field, record in self._records.items()
            if field.startswith("agent:")
        )

    # --- SessionRepository (FileSessionManager is the model: same checks, same semantics) ------
    def create_session(self, session: Session, **kwargs: Any) -> Session:
        if SESSION in self._records:
            raise SessionException(f"Session {session.session_id} already exists")
        self._write(SESSION, session.to_dict())
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        record = self._records.get(SESSION)
        return Session.from_dict(record) if record is not None else None

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        self._write(_agent(session_agent.agent_id), session_agent.to_dict())

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        record = self._records.get(_agent(agent_id))
        return SessionAgent.from_dict(record) if record is not None else None

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        previous = self.read_agent(session_id, session_agent.agent_id)
        if previous is None:
            raise SessionException(f"Agent {session_agent.agent_id} in session {session_id} does not exist")
        session_agent.created_at = previous.created_at
        self._write(_agent(session_agent.agent_id), session_agent.to_dict())

    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        self._write(_message(agent_id, session_message.message_id), session_message.to_dict())

    def read_message(self, session_id: str, agent_id: str, message_id: int, **kwargs: Any) -> SessionMessage | None:
        record = self._records.get(_message(agent_id, message_id))
        return SessionMessage.from_dict(record) if record is not None else None

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        previous = self.read_message(session_id, agent_id, session_message.message_id)
        if previous is None:
            raise SessionException(f"Message {session_message.message_id} does not exist")
        session_message.created_at = previous.created_at
        self._write(_message(agent_id, session_message.message_id), session_message.to_dict())

    def list_messages(
        self, session_id: str, agent_id: str, limit: int | None = None, offset: int = 0, **kwargs: Any
    ) -> list[SessionMessage]:
        prefix = _message(agent_id, "")
        indexes = sorted(int(field[len(prefix) :]) for field in self._records if field.startswith(prefix))
        chosen = indexes[offset:] if limit is None else indexes[offset : offset + limit]
        return [SessionMessage.from_dict(self._records[_message(agent_id, index)]) for index in chosen]

    def _write(self, field: str, record: dict[str, Any]) -> None:
        self._records[field] = record
        self._changed.add(field)


class EngineSessions:
    """The route's thread sessions in the engine, and the run cycle around them (see the module
    docstring). ``drop`` forgets what this process's bridge keeps of a thread."""

    def __init__(self, url: str, route: str, drop: Callable[[str], None]) -> None:
        self._client = engine_client(url, connections=CONNECTIONS)
        self._prefix = f"agui:{route}:session:"
        self._drop = drop
        self._open: dict[str, ThreadSession] = {}  # thread -> its session, while its run goes

    def manager(self, run_input: RunAgentInput) -> RepositorySessionManager:
        """``StrandsAgentConfig.session_manager_provider``: the session :meth:`stage` read for the run."""
        thread_id = run_input.thread_id
        return RepositorySessionManager(session_id=thread_id, session_repository=self._open[thread_id])

    async def stage(self, events: AsyncIterator[BaseEvent], run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The innermost stage: read the thread's session before the bridge starts, write what the
        run changed before each event goes on and when the run ends."""
        thread_id = run_input.thread_id
        self._drop(thread_id)
        try:
            session = ThreadSession(await self._engine(self._client.hgetall(self._prefix + thread_id)))
        except BaseException:
            await events.aclose()
            raise
        self._open[thread_id] = session
        try:
            async with aclosing(events):
                async for event in events:
                    await self._save(thread_id, session)
                    yield event
        finally:
            del self._open[thread_id]
            self._drop(thread_id)
            try:  # what a run that failed or was stopped left (as a process keeps its agent)
                await self._save(thread_id, session)
            except StoreUnavailable as exc:
                logger.warning("thread=%.64r | the end of an interrupted run was not saved: %s", thread_id, exc)

    async def forget(self, thread_id: str) -> None:
        """Delete the thread's session (whichever replica served it); a run of it still going on
        here writes nothing more."""
        if thread_id in self._open:
            self._open[thread_id].forgotten = True
        await self._engine(self._client.delete(self._prefix + thread_id))

    async def _save(self, thread_id: str, session: ThreadSession) -> None:
        if session.forgotten:
            return
        changes = session.take_changes()
        if not changes:
            return
        ttl_ms = int((PAUSED_TTL_S if session.paused else IDLE_TTL_S) * 1000)
        key = self._prefix + thread_id
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping=changes)
                pipe.pexpire(key, ttl_ms)
                await self._engine(pipe.execute())
        except BaseException:
            session.restore_changes(changes)
            raise

    @staticmethod
    async def _engine(call: Any) -> Any:
        """Await one engine call; its failures as :class:`StoreUnavailable`."""
        try:
            return await call
        except UNAVAILABLE as exc:
            raise StoreUnavailable(f"the state engine failed: {type(exc).__name__}: {exc}") from exc


def _agent(agent_id: str) -> str:
    return f"agent:{agent_id}"


def _message(agent_id: str, index: int | str) -> str:
    return f"message:{agent_id}:{index}"
