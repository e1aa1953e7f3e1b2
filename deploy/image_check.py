"""Image check: build the project's Dockerfile, run the image as ``docker run`` does, and drive it.

Why: ``docker run`` is one of the three ways this server is used, and the boot check only proves
what the image *installs*, outside a container. The project this grew from shipped an image that
built and "deployed" while its route was dead. So this check builds the real image, runs it with
``-p <port>:8000`` and proves from outside the container that it serves, measured, not inferred.

``make image-check`` (part of ``make test``):

1. engine: docker where a docker engine answers, otherwise podman, installed from Debian's
   packages when missing (``deploy.engine`` holds the differences as data);
2. base: the Dockerfile's ``FROM`` image from the engine's store, its registry, or a stand-in
   made from Debian's packages where no container registry is reachable (``deploy.base_image``);
3. build: the Dockerfile unchanged, with this machine's CA bundle as the ``ca-certificates``
   build secret (the Dockerfile's own support for TLS-intercepting proxies); prints the build
   time, the image's size (which must stay within ``SIZE_BUDGET_MB``) and its biggest layers;
4. run: ``run --rm -p 127.0.0.1:<free port>:8000`` with the image's defaults, then from outside:
   the time to a served ``/ok``, the server process's uid (not 0), the image's HEALTHCHECK as the
   engine runs it, ``deploy.drive`` on every route ``GET /`` lists (a plain reply, a delegation,
   an approval and its resume, every stream through the verifier), and ``stop``: exit code 0;
5. stop with open streams: a second container whose scripted model streams slowly; one
   delegation per route is held open (waiting for its first event, not for time), the container
   is stopped, and it must exit 0 within the stop timeout while every open stream ends with
   RUN_FINISHED or RUN_ERROR (the server's shutdown drain).

No container outlives the check, pass or fail (``--rm``, then ``rm -f`` whatever happened); a
failure prints the container's log tail. Exit code 0 means every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from deploy.base_image import BaseImageError, dockerfile_bases, ensure
from deploy.drive import (
    DELEGATION_PROMPT,
    LOG_TAIL_LINES,
    OpenStream,
    Report,
    StepFailed,
    drive,
    ended_with_terminal_event,
    list_routes,
    wait_for_ok,
)
from deploy.engine import ENGINES, Cli, EngineError, choose
from deploy.loopback import free_port

PROJECT = Path(__file__).resolve().parents[1]
TAG = "agui-multiruntime:image-check"
CONTAINER_PORT = 8000  # the image's PORT and EXPOSE
STOP_TIMEOUT_S = 10  # `docker stop` and `podman stop` wait this long by default before SIGKILL
SLOW_STREAMS = {"AGUI_SCRIPT_DELAY_MS": "2000"}  # a delegation then streams for over a minute
HOST_CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
LAYER_NOISE = re.compile(r"^/bin/sh -c (#\(nop\) )?|:[0-9a-f]{64}")  # shell prefix and content hashes
SIZE_BUDGET_MB = 850  # docs/deploy.md: base 148 MB, five Python runtimes 303 MB, Node 22 and a sidecar 365 MB
BUILD_TIMEOUT_S = 1800
BOOT_TIMEOUT_S = 60
HEALTH_TIMEOUT_S = 60


class BuildFailed(Exception):
    """The image did not build; the message holds the build's last lines."""


class Container:
    """``run --rm`` of the image, attached, its output in ``log``; always gone after ``with``."""

    def __init__(self, cli: Cli, image: str, name: str, log: Path, env: dict[str, str] | None = None) -> None:
        self.cli, self.image, self.name, self.log = cli, image, name, log
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        env_flags = [arg for key, value in (env or {}).items() for arg in ("-e", f"{key}={value}")]
        publish = f"127.0.0.1:{port}:{CONTAINER_PORT}"  # loopback only, like every test server here
        self.process = cli.popen(
            "run", "--rm", "--name", name, "-p", publish, *env_flags, *cli.engine.run_flags, image, log=log
        )

    def __enter__(self) -> Container:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def poll(self) -> int | None:
        return self.process.poll()

    def stop(self) -> tuple[bool, str]:
        """``stop`` with the engines' default timeout: did the server exit 0 by itself, and a line saying so."""
        start = time.monotonic()
        self.cli.run("stop", "--time", str(STOP_TIMEOUT_S), self.name, timeout_s=STOP_TIMEOUT_S + 60)
        try:
            code: int | None = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            code = None
        took = f"exit code {code} after {time.monotonic() - start:.1f} s"
        if code == 0:
            return True, f"{took} (stop timeout {STOP_TIMEOUT_S} s)"
        if code == 128 + signal.SIGKILL:
            return False, f"{took}: the engine killed it at the {STOP_TIMEOUT_S} s stop timeout"
        return False, f"{took}, expected 0"

    def remove(self) -> None:
        if self.process.poll() is None or self.exists():
            self.cli.run("rm", "--force", self.name, timeout_s=120)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def exists(self) -> bool:
        listed = self.cli.run("ps", "--all", "--filter", f"name=^{self.name}$", "--format", "{{.Names}}")
        return bool(listed.stdout.strip())

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])


