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
   with the image's default environment. Wait for ``/ok``, then ``deploy.drive`` drives every
   route ``GET /`` lists (the same driver the image check uses on the built container). Any
   failure names the route and the step, and the report ends with the tail of the server's
   log. The server is always stopped.

Run it as ``make boot-check`` (or ``python -m deploy.boot_check``); exit code 0 means every
route answered. It uses only the standard library, ``httpx`` (a runtime dependency) and the
project's ``verifier``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from deploy.drive import LOG_TAIL_LINES, Report, StepFailed, drive, wait_for_ok
from deploy.loopback import free_port

PROJECT = Path(__file__).resolve().parents[1]

# The Dockerfile runs these same steps; tests/test_boot_check.py keeps the two in step.
# --locked (not --frozen): the install fails if uv.lock no longer matches pyproject.toml.
INSTALL_STEPS: tuple[tuple[str, ...], ...] = (
    ("sync", "--locked", "--no-dev", "--no-install-project"),
    ("sync", "--locked", "--no-dev", "--no-editable"),
)
RUNTIME_SETUP: tuple[str, ...] = ("python", "-m", "deploy.setup")
ENTRYPOINT: tuple[str, ...] = ("python", "-m", "deploy.serve")


class BootCheckError(Exception):
    """Provisioning failed: the image could not have been built either."""


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
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
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
                waited = wait_for_ok(base, process.poll, boot_timeout_s)
                report.passed.append(f"/ok answered after {waited:.1f} s")
                report.extend(drive(base, run_timeout_s=run_timeout_s))
            except StepFailed as failure:
                report.failures.append(f"boot: {failure}")
            if report.passed and process.poll() is not None:
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
