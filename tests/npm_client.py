"""Run the published ``@ag-ui/client`` (tests/client/harness.mjs) from Python and read its verdict.

Why a subprocess: the point is to judge our wire with code nobody here wrote, in the language the
reference verifier ships in. ``make test`` installs the harness (``npm ci``); tests skip with a
reason when Node or the installed harness is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

HARNESS_DIR = Path(__file__).parent / "client"
HARNESS = HARNESS_DIR / "harness.mjs"
# The client refuses some material only by logging: a STATE_DELTA it cannot apply, and anything its
# schema enforcement strips from an event ("Nothing handled it") before verifyEvents sees it.
REFUSAL_WARNINGS = ("Failed to apply state patch", "[ag-ui][enforce]")


def harness_missing() -> str | None:
    """Why the harness cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (HARNESS_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        return "tests/client is not installed: run `make client-deps` (npm ci --prefix tests/client)"
    return None


requires_harness = pytest.mark.skipif(harness_missing() is not None, reason=str(harness_missing()))


def run_harness(spec: dict | list[dict], timeout: float = 120) -> dict | list[dict]:
    """Feed ``spec`` (see harness.mjs; a list gets a list of reports) to the harness."""
    done = subprocess.run(
        ["node", str(HARNESS), "-"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"harness exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def replay(runs: list[list[dict]], **extra: object) -> dict:
    """The client's verdict on recorded responses of one thread (each one a runAgent call)."""
    return run_harness({"mode": "replay", "runs": runs, **extra})


def replay_many(threads: list[list[list[dict]]]) -> list[dict]:
    """:func:`replay` for many threads in one Node process (each on a fresh agent)."""
    return run_harness([{"mode": "replay", "runs": runs} for runs in threads])


def live(url: str, turns: list[dict], **extra: object) -> dict:
    """Drive ``url`` with HttpAgent through ``turns`` (``{"message"}``, ``{"resume"}``, ...)."""
    return run_harness({"mode": "live", "url": url, "turns": turns, **extra})


def rejections(report: dict) -> list[str]:
    """Everything the client refused: run errors, plus the refusals it only logs (REFUSAL_WARNINGS)."""
    return [
        problem
        for run in report["runs"]
        for problem in [run["error"], *(w for w in run["warnings"] if any(m in w for m in REFUSAL_WARNINGS))]
        if problem
    ]
