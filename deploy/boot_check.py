"""Boot check: prove that what the image installs serves every route, without a Docker engine.

Why: a deploy step that exits zero only says a file was uploaded. The project this grew from
had a route dead for months while every deploy "succeeded": the image crashed at boot and the
platform kept serving the old one. So this check verifies the route, not the exit code.

It does what the ``Dockerfile`` does, outside a container:

1. ``provision``: copy the build context (exactly what ``.dockerignore`` lets through), then
   run the Dockerfile's own ``uv sync`` steps (``INSTALL_STEPS``) into a fresh virtual
   environment: the locked dependency set, then the project as a non-editable package; then,
   as the image does, every runtime's own set-up with that environment's Python
   (``RUNTIME_SETUP``: ``deploy/setup.py``, e.g. a sidecar's locked npm modules).
2. ``check``: start that environment's ``python -m deploy.serve`` (the image's entrypoint) in an
   empty directory, so the installed package is what gets imported, on a free loopback port,
   with the image's default environment. Wait for ``/ok``, read the routes from ``GET /``, and
   drive one plain run and one delegation on each. Any failure names the route and the step,
   and the report ends with the tail of the server's log. The server is always stopped.

Run it as ``make boot-check`` (or ``python -m deploy.boot_check``); exit code 0 means every
route answered. It uses only the standard library and ``httpx`` (a runtime dependency).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

PROJECT = Path(__file__).resolve().parents[1]

# The Dockerfile runs these same steps; tests/test_boot_check.py keeps the two in step.
# --locked (not --frozen): the install fails if uv.lock no longer matches pyproject.toml.
INSTALL_STEPS: tuple[tuple[str, ...], ...] = (
    ("sync", "--locked", "--no-dev", "--no-install-project"),
    ("sync", "--locked", "--no-dev", "--no-editable"),
)
RUNTIME_SETUP: tuple[str, ...] = ("python", "-m", "deploy.setup")
ENTRYPOINT: tuple[str, ...] = ("python", "-m", "deploy.serve")

PLAIN_PROMPT = "Hello there!"
DELEGATION_PROMPT = "Research the history of Lisbon"
LOG_TAIL_LINES = 40


class BootCheckError(Exception):
    """Provisioning failed: the image could not have been built either."""


@dataclass
class Report:
    """What the check saw: one line per passed step, one per failure, and the server's last words."""

    passed: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    log_tail: str = ""

    @property
    def ok(self) -> bool:
        return not self.failures

    def render(self) -> str:
        lines = [f"ok    {line}" for line in self.passed] + [f"FAIL  {line}" for line in self.failures]
        if self.failures and self.log_tail:
            lines += [f"--- last {LOG_TAIL_LINES} lines of the server log ---", self.log_tail.rstrip()]
        return "\n".join(lines)


class StepFailed(Exception):
    """One step on one route went wrong; the message says how."""


# --- 1. provision: the image's install, in a fresh virtual environment -------------------


def build_context(project: Path, dest: Path) -> None:
    """Copy into ``dest`` what ``.dockerignore`` lets into the image's build context.

    Only the allow-list form is supported (``*`` first, then ``!path`` lines, then ``**/glob``
    exclusions), which keeps the file and this reader simple and a new top-level file out of
    the image until someone lists it.
    """
    rules = [line.strip() for line in (project / ".dockerignore").read_text().splitlines()]
    rules = [rule for rule in rules if rule and not rule.startswith("#")]
    if rules[:1] != ["*"]:
        raise BootCheckError(".dockerignore must start with '*' (allow-list form)")
    included, excluded = [], []
    for rule in rules[1:]:
        if rule.startswith("!"):
            included.append(rule[1:].strip("/"))
        elif rule.startswith("**/"):
            excluded.append(rule.removeprefix("**/"))
        else:
            raise BootCheckError(f".dockerignore rule {rule!r}: only '!path' and '**/glob' follow '*'")
    ignore = shutil.ignore_patterns(*excluded)
    for name in included:
        source = project / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        elif source.is_file():
            shutil.copy2(source, dest / name)
        else:
            raise BootCheckError(f".dockerignore lets in {name!r}, which does not exist")


def provision(project: Path, workdir: Path, uv: str) -> Path:
    """Install what the image installs into ``workdir/venv``; returns that environment's python."""
    source, venv = workdir / "src", workdir / "venv"
    source.mkdir()
    build_context(project, source)
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env |= {"UV_PROJECT_ENVIRONMENT": str(venv), "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never"}
    for step in INSTALL_STEPS:
        command = f"uv {' '.join(step)}"
        print(f"boot-check: {command}", flush=True)
        result = subprocess.run([uv, *step], cwd=source, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise BootCheckError(
                f"`{command}` failed with exit code {result.returncode} (the image build would too):\n"
                + result.stderr.strip()
            )
    python = venv / "bin" / "python"
    print(f"boot-check: {' '.join(RUNTIME_SETUP)}", flush=True)
    result = subprocess.run([str(python), *RUNTIME_SETUP[1:]], cwd=workdir, capture_output=True, text=True)
    if result.returncode != 0:
        raise BootCheckError(
            f"the runtimes' set-up failed with exit code {result.returncode} (the image build would too):\n"
            + (result.stderr or result.stdout).strip()
        )
    return python


# --- 2. check: boot the entrypoint and drive every route ---------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(port: int) -> dict[str, str]:
    """The image's environment, not the caller's: no AGUI_*/OPENAI_* overrides, no PYTHONPATH.

    Only the bind address differs (loopback here, 0.0.0.0 in the image), and the scripted
    model streams without pauses so the check is quick.
    """
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONUNBUFFERED": "1",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "AGUI_SCRIPT_DELAY_MS": "0",
    }