# --- build ---------------------------------------------------------------------------------


def host_ca_bundle() -> str | None:
    """The CA bundle this machine trusts, handed to the build (a proxy's CA is in it if there is one)."""
    candidates = (os.environ.get("SSL_CERT_FILE", ""), *HOST_CA_BUNDLES)
    return next((path for path in candidates if path and Path(path).is_file()), None)


def build(cli: Cli, tag: str, workdir: Path) -> tuple[float, str]:
    """Build the Dockerfile as it is; returns the seconds it took and the image's id.

    The check runs that id, not ``tag``: another check building at the same time may move the
    tag. The image the tag named before is removed when nothing uses it, so repeated checks keep
    one image (and the build cache), not one per run.
    """
    bundle = host_ca_bundle()
    secret = ["--secret", f"id=ca-certificates,src={bundle}"] if bundle else []
    if bundle:
        print(f"image-check: ca-certificates={bundle} | the build trusts this machine's CA bundle", flush=True)
    previous = cli.run("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()
    iidfile, log = workdir / "image.id", workdir / "build.log"
    start = time.monotonic()
    result = cli.run(
        "build", *cli.engine.build_flags, *secret, "--iidfile", str(iidfile), "-t", tag,
        "-f", str(PROJECT / "Dockerfile"), str(PROJECT), timeout_s=BUILD_TIMEOUT_S,
    )  # fmt: skip
    took = time.monotonic() - start
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-LOG_TAIL_LINES:])
        raise BuildFailed(f"{cli.engine.name} build exited with {result.returncode}; its last lines:\n{tail}")
    image = iidfile.read_text().strip()
    if previous and previous.removeprefix("sha256:") != image.removeprefix("sha256:"):
        cli.run("rmi", previous)  # refused while a container (another check's) still uses it: fine
    return took, image


def _bytes(human: str) -> float:
    match = re.match(r"([\d.]+)\s*([kKMGT]?)B", human.strip())
    scale = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    return float(match[1]) * scale[match[2]] if match else 0.0


def describe(cli: Cli, image: str) -> tuple[int, str]:
    """The image's size in bytes, and a line naming it and its three biggest layers."""
    size = int(cli.run("image", "inspect", "--format", "{{.Size}}", image).stdout.strip() or 0)
    history = cli.run("history", "--no-trunc", "--format", "{{.Size}}\t{{.CreatedBy}}", image).stdout
    layers = [line.split("\t", 1) for line in history.splitlines() if "\t" in line]
    biggest = sorted(layers, key=lambda layer: _bytes(layer[0]), reverse=True)[:3]
    named = [f"{human} {LAYER_NOISE.sub('', created).strip()[:70]}" for human, created in biggest]
    return size, f"size={size / 1e6:.0f}MB (budget {SIZE_BUDGET_MB}MB) | biggest layers: " + "; ".join(named)


# --- run and drive -------------------------------------------------------------------------


def non_root(box: Container) -> str:
    status = box.cli.run("exec", box.name, "cat", "/proc/1/status")
    uid_line = next((line for line in status.stdout.splitlines() if line.startswith("Uid:")), None)
    if status.returncode != 0 or uid_line is None:
        raise StepFailed(f"could not read the server process's uid: {status.stderr.strip()[-300:]}")
    uids = uid_line.split()[1:]  # real, effective, saved, file system
    if "0" in uids:
        raise StepFailed(f"the server process runs as root (uids {' '.join(uids)})")
    return f"the server process (PID 1) runs as uid {uids[0]}, not root"


def healthy(box: Container) -> str:
    """The image's HEALTHCHECK, run by the engine, reports healthy."""
    declared = box.cli.run("image", "inspect", "--format", "{{json .Config.Healthcheck}}", box.image).stdout.strip()
    test = (json.loads(declared or "null") or {}).get("Test")
    if not test:
        raise StepFailed("the image declares no HEALTHCHECK")
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    status = ""
    while time.monotonic() < deadline:
        if box.cli.engine.health_probe:
            box.cli.run(*box.cli.engine.health_probe, box.name)
        status = box.cli.run("inspect", "--format", "{{.State.Health.Status}}", box.name).stdout.strip()
        if status == "healthy":
            return f"HEALTHCHECK reports healthy ({' '.join(test[1:3])} ...)"
        time.sleep(0.5)
    raise StepFailed(f"HEALTHCHECK status is {status or 'unknown'!r} after {HEALTH_TIMEOUT_S} s")


