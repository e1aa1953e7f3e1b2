"""The Python verifier: each rule flags its broken stream and passes its sound one.

The corpus (tests/verifier_corpus.py) holds both sides of every rule; the same streams are judged
by the published npm client in test_npm_client.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ag_ui.core import Event, RunAgentInput
from pydantic import TypeAdapter

from tests.verifier_corpus import CASES, Case, ev, finish, one, start, sub_finished, sub_started, text, tool
from verifier import ThreadVerifier, parse_sse, verify_events, verify_thread
from verifier.__main__ import main

EVENT_ADAPTER: TypeAdapter = TypeAdapter(Event)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_corpus(case: Case) -> None:
    problems = verify_thread(case.runs)
    if case.problem is None:
        assert problems == []
    else:
        assert any(case.problem in problem for problem in problems), problems


@pytest.mark.parametrize("case", [c for c in CASES if c.problem is None], ids=lambda c: c.name)
def test_sound_streams_are_valid_protocol_events(case: Case) -> None:
    """The passing fixtures are real AG-UI events, so a pass means something."""
    for run in case.runs:
        for event in run:
            EVENT_ADAPTER.validate_python(event)


def test_problems_name_the_event() -> None:
    events = [start(), ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="x"), finish()]
    assert verify_events(events) == [
        "event 1 TEXT_MESSAGE_CONTENT: no active text message 'm1'; send TEXT_MESSAGE_START first"
    ]


def test_empty_stream_is_a_problem() -> None:
    assert verify_events([]) == ["the stream has no events"]


def test_state_follows_snapshots_and_deltas() -> None:
    verifier = ThreadVerifier(state={"theme": "dark"})
    events = one(
        ev("STATE_DELTA", delta=[{"op": "add", "path": "/recipe", "value": {"title": "pancakes"}}]),
        ev("STATE_DELTA", delta=[{"op": "replace", "path": "/recipe/title", "value": "crêpes"}]),
    )[0]
    assert verify_events(events, history=verifier) == []
    assert verifier.state == {"theme": "dark", "recipe": {"title": "crêpes"}}
    snapshot = [start("r2"), ev("STATE_SNAPSHOT", snapshot={"fresh": True}), finish("r2")]
    assert verify_events(snapshot, history=verifier) == []
    assert verifier.state == {"fresh": True}


def test_failed_delta_leaves_state_untouched() -> None:
    verifier = ThreadVerifier(state={"a": 1})
    bad = [{"op": "replace", "path": "/a", "value": 2}, {"op": "remove", "path": "/nope"}]
    assert verify_events(one(ev("STATE_DELTA", delta=bad))[0], history=verifier)
    assert verifier.state == {"a": 1}


def test_history_carries_tool_calls_and_suspended_subagents() -> None:
    """verify_events with a shared ThreadVerifier is verify_thread, one response at a time."""
    verifier = ThreadVerifier()
    first = one(tool("c1"), sub_started(), sub_finished(outcome={"type": "suspended"}))[0]
    resumed = [
        start("r2"),
        sub_started(),
        sub_finished(),
        ev("TOOL_CALL_RESULT", messageId="m9", toolCallId="c1", content="ok"),
        finish("r2"),
    ]
    assert verify_events(first, history=verifier) == []
    assert verifier.suspended == {"sa"}
    assert verify_events(resumed, history=verifier) == []
    assert verifier.suspended == set()
    assert verify_events(resumed, history=ThreadVerifier()) == [
        "event 3 TOOL_CALL_RESULT: TOOL_CALL_RESULT names tool call 'c1', which this thread has never seen"
    ]


def test_tool_calls_known_from_the_request_messages() -> None:
    history = [{"id": "a1", "role": "assistant", "toolCalls": [{"id": "c7", "type": "function"}]}]
    events = [start(), ev("TOOL_CALL_RESULT", messageId="m1", toolCallId="c7", content="ok"), finish()]
    assert verify_events(events, history=ThreadVerifier(messages=history)) == []


def test_parse_sse_skips_comments_and_joins_data_lines() -> None:
    raw = b': keepalive\r\n\r\nevent: message\ndata: {"type": "RUN_STARTED",\ndata: "threadId": "t", "runId": "r"}\n\n'
    assert parse_sse(raw) == [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]


def sse(events: list[dict]) -> bytes:
    return b": captured for a test\n\n" + b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)


def test_cli_on_captures(tmp_path, capsys) -> None:
    good, bad, resume = tmp_path / "good.sse", tmp_path / "bad.json", tmp_path / "resume.sse"
    good.write_bytes(sse(one(text("m1"), tool("c1"))[0]))
    bad.write_text(json.dumps([start(), finish(), *text("m1")]))
    resume.write_bytes(
        sse([start("r2"), ev("TOOL_CALL_RESULT", messageId="m2", toolCallId="c1", content="x"), finish("r2")])
    )

    assert main([str(good)]) == 0
    assert capsys.readouterr().out.strip() == "ok: 1 run(s), 8 events, 0 problem(s)"
    assert main([str(bad)]) == 1
    assert "run 0: event 2 TEXT_MESSAGE_START: the run already finished" in capsys.readouterr().out
    assert main([str(good), str(resume)]) == 0  # the resume's result names a call of the first capture
    assert main([str(resume)]) == 1


class ScriptedRoute(BaseHTTPRequestHandler):
    """An AG-UI route that answers each POST with the next canned response, keeping the bodies."""

    responses: list[list[dict]] = []
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        payload = sse(self.responses[len(self.bodies) - 1])
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted_route() -> Iterator[type[ScriptedRoute]]:
    handler = type("Route", (ScriptedRoute,), {"responses": [], "bodies": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_port}/agent"
    yield handler
    server.shutdown()


def test_cli_live_url_with_resume(scripted_route, capsys) -> None:
    interrupt = {"id": "int-1", "reason": "tool_call", "toolCallId": "c1"}
    scripted_route.responses = [
        [start(), *tool("c1"), finish(outcome={"type": "interrupt", "interrupts": [interrupt]})],
        [start("r2"), ev("TOOL_CALL_RESULT", messageId="m2", toolCallId="c1", content="done"), finish("r2")],
    ]
    argv = [scripted_route.url, "--message", "delete notes.txt", "--resume", "resolved", "--state", '{"k": 1}']
    assert main(argv) == 0, capsys.readouterr().out
    first, second = (RunAgentInput.model_validate(body) for body in scripted_route.bodies)
    assert first.messages[0].content == "delete notes.txt" and first.state == {"k": 1}
    assert second.thread_id == first.thread_id
    assert [entry.model_dump(exclude_none=True) for entry in second.resume] == [
        {"interrupt_id": "int-1", "status": "resolved"}
    ]


def test_cli_live_url_reports_problems(scripted_route, capsys) -> None:
    scripted_route.responses = [[start(), sub_started(), finish()]]
    assert main([scripted_route.url]) == 1
    assert "RUN_FINISHED while subagents 'sa' still open" in capsys.readouterr().out
