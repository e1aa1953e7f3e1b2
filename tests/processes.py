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
    Killed (with everything it started) when the block ends, if it still runs."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "deploy.serve"],
        cwd=ROOT,
        env=server_env(PORT=str(port), **extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://{LOOPBACK}:{port}"
    try:
        wait_until_ok(base, timeout_s=60, alive=lambda: process.poll() is None)
        yield base, process
    finally:
        kill(process)
        process.stderr.close()


def replica(engine: str, **settings: str) -> AbstractContextManager[tuple[str, subprocess.Popen]]:
    """:func:`served` as one replica over the shared engine at ``engine``, on the offline model at
    full speed unless ``settings`` say otherwise."""
    return served(**{"AGUI_STATE_URL": engine, "AGUI_SCRIPT_DELAY_MS": "0", **settings})


def kill(process: subprocess.Popen) -> None:
    """Kill the server at once (``SIGKILL``, as a crash would), with every process it started."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
