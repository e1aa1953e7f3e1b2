"""The server as it is started (``python -m deploy.serve``), as a process of its own, for tests.

Why a process: what happens at the server's edges (signals, slow clients, several replicas over
one shared engine, a replica killed mid-run) is only real with the real entry point in a process
that can be stopped or killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from deploy.loopback import LOOPBACK, free_port, wait_until_ok

ROOT = Path(__file__).resolve().parents[1]


def server_env(**extra: str) -> dict[str, str]:
    """This environment without any AG-UI or model setting, plus ``extra``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AGUI_", "OPENAI_"))}
    return env | {"HOST": LOOPBACK, "LOG_LEVEL": "warning"} | extra


@contextmanager
def served(**extra: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """A server process with ``extra`` settings, once ``/ok`` answers: its base URL and process.
    Killed (with everything it started) when the block ends, if it still runs. Its log goes to a
    file nobody has to read (a pipe nobody reads stops the server once its 64 KiB are full), whose
    end is shown if the server does not come up."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "deploy.serve"],
            cwd=ROOT,
            env=server_env(PORT=str(port), **extra),
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        base = f"http://{LOOPBACK}:{port}"
        try:
            # 120 s: a server that starts a Node sidecar took 38-40 s to answer at load 13 on two cores
            wait_until_ok(base, timeout_s=120, alive=lambda: process.poll() is None)
        except (RuntimeError, TimeoutError) as exc:
            kill(process)
            log.seek(0)
            raise RuntimeError(f"{exc}; the server's log ends: {log.read()[-2000:].decode(errors='replace')}") from exc
        try:
            yield base, process
        finally:
            kill(process)


def replica(engine: str, **settings: str) -> AbstractContextManager[tuple[str, subprocess.Popen]]:
    """:func:`served` as one replica over the shared engine at ``engine``, on the offline model at
    full speed unless ``settings`` say otherwise."""
    return served(**{"AGUI_STATE_URL": engine, "AGUI_SCRIPT_DELAY_MS": "0", **settings})


def kill(process: subprocess.Popen) -> None:
    """Kill the server at once (``SIGKILL``, as a crash would), with every process it started."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