@contextmanager
def running_server(python: Path, cwd: Path, port: int, log_path: Path) -> Iterator[subprocess.Popen]:
    """Start the entrypoint; on exit stop it (and anything it spawned), whatever happened."""
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [str(python), *ENTRYPOINT[1:]],  # this venv's python stands for the image's "python" on PATH
            cwd=cwd,
            env=server_env(port),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so workers die with it
        )
        try:
            yield process
        finally:
            _stop(process)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_for_ok(base: str, process: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StepFailed(f"server exited with code {process.returncode} before /ok answered")
        try:
            if httpx.get(f"{base}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise StepFailed(f"/ok did not answer 200 within {timeout_s:g} s")


def list_routes(base: str) -> list[str]:
    response = httpx.get(f"{base}/", timeout=10)
    if response.status_code != 200:
        raise StepFailed(f"GET / answered HTTP {response.status_code}")
    routes = [runtime.get("route") for runtime in response.json().get("runtimes", [])]
    if not routes or not all(isinstance(route, str) for route in routes):
        raise StepFailed(f"GET / lists no runtime routes: {response.text[:300]}")
    return routes


def run_body(prompt: str) -> dict:
    """A complete RunAgentInput (wire form) with one user message."""
    return {
        "threadId": f"boot-check-{uuid.uuid4().hex[:8]}",
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": [{"id": f"msg-{uuid.uuid4().hex[:8]}", "role": "user", "content": prompt}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def stream_run(url: str, prompt: str, timeout_s: float) -> list[dict]:
    """POST one run and return its events; a slow trickle still ends at ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    raw = b""
    headers = {"accept": "text/event-stream"}
    try:
        with httpx.stream("POST", url, json=run_body(prompt), headers=headers, timeout=timeout_s) as response:
            for chunk in response.iter_bytes():
                raw += chunk
                if time.monotonic() > deadline:
                    raise StepFailed(f"the stream was still open after {timeout_s:g} s")
            if response.status_code != 200:
                raise StepFailed(f"HTTP {response.status_code}: {raw[:300].decode(errors='replace')}")
    except httpx.TimeoutException:
        raise StepFailed(f"no complete response within {timeout_s:g} s") from None
    except httpx.HTTPError as error:
        raise StepFailed(f"request failed: {error!r}") from None
    return parse_sse(raw)


def parse_sse(raw: bytes) -> list[dict]:
    events = []
    for frame in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].lstrip() for line in frame.split(b"\n") if line.startswith(b"data:")]
        if data:
            events.append(json.loads(b"\n".join(data)))
    return events


def verify_run(events: list[dict], *, expect: tuple[str, ...] = ()) -> str:
    """Check the shape every run must have; returns a one-line summary or raises ``StepFailed``."""
    types = [event.get("type") for event in events]
    if "RUN_ERROR" in types:
        error = events[types.index("RUN_ERROR")]
        code = f" {error['code']}" if error.get("code") else ""
        raise StepFailed(f"RUN_ERROR{code}: {error.get('message')}")
    if not types:
        raise StepFailed("the stream carried no events")
    if types[0] != "RUN_STARTED":
        raise StepFailed(f"first event is {types[0]}, not RUN_STARTED")
    if types[-1] != "RUN_FINISHED":
        raise StepFailed(f"stream ended with {types[-1]}, not RUN_FINISHED")
    for required in ("TEXT_MESSAGE_CONTENT", *expect):
        if required not in types:
            raise StepFailed(f"no {required} event among {len(types)} events")
    return f"{len(types)} events"


STEPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("plain message", PLAIN_PROMPT, ()),
    ("delegation", DELEGATION_PROMPT, ("SUBAGENT_STARTED",)),
)


def check(
    python: Path,
    cwd: Path,
    *,
    port: int | None = None,
    boot_timeout_s: float = 120,
    run_timeout_s: float = 60,
) -> Report:
    """Boot ``python -m deploy.serve`` in ``cwd`` and drive every route it lists."""
    report = Report()
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="boot-check-log-") as logs:
        log_path = Path(logs) / "server.log"
        with running_server(python, cwd, port, log_path) as process:
            try:
                wait_for_ok(base, process, boot_timeout_s)
                report.passed.append("/ok answered")
                routes = list_routes(base)
            except StepFailed as failure:
                report.failures.append(f"boot: {failure}")
                routes = []
            for route in routes:
                for step, prompt, expect in STEPS:
                    try:
                        summary = verify_run(stream_run(f"{base}{route}", prompt, run_timeout_s), expect=expect)
                        report.passed.append(f"{route} {step}: {summary}")
                    except StepFailed as failure:
                        report.failures.append(f"{route} {step}: {failure}")
            if routes and process.poll() is not None:
                report.failures.append(f"server exited with code {process.returncode} during the check")
        report.log_tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", default="uv", help="the uv executable (default: uv on PATH)")
    args = parser.parse_args(argv)
    uv = shutil.which(args.uv)
    if uv is None:
        print(f"boot-check: FAIL  uv not found at {args.uv!r}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="boot-check-") as tmp:
        workdir = Path(tmp)
        try:
            python = provision(PROJECT, workdir, str(Path(uv).resolve()))
        except BootCheckError as error:
            print(f"boot-check: FAIL  provision: {error}", file=sys.stderr)
            return 1
        empty = workdir / "run"  # nothing here to import: the installed package has to serve
        empty.mkdir()
        report = check(python, empty)
    print(report.render(), flush=True)
    print(f"boot-check: {'passed' if report.ok else 'FAILED'}", flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
