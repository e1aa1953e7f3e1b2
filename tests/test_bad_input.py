"""The bad-input table (docs/errors.md), row by row, on every runtime route, over real HTTP/SSE.

Two kinds of rows:

* **Refused before any runtime runs** (``GUARD_ROWS``): the request guard answers a 4xx JSON
  error ``{"detail", "code", "field"?}`` naming the field. Same answer on every route.
* **Refused by the runtime** (``SCENARIOS``): the request is well-formed but wrong for the thread's
  state (a resume that does not fit, new input while an approval waits, a second run at once).
  The answer is a complete SSE stream, ``RUN_STARTED`` then ``RUN_ERROR`` with a stable code (the
  bridge's own), or a documented success. Each runtime declares its answers
  (``runtimes.base.Known.answers``), and docs/errors.md lists them.

Every stream must pass the protocol verifier; nothing may answer 5xx, hang (every call has a
hard deadline) or end without a terminal event. After a refused resume or refused new input the
pending approval must still be answerable: the refusal lost nothing.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.factory import create_app
from app.registry import RUNTIMES
from runtimes.base import FINISHED
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, Run, arun, live_server, open_stream, run_input
from verifier import verify_events, verify_thread

MAX_BODY = 20_000
LIMITS = {
    "agui_max_body_bytes": MAX_BODY,
    "agui_max_json_depth": 16,
    "agui_max_number_digits": 20,
    "agui_max_messages": 50,
    "agui_max_tools": 8,
    "agui_max_tools_bytes": 4_000,
    "agui_max_id_length": 200,  # above the longest interrupt id a bridge mints (Strands: ~120)
    "agui_body_timeout_s": 1.0,
}
"""Small limits, so every one is reached well inside the body size limit."""


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=5, **LIMITS)) as url:
        yield url


@pytest.fixture(scope="module")
def slow_base() -> Iterator[str]:
    """For the rows that need a run still in flight when the next request arrives."""
    with live_server(Settings(agui_script_delay_ms=100)) as url:
        yield url


# --- refused before any runtime runs ----------------------------------------------------------


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def _body(**fields: object) -> bytes:
    """A valid RunAgentInput with ``fields`` replaced (a value of ``...`` removes the field)."""
    body = run_input("hi", thread_id="t-bad-input")
    for key, value in fields.items():
        if value is ...:
            body.pop(key, None)
        else:
            body[key] = value
    return _json(body)


JSON = "application/json"
ENTRY = {"interruptId": "i-1", "status": "resolved", "payload": {"approved": True}}


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def _tool(n: int, description: str = "x") -> dict:
    return {"name": f"tool_{n}", "description": description, "parameters": {"type": "object"}}


def _user(n: int) -> dict:
    return {"id": f"m{n}", "role": "user", "content": "hi"}


def _with_state(number: bytes) -> bytes:
    """A valid body whose state holds ``number`` written as is (json.dumps cannot write these)."""
    return _body().replace(b'"state": {}', b'"state": {"n": ' + number + b"}")


GUARD_ROWS = [
    # (row, body, content type, status, code, field)
    ("empty body", b"", JSON, 400, "empty_body", None),
    ("whitespace body", b"  \n", JSON, 400, "empty_body", None),
    ("invalid JSON", b"{not json", JSON, 400, "invalid_json", None),
    ("invalid UTF-8", b'{"threadId": "\xff"}', JSON, 400, "invalid_json", None),
    ("JSON array", b"[1, 2]", JSON, 422, "not_an_object", None),
    ("JSON string", b'"hello"', JSON, 422, "not_an_object", None),
    ("JSON null", b"null", JSON, 422, "not_an_object", None),
    ("wrong content type", _body(), "text/plain", 415, "unsupported_media_type", None),
    ("no content type", _body(), None, 415, "unsupported_media_type", None),
    ("missing threadId", _body(threadId=...), JSON, 422, "invalid_field", "threadId"),
    ("missing runId", _body(runId=...), JSON, 422, "invalid_field", "runId"),
    ("missing messages", _body(messages=...), JSON, 422, "invalid_field", "messages"),
    ("threadId not a string", _body(threadId=7), JSON, 422, "invalid_field", "threadId"),
    ("runId not a string", _body(runId=["r"]), JSON, 422, "invalid_field", "runId"),
    ("messages not a list", _body(messages="hi"), JSON, 422, "invalid_field", "messages"),
    ("message not an object", _body(messages=["hi"]), JSON, 422, "invalid_field", "messages.0"),
    ("message without role", _body(messages=[{"id": "m", "content": "x"}]), JSON, 422, "invalid_field", "messages.0"),
    (
        "unknown message role",
        _body(messages=[{"id": "m", "role": "wizard", "content": "x"}]),
        JSON,
        422,
        "invalid_field",
        "messages.0",
    ),
    (
        "user message without content",
        _body(messages=[{"id": "m", "role": "user"}]),
        JSON,
        422,
        "invalid_field",
        "messages.0.content",
    ),
    ("tools not a list", _body(tools={"name": "x"}), JSON, 422, "invalid_field", "tools"),
    ("resume not a list", _body(resume={"interruptId": "i-1"}), JSON, 422, "invalid_field", "resume"),
    (
        "resume entry without interruptId",
        _body(resume=[{"status": "resolved"}]),
        JSON,
        422,
        "invalid_field",
        "resume.0.interruptId",
    ),
    (
        "resume status not resolved/cancelled",
        _body(resume=[{**ENTRY, "status": "maybe"}]),
        JSON,
        422,
        "invalid_field",
        "resume.0.status",
    ),
    ("resume entry not an object", _body(resume=["i-1"]), JSON, 422, "invalid_field", "resume.0"),
    ("oversized body", _json(run_input("x" * (MAX_BODY + 1))), JSON, 413, "body_too_large", None),
    ("state not an object", _body(state=1), JSON, 422, "invalid_field", "state"),
    ("forwardedProps not an object", _body(forwardedProps=[1]), JSON, 422, "invalid_field", "forwardedProps"),
    ("JSON nested deeper than the limit", _body(state=_nested(20)), JSON, 422, "too_deep", None),
    ("JSON nested 1,000 deep", b"[" * 1000 + b"]" * 1000, JSON, 422, "too_deep", None),
    (
        "an integer with more digits than the limit",
        _with_state(b"1" + b"0" * 5000),
        JSON,
        422,
        "number_too_large",
        None,
    ),
    ("a number out of range (1e999)", _with_state(b"1e999"), JSON, 422, "number_too_large", None),
    ("a NaN or Infinity literal", _with_state(b"NaN"), JSON, 422, "number_too_large", None),
    ("a lone UTF-16 surrogate in a string", _body(threadId="t-\ud800"), JSON, 422, "invalid_string", None),
    (
        "more messages than the limit",
        _body(messages=[_user(n) for n in range(51)]),
        JSON,
        422,
        "too_many_messages",
        "messages",
    ),
    ("more tools than the limit", _body(tools=[_tool(n) for n in range(9)]), JSON, 422, "too_many_tools", "tools"),
    (
        "tool definitions larger than the limit",
        _body(tools=[_tool(0, "x" * 4_000)]),
        JSON,
        422,
        "tools_too_large",
        "tools",
    ),
    ("an id longer than the limit", _body(threadId="t" * 201), JSON, 422, "id_too_long", "threadId"),
]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("row", "body", "content_type", "status", "code", "field"), GUARD_ROWS, ids=[row[0] for row in GUARD_ROWS]
)
def test_refused_before_any_runtime_runs(
    base: str, route: str, row: str, body: bytes, content_type: str | None, status: int, code: str, field: str | None
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = httpx.post(f"{base}{route}", content=body, headers=headers, timeout=10)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()
    assert error["code"] == code and error["detail"], error
    if field is not None:
        assert error["field"].startswith(field), error


@pytest.mark.parametrize("route", ROUTES)
def test_declared_oversized_body_is_refused_before_it_is_read(base: str, route: str) -> None:
    """A Content-Length over the limit is answered 413 at once, without waiting for the body."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"POST {route} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {MAX_BODY * 10}\r\n\r\n{{".encode()
        )
        answer = sock.recv(65536).decode()
    head, _, body = answer.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 413"), head
    assert json.loads(body)["code"] == "body_too_large"


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_that_trickles_in_is_cut_off(base: str, route: str) -> None:
    """A client that sends its headers and then a byte now and then holds a connection only until
    AGUI_BODY_TIMEOUT_S: then 408 ``body_timeout``, and the connection is the server's again."""
    host, port = base.removeprefix("http://").split(":")
    body = _body()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST {route} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        started = time.monotonic()
        answer = sock.recv(65536).decode()  # blocks until the server answers, well before the socket timeout
    head, _, rest = answer.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 408"), head
    assert json.loads(rest)["code"] == "body_timeout"
    assert time.monotonic() - started < 10


# --- refused by the runtime -------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What a row is answered with on one route."""

    terminal: str  # RUN_ERROR or RUN_FINISHED
    code: str | None = None

    @classmethod
    def declared(cls, answer: str) -> Answer:
        """A runtime's declared answer: ``FINISHED``, or the code of a RUN_ERROR."""
        return cls(FINISHED) if answer == FINISHED else cls(ERROR, answer)


ERROR = "RUN_ERROR"


@dataclass
class Thread:
    """A thread whose first run ended in an interrupt, as a client holds it."""

    base: str
    route: str
    body: dict
    first: Run
    runs: list[list[dict]] = field(default_factory=list)  # every stream of the thread so far, in order

    def __post_init__(self) -> None:
        self.runs.append(self.first.events)

    @property
    def thread_id(self) -> str:
        return self.body["threadId"]

    @property
    def interrupts(self) -> list[dict]:
        return self.first.interrupts()

    def history(self) -> list[dict]:
        """The client's messages after the interrupted run: its own plus the bridge's snapshot."""
        [*_, snapshot] = self.first.of_type("MESSAGES_SNAPSHOT")
        return [*self.body["messages"], *(m for m in snapshot["messages"] if m["role"] != "user")]

    def resume_body(self, entries: object, **extra: object) -> dict:
        return run_input(thread_id=self.thread_id, messages=self.history(), resume=entries, **extra)

    async def send(self, body: dict) -> Run:
        """One more run on the thread; the thread's streams so far must stay valid together."""
        run = await arun(self.base, self.route, body, deadline_s=60)
        assert run.status == 200, run.raw
        self.record(run.events)
        return run

    def record(self, events: list[dict]) -> None:
        self.runs.append(events)
        assert verify_thread(self.runs) == [], [event["type"] for event in events]

    async def approve_all(self) -> Run:
        """The correct answer still works: the earlier refusal lost nothing."""
        entries = [entry(interrupt, APPROVE) for interrupt in self.interrupts]
        run = await self.send(self.resume_body(entries))
        assert run.terminal["type"] == "RUN_FINISHED" and not run.interrupts(), run.types()
        return run


async def interrupted(base: str, route: str, message: str = "delete notes.txt") -> Thread:
    body = run_input(message)
    first = await arun(base, route, body, deadline_s=60)
    assert first.status == 200 and verify_events(first.events) == []
    assert first.interrupts(), first.types()
    return Thread(base, route, body, first)


def entry(interrupt: dict, payload: object = None, status: str = "resolved") -> dict:
    answer: dict = {"interruptId": interrupt["id"], "status": status}
    if payload is not None:
        answer["payload"] = payload
    return answer


APPROVE = {"approved": True}

Scenario = Callable[[str, str], Awaitable[Run]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(function: Scenario) -> Scenario:
        SCENARIOS[name] = function
        return function

    return register


@scenario("resume with an unknown interrupt id")
async def _unknown_id(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    refused_run = await thread.send(thread.resume_body([{**ENTRY, "interruptId": "no-such-interrupt"}]))
    await thread.approve_all()
    return refused_run


@scenario("partial resume (one of two pending approvals answered)")
async def _partial(base: str, route: str) -> Run:
    thread = await interrupted(base, route, "delete a.txt and b.txt")
    assert len(thread.interrupts) == 2
    refused_run = await thread.send(thread.resume_body([entry(thread.interrupts[0], APPROVE)]))
    await thread.approve_all()
    return refused_run


@scenario("resume on a thread that never had an interrupt")
async def _nothing_pending(base: str, route: str) -> Run:
    body = run_input(resume=[ENTRY], messages=[])
    run = await arun(base, route, body, deadline_s=60)
    assert run.status == 200 and verify_events(run.events) == []
    return run


@scenario("resume of an approval already answered, with a different answer")
async def _answered_differently(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    await thread.approve_all()
    return await thread.send(thread.resume_body([entry(thread.interrupts[0], {"approved": False})]))


@scenario("the same resume sent again after it was answered (replay)")
async def _replayed(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    done = await thread.approve_all()
    assert "Done: Deleted notes.txt." in done.text()
    again = await thread.send(thread.resume_body([entry(thread.interrupts[0], APPROVE)]))
    assert "Done:" not in again.text(), "a replayed resume must not run the tool or the model again"
    return again


@scenario("resume payload without the approved boolean")
async def _payload_shape(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    refused_run = await thread.send(thread.resume_body([entry(thread.interrupts[0], {"ok": 1})]))
    await thread.approve_all()
    return refused_run


@scenario("resume payload missing")
async def _payload_missing(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    refused_run = await thread.send(thread.resume_body([entry(thread.interrupts[0])]))
    await thread.approve_all()
    return refused_run


@scenario("resume payload not an object")
async def _payload_type(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    refused_run = await thread.send(thread.resume_body([entry(thread.interrupts[0], "yes")]))
    await thread.approve_all()
    return refused_run


@scenario("resume with an empty list while an approval is pending")
async def _empty_resume(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    refused_run = await thread.send(thread.resume_body([]))
    await thread.approve_all()
    return refused_run


@scenario("resume naming the same interrupt twice")
async def _duplicate_entries(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    answer = entry(thread.interrupts[0], APPROVE)
    refused_run = await thread.send(thread.resume_body([answer, answer]))
    await thread.approve_all()
    return refused_run


@scenario("new user input while an approval is pending")
async def _new_input(base: str, route: str) -> Run:
    thread = await interrupted(base, route)
    history = [*thread.history(), {"id": "u-new", "role": "user", "content": "Hello there!"}]
    refused_run = await thread.send(run_input(thread_id=thread.thread_id, messages=history))
    await thread.approve_all()
    return refused_run


@scenario("a second run on a thread while its first run is in flight")
async def _concurrent(base: str, route: str) -> Run:
    """The first run is provably in flight (its stream has started and not ended) when the
    second is sent. Returns the second; the first must finish normally either way."""
    thread_id = f"busy-{route.strip('/').replace('/', '-')}"
    first_body = run_input("Research the history of Lisbon", thread_id=thread_id)
    async with open_stream(base, route, first_body) as first_events:
        first = [await anext(first_events)]
        assert first[0]["type"] == "RUN_STARTED"
        second = await arun(base, route, run_input("Research the history of Porto", thread_id=thread_id))
        first += [event async for event in first_events]
    assert verify_events(first) == [] and first[-1]["type"] == "RUN_FINISHED"
    assert second.status == 200 and verify_events(second.events) == []
    first_text = json.dumps(first)
    assert "Lisbon" in first_text and "Porto" not in first_text, "the first run saw the second's content"
    if second.terminal["type"] == "RUN_FINISHED":  # where a runtime runs both: isolated too
        assert "Porto" in second.text() and "Lisbon" not in second.raw.decode()
    return second


@scenario("the same resume sent twice at once")
async def _double_resume(base: str, route: str) -> Run:
    """The first resume is in flight when the second arrives; the approved tool runs once, for the
    first. Returns the second."""
    thread = await interrupted(base, route)
    body = thread.resume_body([entry(thread.interrupts[0], APPROVE)])
    async with open_stream(base, route, body) as first_events:
        first = [await anext(first_events)]
        other = await arun(base, route, {**body, "runId": f"{body['runId']}-again"})
        first += [event async for event in first_events]
    thread.record(first)
    thread.record(other.events)
    assert first[-1]["type"] == "RUN_FINISHED"
    first_text = "".join(e["delta"] for e in first if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert "Done: Deleted notes.txt." in first_text
    assert "Deleted" not in other.text()
    return other


IN_FLIGHT_ROWS = frozenset(
    {"a second run on a thread while its first run is in flight", "the same resume sent twice at once"}
)


def test_every_runtime_answers_every_row() -> None:
    for runtime in RUNTIMES:
        assert set(runtime.known.answers) == set(SCENARIOS), runtime.name


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("row", list(SCENARIOS))
async def test_refused_by_the_runtime_with_a_stable_code(request: pytest.FixtureRequest, route: str, row: str) -> None:
    allowed = [Answer.declared(answer) for answer in RUNTIME_BY_ROUTE[route].known.answers[row]]
    server = request.getfixturevalue("slow_base" if row in IN_FLIGHT_ROWS else "base")
    run = await asyncio.wait_for(SCENARIOS[row](server, route), timeout=120)  # each scenario verifies its streams
    assert run.status == 200
    assert run.types()[0] == "RUN_STARTED"
    answer = Answer(run.terminal["type"], run.terminal.get("code"))
    assert answer in allowed, (run.terminal, run.types())
    if answer.terminal == ERROR:
        assert run.types() == ["RUN_STARTED", "RUN_ERROR"], "a refusal does nothing before it says so"
        assert run.terminal["message"]


def test_every_row_is_in_the_docs() -> None:
    """docs/errors.md lists every row tested here, with the same codes, and every RUN_ERROR code
    any route can send."""
    doc = (Path(__file__).parents[1] / "docs" / "errors.md").read_text()
    codes = set().union(*(pipeline.codes for pipeline in create_app(Settings()).state.pipelines.values()))
    assert sorted(code for code in codes if f"`{code}`" not in doc) == []
    for row, *_rest in GUARD_ROWS:
        assert f"| {row} |" in doc, row
    for row in SCENARIOS:
        assert f"| {row} |" in doc, row
        line = next(line for line in doc.splitlines() if line.startswith(f"| {row} |"))
        for runtime in RUNTIMES:
            for answer in runtime.known.answers[row]:
                assert answer in line, (row, runtime.name, answer)
