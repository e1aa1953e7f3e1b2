"""The container engine the image check builds and runs with: one row of data per engine.

Why: ``docker run`` is one of the ways this server is used, yet most machines that run the
checks have no Docker engine. Debian's podman builds the same Dockerfile and runs the same
image, so the check takes docker where a docker engine answers and podman otherwise, and
everything that differs between the two is a field of ``ENGINES``, not a branch in the check.

Podman is installed from Debian's packages when missing. What it needs on such a machine, found
by running it there:

- ``runc``: on hosts with hybrid cgroups (v1 controllers plus a v2 mount) podman's preferred
  ``crun`` refuses to start containers; ``runc`` starts them.
- explicit ``nofile``/``nproc`` limits: podman asks the runtime for 1048576 of each, which a
  process without CAP_SYS_RESOURCE may not grant, so every container fails to start. The limits
  given are the ones this process has (podman itself caps ``nproc`` at ``kernel.pid_max``).
- ``netavark`` and ``iptables`` for ``-p``, and ``--format docker`` for the build, without which
  podman drops the image's HEALTHCHECK.

All of that goes into a ``containers.conf`` of the check's own (``CONTAINERS_CONF``); the
machine's podman configuration is left as it is.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

APT_ENV = {"DEBIAN_FRONTEND": "noninteractive"}
APT_LOCK_WAIT = ("-o", "DPkg::Lock::Timeout=300")  # another apt on the machine: wait for it, boundedly


class EngineError(Exception):
    """No engine could be set up; the message says what is missing."""


def podman_config(workdir: Path) -> dict[str, str]:
    """Write the check's ``containers.conf`` (see the module docstring); returns podman's environment."""

    def hard(limit: int, ceiling: int) -> int:
        value = resource.getrlimit(limit)[1]
        return ceiling if value == resource.RLIM_INFINITY else min(value, ceiling)

    nofile = hard(resource.RLIMIT_NOFILE, int(Path("/proc/sys/fs/nr_open").read_text()))
    nproc = hard(resource.RLIMIT_NPROC, int(Path("/proc/sys/kernel/pid_max").read_text()))
    path = workdir / "containers.conf"
    path.write_text(
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
    )
    return {"CONTAINERS_CONF": str(path)}


def no_config(workdir: Path) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class Engine:
    """What one engine needs to build this Dockerfile and run the image like ``docker run`` does."""

    name: str
    build_flags: tuple[str, ...]
    run_flags: tuple[str, ...]
    health_probe: tuple[str, ...]
    """Runs the image's HEALTHCHECK once, now; () where the engine runs it by itself (``run_flags``)."""
    debian_packages: tuple[str, ...]
    """Installed with apt-get when missing; () for an engine the check does not install."""
    configure: Callable[[Path], dict[str, str]] = no_config


ENGINES: tuple[Engine, ...] = (
    Engine(
        name="docker",
        build_flags=(),
        run_flags=("--health-interval=1s",),  # the image's command, probed every second instead of every 30
        health_probe=(),
        debian_packages=(),
    ),
    Engine(
        name="podman",
        build_flags=("--format", "docker", "--pull=never"),  # the base is made local before the build
        run_flags=(),
        health_probe=("healthcheck", "run"),
        debian_packages=("podman", "runc", "netavark", "iptables"),
        configure=podman_config,
    ),
)


@dataclass
class Cli:
    """One engine's command line, with the environment its configuration needs."""

    engine: Engine
    env: Mapping[str, str] = field(default_factory=dict)

    def argv(self, *args: str) -> list[str]:
        return [self.engine.name, *args]

    def run(self, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        """Run one engine command to its end (bounded); never raises on a non-zero exit."""
        try:
            return subprocess.run(
                self.argv(*args), env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired as expired:
            return subprocess.CompletedProcess(expired.cmd, -1, "", f"no answer within {timeout_s:g} s")

    def popen(self, *args: str, log: Path) -> subprocess.Popen:
        """Start a long-running engine command (``run`` attached), its output going to ``log``."""
        with log.open("ab") as out:
            return subprocess.Popen(
                self.argv(*args), env={**os.environ, **self.env}, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C at the terminal is the check's to handle, not the engine's
            )  # fmt: skip


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def choose(name: str, workdir: Path) -> tuple[Cli, str]:
    """The engine to use (``auto``: docker if its engine answers, else podman); returns it and why."""
    engines = {engine.name: engine for engine in ENGINES}
    if name == "auto":
        name, why = ("docker", "docker info answers") if _docker_answers() else ("podman", "no docker engine answers")
    else:
        why = "asked for"
    engine = engines[name]
    install(engine.debian_packages)
    if shutil.which(engine.name) is None:
        raise EngineError(f"{engine.name} is not installed")
    return Cli(engine, engine.configure(workdir)), why


def _installed(package: str) -> bool:
    result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return result.stdout.endswith(" ok installed")


def install(packages: tuple[str, ...]) -> None:
    """apt-get install what is missing of ``packages``; ``apt-get update`` only when that fails."""
    if not packages or shutil.which("dpkg-query") is None:
        return  # not a Debian machine: the engine is the machine's own business
    missing = [package for package in packages if not _installed(package)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise EngineError(f"missing Debian packages {' '.join(missing)}; install them as root")
    print(f"image-check: apt-get={' '.join(missing)} | installing what the check needs", flush=True)
    command = ["apt-get", "install", "-y", "--no-install-recommends", *APT_LOCK_WAIT, *missing]
    env = {**os.environ, **APT_ENV}
    if subprocess.run(command, env=env, capture_output=True, timeout=900).returncode == 0:
        return
    subprocess.run(["apt-get", "update", *APT_LOCK_WAIT], env=env, capture_output=True, timeout=900)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise EngineError(f"apt-get install {' '.join(missing)} failed:\n{result.stdout[-2000:]}{result.stderr}")
