"""The image check's parts that need no container engine.

``make image-check`` builds and runs the real image; these tests pin what it reads from the
Dockerfile (the base image, and so the stand-in it makes), the podman configuration it writes,
and its rule for a server stopped mid-stream: an open stream must end with a terminal event.
"""

from __future__ import annotations

import json
import resource
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from deploy.base_image import dockerfile_bases, recipe_for
from deploy.drive import OpenStream, StepFailed, ended_with_terminal_event
from deploy.engine import ENGINES, podman_config

ROOT = Path(__file__).resolve().parents[1]


def test_the_base_image_is_read_from_the_dockerfile() -> None:
    assert dockerfile_bases(ROOT / "Dockerfile") == ["python:3.11.14-slim-bookworm"]


def test_later_stages_built_on_earlier_ones_are_not_bases(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "ARG BASE=debian:bookworm-slim\nFROM --platform=linux/amd64 ${BASE} AS build\n"
        "FROM build AS test\nFROM python:3.12-slim-bookworm\nCOPY --from=test /x /x\n"
    )
    assert dockerfile_bases(dockerfile) == ["debian:bookworm-slim", "python:3.12-slim-bookworm"]


def test_a_stand_in_is_known_for_the_official_slim_python_images_only() -> None:
    recipe = recipe_for("python:3.11.14-slim-bookworm")
    assert recipe is not None and (recipe.suite, recipe.version) == ("bookworm", "3.11")
    assert recipe_for("python:3.11-slim-bookworm") == recipe
    assert recipe_for("python:3.11.14-alpine") is None
    assert recipe_for("node:20-slim") is None


def test_podman_gets_limits_it_may_grant_and_runc(tmp_path: Path) -> None:
    env = podman_config(tmp_path)
    text = Path(env["CONTAINERS_CONF"]).read_text()
    assert 'runtime = "runc"' in text
    limits = dict(item.split("=") for item in json.loads(text.split("default_ulimits = ")[1].splitlines()[0]))
    for name, limit in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        soft, hard = (int(value) for value in limits[name].split(":"))
        ours = resource.getrlimit(limit)[1]
        assert soft == hard and (ours == resource.RLIM_INFINITY or hard <= ours)


def test_every_engine_can_run_the_healthcheck() -> None:
    for engine in ENGINES:
        assert engine.health_probe or any(flag.startswith("--health-interval") for flag in engine.run_flags)


# --- a server stopped while a stream is open ----------------------------------------------

STARTED = b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n'
SHUTDOWN = b'data: {"type": "RUN_ERROR", "message": "server shutting down", "code": "SERVER_SHUTDOWN"}\n\n'


class StoppingRoute(BaseHTTPRequestHandler):
    """Streams RUN_STARTED, holds the stream open until ``stop`` is set, then sends ``ending`` (or cuts)."""

    protocol_version = "HTTP/1.1"
    stop: threading.Event
    ending: bytes

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._chunk(STARTED)
        self.stop.wait(10)
        if self.ending:
            self._chunk(self.ending)
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True  # no final chunk without an ending: the stream is cut

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stopping_route() -> Iterator[type[StoppingRoute]]:
    handler = type("Route", (StoppingRoute,), {"stop": threading.Event(), "ending": b""})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_port}/agent"
    yield handler
    handler.stop.set()
    server.shutdown()


def test_a_stream_ended_by_the_shutdown_drain_passes(stopping_route: type[StoppingRoute]) -> None:
    stopping_route.ending = SHUTDOWN
    stream = OpenStream(stopping_route.url, "Research the history of Lisbon", timeout_s=10)
    assert stream.wait_started(10)
    stopping_route.stop.set()
    assert ended_with_terminal_event(stream, 10) == "ended with RUN_ERROR SERVER_SHUTDOWN after 2 events"


def test_a_stream_cut_at_shutdown_fails(stopping_route: type[StoppingRoute]) -> None:
    stream = OpenStream(stopping_route.url, "Research the history of Lisbon", timeout_s=10)
    assert stream.wait_started(10)
    stopping_route.stop.set()
    with pytest.raises(StepFailed, match="the stream was cut after 1 events with no RUN_FINISHED or RUN_ERROR"):
        ended_with_terminal_event(stream, 10)
