"""The server as it is started (``python -m deploy.serve``), as a separate process: what happens at
its edges. A bad setting stops the start with one line naming it; a client that sends its headers
a byte at a time loses its connection while ``/ok`` keeps answering; SIGTERM ends every open
stream with a terminal event before the process exits, cleanly."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import httpx

from tests.processes import ROOT, served, server_env
from tests.wire import REQUEST_HEADERS, ROUTES, StreamReader, run_input
from verifier import verify_events


def test_a_bad_setting_stops_the_start_with_one_line_naming_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deploy.serve"],
        cwd=ROOT,
        env=server_env(AGUI_MODEL="bogus", AGUI_MAX_TOOLS="many"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "AGUI_MODEL='bogus'" in lines[0] and "AGUI_MAX_TOOLS='many'" in lines[0]


def test_a_served_process_keeps_its_startup_objects_out_of_the_collectors_sight() -> None:
    """``deploy.serve`` builds the app, then freezes what exists and collects the youngest
    generation less often (the full collections over every runtime's modules were the largest cost
    of concurrent runs: docs/performance.md)."""
    probe = (
        "import gc; from deploy.serve import GC_THRESHOLD_0, served_app; served_app(); "
        "print(gc.get_freeze_count(), gc.get_threshold()[0] == GC_THRESHOLD_0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=server_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    frozen, threshold_set = done.stdout.split()
    assert int(frozen) > 100_000 and threshold_set == "True", done.stdout


def test_headers_that_trickle_in_lose_their_connection_and_ok_keeps_answering() -> None:
    with served(HEADER_TIMEOUT_S="1") as (base, _):
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as slow:
            slow.sendall(b"POST /ok HTTP/1.1\r\nHost: x\r\n")  # and never the rest
            assert httpx.get(f"{base}/ok", timeout=10).json() == {"ok": True}
            started = time.monotonic()
            assert slow.recv(1024) == b"", "the server closes the connection"
            assert time.monotonic() - started < 10


def test_sigterm_ends_every_open_stream_with_a_terminal_event_and_exits_cleanly() -> None:
    with served(SHUTDOWN_TIMEOUT_S="3", AGUI_SCRIPT_DELAY_MS="500") as (base, process):
        readers = []
        with httpx.Client(timeout=60) as client:
            body = run_input("Research the history of Lisbon")
            streams = [client.stream("POST", base + route, json=body, headers=REQUEST_HEADERS) for route in ROUTES]
            responses = [stream.__enter__() for stream in streams]
            for response in responses:  # every run has started before the signal
                reader = StreamReader()
                chunks = response.iter_bytes()
                while not reader._events:
                    reader.feed(next(chunks))
                readers.append((reader, chunks))
            stopped_at = time.monotonic()
            process.send_signal(signal.SIGTERM)
            for reader, chunks in readers:
                for chunk in chunks:
                    reader.feed(chunk)
            for stream in streams:
                stream.__exit__(None, None, None)
        assert process.wait(timeout=30) == 0
        assert time.monotonic() - stopped_at < 10
    for reader, _ in readers:
        run = reader.run(200)
        assert verify_events(run.events) == [], run.types()
        assert run.terminal["type"] == "RUN_ERROR" and run.terminal["code"] == "SERVER_SHUTDOWN", run.terminal
