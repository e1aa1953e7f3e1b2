"""A client that goes away mid-run stops the run's work, and the thread stays usable.

Over real HTTP on a slow scripted model (200 ms between chunks, so a delegation takes seconds):
open the stream, read until the specialist is talking, close the connection. Then, on each route:

* no model chunk is produced for that thread afterwards (the parent's model call and the
  specialist are cancelled): every chunk the scripted models produce passes ``runtimes.script.paced``,
  which the test wraps to record the thread of the run it belongs to (the emitter core's run context);
* every task of the run has ended: the server loop is back to its idle task count;
* the run log line says ``disconnected``; the bridge holds no run in flight for the thread;
* the next run on the thread works at once.

The same holds for a run waiting on a real model endpoint that never answers: the HTTP call to
the model is cancelled long before its own timeout.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.config import Settings
from emitters.core import current_run
from runtimes import script
from tests import fake_openai
from tests.fake_openai import fake_openai_server, real_model_settings
from tests.wire import ROUTES, Server, arun, open_stream, run_input, serve
from verifier import verify_events

DELAY_MS = 200
STOP_WITHIN_S = 3.0
"""Generous on a noisy 2-core machine; measured well under a second."""
KEEP_ALIVE_S = 5.0
"""How long an HTTP client may keep a model connection it no longer uses before closing it: a
sidecar's Node fetch keeps one in its pool (and, after an aborted call, opens a spare one), each
closed after its 4 s keep-alive timeout."""


@dataclass
class Chunks:
    """Model chunks produced, by thread: (thread id, monotonic time)."""

    seen: list[tuple[str | None, float]] = field(default_factory=list)

    def record(self) -> None:
        run = current_run()
        self.seen.append((run.thread_id if run else None, time.monotonic()))

    def of(self, thread_id: str, after: float) -> list[float]:
        return [at - after for thread, at in self.seen if thread == thread_id and at > after]


@pytest.fixture
def chunks(monkeypatch: pytest.MonkeyPatch) -> Chunks:
    """Record every chunk every scripted model streams (they all stream through ``script.paced``)."""
    record = Chunks()
    real_paced = script.paced

    async def paced(*args: object, **kwargs: object) -> AsyncIterator:
        async for item in real_paced(*args, **kwargs):
            record.record()
            yield item

    monkeypatch.setattr(script, "paced", paced)
    return record


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(Settings(agui_script_delay_ms=DELAY_MS, agui_keepalive_s=0.3)) as running:
        yield running


def not_running(server: Server, route: str, thread_id: str) -> bool:
    """The route's bridge holds no run in flight for the thread (asked on the server's loop)."""
    return thread_id not in server.on_loop(lambda: server.pipeline(route).bridge.held_threads().running)


def run_log(caplog: pytest.LogCaptureFixture, run_id: str) -> list[dict]:
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "agui.run"]
    return [line for line in lines if line["runId"] == run_id]


async def read_then_leave(
    server: Server, route: str, body: dict, until: Callable[[dict], bool]
) -> tuple[list[dict], float]:
    """Read events until ``until(event)`` is true, then close the connection; returns what was read
    and when the connection was closed."""
    seen: list[dict] = []
    async with open_stream(server.base, route, body) as events:
        async for event in events:
            seen.append(event)
            if until(event):
                break
    return seen, time.monotonic()


def specialist_talking(event: dict) -> bool:
    return event["type"] == "TEXT_MESSAGE_CONTENT" and "subagentRunId" in event


def both_specialists_started(seen: list[dict]) -> Callable[[dict], bool]:
    def until(event: dict) -> bool:
        seen.append(event)
        return sum(e["type"] == "SUBAGENT_STARTED" for e in seen) == 2

    return until


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "message", ["Research the history of Zanzibar", "Compare Zanzibar and Mombasa"], ids=["delegation", "parallel"]
)
async def test_disconnect_mid_delegation_stops_the_run_and_frees_the_thread(
    server: Server, chunks: Chunks, caplog: pytest.LogCaptureFixture, route: str, message: str
) -> None:
    caplog.set_level(logging.INFO, logger="agui.run")
    warm = await arun(server.base, route, run_input("Hello"), deadline_s=60)
    assert warm.terminal["type"] == "RUN_FINISHED"
    idle = len(server.tasks())
    body = run_input(message)
    thread_id = body["threadId"]
    opened: list[dict] = []
    until = specialist_talking if "Compare" not in message else both_specialists_started(opened)
    seen, closed = await read_then_leave(server, route, body, until)
    assert any(e["type"] == "SUBAGENT_STARTED" for e in seen)
    assert chunks.of(thread_id, after=0), "the recorder saw the run's model chunks"

    waited, left = server.settle(idle, within_s=STOP_WITHIN_S)
    assert len(left) <= idle, f"{len(left) - idle} task(s) of the run still running after {waited:.1f} s: {left}"
    # Every task of the run has ended, so nothing can stream for it any more: a chunk recorded
    # after the close can only be one already in flight (within a model delay of the close).
    late = chunks.of(thread_id, after=closed)
    assert not late or max(late) < 0.5, f"model chunks after the client left: {late}"

    [line] = run_log(caplog, body["runId"])
    assert line["outcome"] == "disconnected" and line["threadId"] == thread_id
    assert not_running(server, route, thread_id), "the bridge still holds the thread's run"

    follow_up = await arun(server.base, route, run_input("Hello there!", thread_id=thread_id), deadline_s=60)
    assert verify_events(follow_up.events) == []
    assert follow_up.terminal["type"] == "RUN_FINISHED", follow_up.terminal
    assert 'You said: "Hello there!"' in follow_up.text()
    print(f"{route} {message!r}: tasks back to idle {waited:.2f} s after close; last chunk {late}")


@pytest.mark.parametrize("route", ROUTES)
async def test_disconnect_right_after_the_run_starts(server: Server, chunks: Chunks, route: str) -> None:
    idle = len(server.tasks())
    body = run_input("Write a story about lighthouses")
    _, closed = await read_then_leave(server, route, body, lambda event: event["type"] == "RUN_STARTED")
    waited, left = server.settle(idle, within_s=STOP_WITHIN_S)
    assert len(left) <= idle, f"{len(left) - idle} task(s) still running after {waited:.1f} s"
    late = chunks.of(body["threadId"], after=closed)
    assert not late or max(late) < 0.5, late
    follow_up = await arun(server.base, route, run_input("Hello", thread_id=body["threadId"]), deadline_s=60)
    assert follow_up.terminal["type"] == "RUN_FINISHED"


def test_disconnect_while_the_model_endpoint_hangs_cancels_the_model_call() -> None:
    """The model endpoint never answers and its timeout is long (30 s): leaving must not wait for it."""
    with fake_openai_server() as endpoint:
        settings = real_model_settings(endpoint, "fake-hang", agui_model_timeout_s=30, agui_keepalive_s=0.2)
        with serve(settings) as hung:
            idle = len(hung.tasks())
            for route in ROUTES:
                body = run_input("Hello there!")

                async def leave_during_silence(route: str = route, body: dict = body) -> float:
                    asked = fake_openai.received["fake-hang"]
                    async with open_stream(hung.base, route, body) as events:
                        async for event in events:
                            if event["type"] == "RUN_STARTED":
                                break
                        while fake_openai.received["fake-hang"] == asked:  # until the model call is in flight
                            await asyncio.sleep(0.01)
                    return time.monotonic()

                asyncio.run(asyncio.wait_for(leave_during_silence(), timeout=20))
                waited, left = hung.settle(idle, within_s=STOP_WITHIN_S)
                assert len(left) <= idle, f"{route}: {len(left) - idle} task(s) still waiting on the model: {left}"
                assert not_running(hung, route, body["threadId"])
                print(f"{route} hung model: tasks back to idle {waited:.2f} s after close")


def model_connections(port: int) -> int:
    """Established TCP connections to ``port`` on this machine (client ends and server ends)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if state == "01" and port in (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)):
                count += 1
    return count


