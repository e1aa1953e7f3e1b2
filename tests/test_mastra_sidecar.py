"""The Mastra route's sidecar is the app's: started and stopped with it, watched, never orphaned.

Over real HTTP, with the real Node sidecar:

* the app's lifespan starts it and its shutdown kills it (the whole process group), whether the
  app runs in-process or as ``python -m deploy.serve`` stopped with SIGTERM; an app killed outright
  leaves no sidecar either (it exits when its stdin closes);
* killed mid-run, the client gets RUN_ERROR within a second; while it is down ``GET /`` says so,
  ``GET /ok`` answers at once and a run gets RUN_ERROR ``RUNTIME_UNAVAILABLE`` at once; once it is
  restarted the next run succeeds;
* a client that leaves while the model hangs aborts the Mastra run: the model request is closed;
* the sidecar keeps a suspended Mastra run exactly as long as the approval ledger keeps its thread
  waiting (``app/approvals.py``): never dropped by a cap of its own, dropped when the ledger forgets it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from app.config import Settings
from deploy.loopback import LOOPBACK, free_port, wait_until_ok
from tests.wire import Server, arun, open_stream, post_run, run_input, serve
from verifier import verify_events, verify_thread
from verifier.client import history_after, resume

ROUTE = "/mastra/agent"
ROOT = Path(__file__).resolve().parents[1]


def wait_for(condition: Callable[[], bool], within_s: float, what: str) -> float:
    """Poll ``condition`` until it holds; seconds taken (fails the test after ``within_s``)."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > within_s:
            pytest.fail(f"{what}: not within {within_s} s")
        time.sleep(0.02)
    return time.monotonic() - started


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def sidecar_pid(server: Server) -> int:
    pid = server.on_loop(lambda: server.pipeline(ROUTE).bridge.sidecar.pid)
    assert pid is not None, "the sidecar is not running"
    return pid


def availability(base: str) -> bool:
    listing = httpx.get(f"{base}/", timeout=5).json()
    return next(runtime["available"] for runtime in listing["runtimes"] if runtime["route"] == ROUTE)