def check_running(cli: Cli, image: str, name: str, log: Path) -> tuple[Report, bool]:
    """Run the image with its defaults and drive it; returns the report and whether it booted."""
    report = Report()
    with Container(cli, image, name, log) as box:
        try:
            waited = wait_for_ok(box.base, box.poll, BOOT_TIMEOUT_S)
        except StepFailed as failure:
            report.failures.append(f"boot: {failure}")
            report.log_tail = box.log_tail()
            return report, False
        report.passed.append(f"/ok answered {waited:.2f} s after run ({box.base} -> {CONTAINER_PORT})")
        for step in (non_root, healthy):
            try:
                report.passed.append(step(box))
            except StepFailed as failure:
                report.failures.append(str(failure))
        report.extend(drive(box.base))
        if box.poll() is not None:
            report.failures.append(f"the container exited with code {box.poll()} during the check")
        else:
            clean, line = box.stop()
            (report.passed if clean else report.failures).append(f"stop: {line}")
    report.log_tail = box.log_tail()
    return report, True


def check_stop(cli: Cli, image: str, name: str, log: Path) -> Report:
    """Stop a container while one stream per route is open: exit 0, every stream ends properly."""
    label = "stop with open streams (shutdown drain)"
    report = Report()
    with Container(cli, image, name, log, env=SLOW_STREAMS) as box:
        try:
            waited = wait_for_ok(box.base, box.poll, BOOT_TIMEOUT_S)
            routes = list_routes(box.base)
        except StepFailed as failure:
            report.failures.append(f"{label}: boot: {failure}")
            report.log_tail = box.log_tail()
            return report
        report.passed.append(f"{label}: second container, /ok answered {waited:.2f} s after run")
        streams = [OpenStream(box.base + route, DELEGATION_PROMPT, timeout_s=120) for route in routes]
        silent = [stream.url for stream in streams if not stream.wait_started(60)]
        if silent:
            report.failures.append(f"{label}: no first event within 60 s on {', '.join(silent)}")
        clean, line = box.stop()
        (report.passed if clean else report.failures).append(f"{label}: {len(streams)} open stream(s), {line}")
        for route, stream in zip(routes, streams, strict=True):
            try:
                report.passed.append(f"{label}: {route} {ended_with_terminal_event(stream, 30)}")
            except StepFailed as failure:
                report.failures.append(f"{label}: {route} {failure}")
    report.log_tail = box.log_tail()
    return report


def run_checks(cli: Cli, image: str, workdir: Path) -> Report:
    """Both containers, then proof that neither is left behind."""
    prefix = f"agui-image-check-{uuid.uuid4().hex[:8]}"
    running, booted = check_running(cli, image, f"{prefix}-run", workdir / "run.log")
    print(running.render(), flush=True)
    report = Report(passed=running.passed, failures=running.failures)
    if booted:
        stopping = check_stop(cli, image, f"{prefix}-stop", workdir / "stop.log")
        print(stopping.render(), flush=True)
        report.extend(stopping)
    left = cli.run("ps", "--all", "--filter", f"name={prefix}", "--format", "{{.Names}}").stdout.split()
    line = f"containers left behind: {', '.join(left) or 'none'}"
    print(f"{'FAIL' if left else 'ok  '}  {line}", flush=True)
    if left:
        report.failures.append(line)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["auto", *(engine.name for engine in ENGINES)], default="auto")
    parser.add_argument("--tag", default=TAG, help=f"the image's name (default {TAG})")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # so cleanup runs
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="image-check-") as tmp:
        workdir = Path(tmp)
        try:
            cli, why = choose(args.engine, workdir)
            version = cli.run("--version").stdout.strip()
            print(f"image-check: engine={cli.engine.name} | {why}; {version} ({time.monotonic() - start:.1f} s)")
            for base in dockerfile_bases(PROJECT / "Dockerfile"):
                began = time.monotonic()
                how = ensure(cli, base)
                print(f"image-check: base={base} | {how} ({time.monotonic() - began:.1f} s)", flush=True)
            took, image = build(cli, args.tag, workdir)
        except (EngineError, BaseImageError, BuildFailed) as error:
            print(f"image-check: FAIL  {error}", file=sys.stderr, flush=True)
            return 1
        print(f"image-check: build={took:.1f}s | {args.tag} ({image[:19]}) from {PROJECT / 'Dockerfile'}", flush=True)
        size, line = describe(cli, image)
        print(f"image-check: {line}", flush=True)
        report = run_checks(cli, image, workdir)
        if size > SIZE_BUDGET_MB * 1e6:
            report.failures.append(f"the image is {size / 1e6:.0f} MB, over its {SIZE_BUDGET_MB} MB budget")
            print(f"FAIL  {report.failures[-1]} (docs/deploy.md says what it is made of)", flush=True)
    verdict = "passed" if report.ok else "FAILED"
    print(f"image-check: {verdict} | {time.monotonic() - start:.0f} s in all", flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
