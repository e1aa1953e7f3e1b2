"""Server processes for the benchmarks: spawn on a free loopback port, wait, measure, stop.

Every server is its own OS process (never a thread of the client), so the client's CPU and the
server's are not mixed, and the server's memory and CPU, with those of the processes it started (a
sidecar), can be read from ``/proc``. Output goes to a log file, never a pipe: a chatty server must
not block on a full pipe mid-measurement.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.scenarios import BARE_APPS, BARE_COMMANDS, route_of
from deploy.loopback import LOOPBACK, free_port, wait_until_ok

ROOT = Path(__file__).resolve().parent.parent
FLOOR_FRAMES_ENV = "BENCH_FLOOR_FRAMES"
"""Path of a JSON file ``{"<runtime>/<scenario>": [frame, ...]}`` the floor server replays."""


@dataclass(frozen=True)
class ServerSpec:
    """How to start one kind of server: ``{port}`` in ``argv`` and ``env`` becomes the chosen port."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    ready_path: str = "/ok"
    """GET this until it answers 200."""
    ready_any_status: bool = False
    """Any HTTP answer means the server is up (apps without ``/ok``: a 404 will do)."""
    clean_env: bool = True
    """Drop the caller's ``AGUI_*``/``OPENAI_*`` variables, so a benchmark always runs offline."""


OFFLINE_UNPACED = {"AGUI_MODEL": "scripted", "AGUI_SCRIPT_DELAY_MS": "0"}
"""What every benchmarked server runs with: the offline model, streaming without pauses."""


def ours_spec(env: dict[str, str] | None = None) -> ServerSpec:
    """This project's server, started the one way it is deployed (``python -m deploy.serve``),
    with ``env`` on top (pacing, ``AGUI_STATE_URL``, ``AGUI_WORKERS``)."""
    return ServerSpec(
        "ours",
        (sys.executable, "-m", "deploy.serve"),
        env={"HOST": LOOPBACK, "PORT": "{port}", "LOG_LEVEL": "warning", **OFFLINE_UNPACED, **(env or {})},
    )


def served_as_configured() -> ServerSpec:
    """This project's server with the caller's own settings (``make load --spawn``): pacing, model
    and token come from the environment, exactly as ``make serve`` would run it."""
    return ServerSpec(
        "serve",
        (sys.executable, "-m", "deploy.serve"),
        env={"HOST": LOOPBACK, "PORT": "{port}", "LOG_LEVEL": "warning"},
        clean_env=False,
    )


def uvicorn_spec(name: str, factory: str, env: dict[str, str] | None = None) -> ServerSpec:
    """A comparison app under plain uvicorn, same loop and log level as ours."""
    return ServerSpec(
        name,
        (
            sys.executable,
            "-m",
            "uvicorn",
            factory,
            "--factory",
            "--host",
            LOOPBACK,
            "--port",
            "{port}",
            "--log-level",
            "warning",
        ),
        env=env or {},
        ready_path="/",
        ready_any_status=True,
    )


def server_spec(
    kind: str, runtime: str, floor_frames: Path | None = None, env: dict[str, str] | None = None
) -> ServerSpec:
    """The server behind one benchmark target: ``ours`` (one process serves every runtime),
    ``bare`` (that runtime's bridge alone: the app its package declares, or the command, for a
    bridge that is not a Python app) or ``floor`` (replays ``floor_frames``). ``env`` goes on top of
    ours' and the bare bridge's settings (pacing)."""
    if kind == "ours":
        return ours_spec(env)
    if kind == "bare" and BARE_COMMANDS[runtime]:
        return ServerSpec(
            f"bare-{runtime}",
            BARE_COMMANDS[runtime],
            {**OFFLINE_UNPACED, **(env or {})},
            ready_path="/",
            ready_any_status=True,
        )
    if kind == "bare":
        return uvicorn_spec(f"bare-{runtime}", BARE_APPS[runtime], {**OFFLINE_UNPACED, **(env or {})})
    if kind == "floor":
        assert floor_frames is not None, "the floor replays captured frames"
        return uvicorn_spec("floor", "benchmarks.targets:floor_app", {FLOOR_FRAMES_ENV: str(floor_frames)})
    raise ValueError(f"unknown target kind {kind!r}")


def target_url(base: str, kind: str, runtime: str, scenario: str) -> str:
    """Where a target serves ``runtime``'s route (the floor: one path per captured scenario)."""
    return f"{base}/floor/{runtime}/{scenario}" if kind == "floor" else base + route_of(runtime)


def process_tree(pid: int) -> set[int]:
    """Process ``pid`` and its descendants still running."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it exited meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grew = {pid}, True
    while grew:
        children = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= children
        grew = bool(children)
    return tree


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and its descendants still running."""
    ticks = 0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> dict[int, int]:
    """Resident memory (``VmRSS``) of process ``pid`` and of each of its descendants still running,
    in KiB by pid: a server's memory includes the processes it started (a sidecar, the model a
    launcher serves it)."""
    sizes = {}
    for member in process_tree(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        sizes[member] = sum(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return sizes


class ServerProcess:
    """One running server. Use as a context manager: it is always stopped on the way out."""

    def __init__(self, spec: ServerSpec, log_dir: Path) -> None:
        self.spec = spec
        self.port = free_port()
        self.base = f"http://{LOOPBACK}:{self.port}"
        self.log_path = log_dir / f"{spec.name}-{self.port}.log"
        self.started_at = 0.0
        self._proc: subprocess.Popen | None = None

    def start(self) -> ServerProcess:
        env = {
            key: value
            for key, value in os.environ.items()
            if not (self.spec.clean_env and key.startswith(("AGUI_", "OPENAI_")))
        }
        env.update({key: value.replace("{port}", str(self.port)) for key, value in self.spec.env.items()})
        argv = [part.replace("{port}", str(self.port)) for part in self.spec.argv]
        with self.log_path.open("wb") as log:
            self.started_at = time.perf_counter()
            self._proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        return self

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    def wait_ready(self, timeout_s: float = 60.0) -> float:
        """Poll until the server answers; returns seconds since the process was started."""
        assert self._proc is not None, "not started"
        try:
            wait_until_ok(
                self.base,
                timeout_s=timeout_s,
                alive=lambda: self._proc.poll() is None,
                path=self.spec.ready_path,
                any_status=self.spec.ready_any_status,
            )
        except RuntimeError:
            raise RuntimeError(f"{self.spec.name} exited with {self._proc.returncode}; see {self.log_path}") from None
        return time.perf_counter() - self.started_at

    def rss_kib(self) -> dict[int, int]:
        """Resident memory of the server and of every process it started, in KiB by pid (:func:`rss_kib`)."""
        return rss_kib(self.pid)

    def cpu_s(self) -> float:
        """CPU seconds (user + system) used so far by the server and every process it started
        (uvicorn's workers)."""
        return cpu_seconds(self.pid)

    def stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.send_signal(signal.SIGTERM)
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