def test_the_app_starts_the_sidecar_and_stops_its_whole_process_group() -> None:
    with serve() as server:
        pid = sidecar_pid(server)
        assert alive(pid) and os.getpgid(pid) == pid, "the sidecar leads a process group of its own"
        assert availability(server.base) is True
    wait_for(lambda: not alive(pid), 10, "the sidecar is gone after the app stopped")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_no_sidecar_outlives_the_served_app(stop: signal.Signals) -> None:
    """``python -m deploy.serve`` as ``make serve`` runs it: stopped politely or killed outright."""
    port = free_port()
    env = {**os.environ, "HOST": LOOPBACK, "PORT": str(port), "LOG_LEVEL": "warning", "AGUI_MODEL": "scripted"}
    process = subprocess.Popen([sys.executable, "-m", "deploy.serve"], cwd=ROOT, env=env)
    try:
        wait_until_ok(f"http://{LOOPBACK}:{port}", timeout_s=120, alive=lambda: process.poll() is None)
        [node] = [pid for pid in children(process.pid) if "node" in Path(f"/proc/{pid}/cmdline").read_text()]
        process.send_signal(stop)
        process.wait(timeout=30)
        wait_for(lambda: not alive(node), 10, f"no sidecar after {stop.name}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(Settings(agui_script_delay_ms=100, agui_keepalive_s=0.3)) as running:
        yield running


async def test_a_sidecar_killed_mid_run_fails_the_run_at_once_and_comes_back(server: Server) -> None:
    pid = sidecar_pid(server)
    events: list[dict] = []
    async with open_stream(server.base, ROUTE, run_input("Research the history of Lisbon")) as stream:
        async for event in stream:
            events.append(event)
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                killed = time.monotonic()
                os.kill(pid, signal.SIGKILL)
            if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                break
    failed_after = time.monotonic() - killed
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "RUNTIME_UNAVAILABLE", events[-1]
    assert verify_events(events) == [], [event["type"] for event in events]
    assert failed_after < 1.0, f"the client learned of it after {failed_after:.2f} s"

    # Down: GET / says so, /ok does not wait, a run is refused at once.
    await asyncio.to_thread(wait_for, lambda: not availability(server.base), 5, "GET / says the runtime is down")
    started = time.monotonic()
    assert httpx.get(f"{server.base}/ok", timeout=5).status_code == 200
    refused = await arun(server.base, ROUTE, run_input("Hello there!"), deadline_s=10)
    assert refused.types() == ["RUN_STARTED", "RUN_ERROR"] and refused.terminal["code"] == "RUNTIME_UNAVAILABLE"
    assert time.monotonic() - started < 1.0

    # Restarted: the next run succeeds, on a new process.
    await asyncio.to_thread(wait_for, lambda: availability(server.base), 60, "the sidecar is back")
    assert sidecar_pid(server) != pid and not alive(pid)
    after = await arun(server.base, ROUTE, run_input("Hello there!"), deadline_s=60)
    assert after.terminal["type"] == "RUN_FINISHED" and 'You said: "Hello there!"' in after.text()


class HungModel:
    """A model endpoint that answers with headers, then nothing, until the caller goes away."""

    def __init__(self) -> None:
        self.open = 0
        self.closed = 0

    def app(self) -> Starlette:
        async def completions(request: Request) -> StreamingResponse:
            async def silence() -> AsyncIterator[bytes]:
                self.open += 1
                try:
                    await asyncio.Event().wait()
                    yield b""
                finally:
                    self.closed += 1

            return StreamingResponse(silence(), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def test_a_client_that_leaves_aborts_the_mastra_run_on_a_hung_model() -> None:
    hung = HungModel()
    port = free_port()
    model = uvicorn.Server(uvicorn.Config(hung.app(), host=LOOPBACK, port=port, log_level="warning"))
    thread = threading.Thread(target=model.run, daemon=True)
    thread.start()
    wait_for(lambda: model.started, 10, "the hung model listens")
    settings = Settings(
        agui_model="openai",
        openai_base_url=f"http://{LOOPBACK}:{port}/v1",
        openai_api_key="k",
        agui_model_timeout_s=60,
        agui_keepalive_s=0.2,
    )
    try:
        with serve(settings) as app:

            async def leave_while_the_model_hangs() -> float:
                async with open_stream(app.base, ROUTE, run_input("Hello there!")) as stream:
                    async for event in stream:
                        if event["type"] == "RUN_STARTED":
                            break
                    while hung.open == 0:  # until the model request is in flight
                        await asyncio.sleep(0.01)
                return time.monotonic()

            asyncio.run(asyncio.wait_for(leave_while_the_model_hangs(), timeout=30))
            took = wait_for(lambda: hung.closed == hung.open == 1, 5, "the model request is closed")
            print(f"the Mastra run's model request closed {took:.2f} s after the client left")
    finally:
        model.should_exit = True
        thread.join(timeout=10)


def test_the_sidecar_keeps_what_the_ledger_keeps_parked_and_drops_what_it_forgets() -> None:
    """More waiting threads than the thread cache (the sidecar's own cap used to be 4x that), the
    ledger full and evicting: every thread the ledger keeps resumes and runs its approved call once;
    the evicted one is gone from the sidecar too; a finished run leaves nothing there."""
    parked = 6
    settings = Settings(
        agui_script_delay_ms=0, agui_thread_cache_size=1, agui_max_parked_approvals=parked, agui_approval_min_age_s=0
    )
    with serve(settings) as server:
        bridge = server.pipeline(ROUTE).bridge

        def stored() -> set[str]:
            return set(asyncio.run_coroutine_threadsafe(bridge.stored_threads(), server.loop).result(timeout=10))

        waiting: dict[str, tuple[dict, list[dict]]] = {}
        for index in range(parked + 1):  # the last one makes the ledger evict the longest waiting
            body = run_input("delete notes.txt", thread_id=f"parked-{index}")
            asked = post_run(server.base, ROUTE, body)
            assert asked.interrupts(), asked.types()
            waiting[body["threadId"]] = (body, asked.events)
        evicted = "parked-0"
        assert stored() == set(waiting) - {evicted}

        for thread, (body, events) in waiting.items():
            answer = run_input(
                thread_id=thread,
                messages=history_after(body, events),
                resume=resume(events[-1]["outcome"]["interrupts"], payload={"approved": True}),
            )
            resumed = post_run(server.base, ROUTE, answer)
            if thread == evicted:
                assert resumed.terminal["code"] == "INTERRUPT_EXPIRED", resumed.terminal
                continue
            assert resumed.terminal["type"] == "RUN_FINISHED", resumed.terminal
            assert verify_thread([events, resumed.events]) == []
            results = [event["content"] for event in resumed.of_type("TOOL_CALL_RESULT")]
            assert results.count('"Deleted notes.txt."') == 1, results
        assert stored() == set()  # settled before each response ended