def test_every_model_connection_is_closed_when_its_client_leaves() -> None:
    """Twenty clients leave while the model is mid-answer (it stalls after two chunks): no connection
    to the model endpoint may be left open, on any route."""
    with fake_openai_server() as endpoint:
        port = int(endpoint.rsplit(":", 1)[1].split("/")[0])
        settings = real_model_settings(endpoint, "fake-stall", agui_model_timeout_s=60)
        with serve(settings) as server:
            idle = len(server.tasks())
            for route in ROUTES:
                for _ in range(20):
                    asked = fake_openai.received["fake-stall"]

                    async def leave_mid_answer(route: str = route, asked: int = asked) -> None:
                        async with open_stream(server.base, route, run_input("Hello there!")) as events:
                            await anext(events)
                            while fake_openai.received["fake-stall"] == asked:
                                await asyncio.sleep(0.01)

                    asyncio.run(asyncio.wait_for(leave_mid_answer(), timeout=30))
                server.settle(idle, within_s=STOP_WITHIN_S)
                # The whole window, not until the first zero read: the spare connection a Node fetch opens
                # after an aborted call is established a few milliseconds later, maybe after such a read.
                time.sleep(STOP_WITHIN_S + KEEP_ALIVE_S)
                assert model_connections(port) == 0, f"{route}: connections to the model endpoint left open"
