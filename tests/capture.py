"""Wire captures: what every runtime put on the wire for every surface, committed verbatim.

    python -m tests.capture        (or ``make captures``, which also regenerates docs/matrix.md)

Runs every scenario of ``verifier/scenarios.py`` on every route of ``app.registry.RUNTIMES``, on the
offline model, and writes each response's raw SSE bytes untouched to
``tests/captures/<runtime>/<surface>[.<turn>].sse`` (a turn number when the scenario has a second
turn). Beside each one, ``<same name>.json`` records the request that produced it, when, and the
installed bridge and protocol versions, so the ``.sse`` stays a plain SSE stream any tool can read.

Why commit them: a portability claim holds only while what the bridges emit is pinned down. The
suite replays every capture through the protocol models, both verifiers and the published client,
and compares a fresh run's event sequence with it, so a bridge upgrade that changes the wire fails
a test with a diff. Ids and timestamps differ between runs; the captures keep them as they were.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, cached_property
from importlib import metadata
from pathlib import Path

from app.config import Settings
from app.registry import RUNTIMES
from tests.wire import Exchange, live_server, play
from verifier import parse_sse
from verifier.scenarios import SCENARIOS, Scenario
from verifier.surfaces import SURFACES, Check, Surface, judge

CAPTURES = Path(__file__).parent / "captures"
VERSIONED = (
    "ag-ui-protocol",
    *sorted({name for runtime in RUNTIMES for name in (runtime.bridge_package, *runtime.packages)}),
)
"""The distributions whose versions every capture records: the protocol, each bridge, each runtime's core."""


def capture_settings() -> Settings:
    """The offline model with no pauses, whatever the environment says: captures must be reproducible."""
    return Settings(
        agui_model="scripted", agui_script_delay_ms=0, agui_subagent_events=True, agui_token=None, agui_cors_origins=[]
    )


def installed_versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in VERSIONED}


def capture_name(scenario: Scenario, turn: int) -> str:
    """``text`` for a one-turn scenario, ``approval.1`` / ``approval.2`` for a two-turn one."""
    return scenario.surface if scenario.turns == 1 else f"{scenario.surface}.{turn}"


@dataclass(frozen=True)
class Capture:
    """One committed response: its raw bytes, decoded events and sidecar metadata."""

    path: Path
    raw: bytes
    meta: dict

    @cached_property
    def events(self) -> list[dict]:
        return parse_sse(self.raw)

    @property
    def request(self) -> dict:
        return self.meta["request"]


@dataclass(frozen=True)
class CapturedThread:
    """Every committed turn of one scenario on one runtime, in order."""

    runtime: str
    surface: str
    turns: list[Capture]

    @property
    def key(self) -> str:
        return f"{self.runtime}/{self.surface}"

    @property
    def runs(self) -> list[list[dict]]:
        return [capture.events for capture in self.turns]

    @property
    def requests(self) -> list[dict]:
        return [capture.request for capture in self.turns]


def load_captures(root: Path = CAPTURES) -> list[CapturedThread]:
    """Every committed thread, grouped from the sidecars (runtime and scenario order of the tables)."""
    threads = []
    for runtime in RUNTIMES:
        for scenario in SCENARIOS:
            turns = []
            for turn in range(1, scenario.turns + 1):
                sse = root / runtime.name / f"{capture_name(scenario, turn)}.sse"
                if sse.exists():
                    meta = json.loads(sse.with_suffix(".json").read_text())
                    turns.append(Capture(path=sse, raw=sse.read_bytes(), meta=meta))
            if turns:
                threads.append(CapturedThread(runtime.name, scenario.surface, turns))
    return threads


@cache
def offline_threads() -> dict[str, CapturedThread]:
    """The committed threads by ``<runtime>/<scenario>``."""
    return {thread.key: thread for thread in load_captures()}


def against_offline(runtime: str, scenario: str, exchanges: Sequence[Exchange]) -> tuple[Surface, Check, Check]:
    """The surface ``scenario`` shows, and how well this live thread of it shows that surface beside
    how the runtime's committed offline capture does (both judged by the surface's predicate)."""
    [surface] = [surface for surface in SURFACES if scenario in surface.scenarios]
    live = CapturedThread(
        runtime, scenario, [Capture(Path(runtime, scenario), e.run.raw, {"request": e.request}) for e in exchanges]
    )
    return surface, judge(live, surface.predicate), judge(offline_threads()[f"{runtime}/{scenario}"], surface.predicate)


def record(root: Path = CAPTURES) -> list[Path]:
    """Run every scenario on every runtime and (re)write its captures; returns the files written."""
    captured = datetime.now(UTC).replace(microsecond=0).isoformat()
    versions = installed_versions()
    written: list[Path] = []
    with live_server(capture_settings()) as base:
        for runtime in RUNTIMES:
            folder = root / runtime.name
            folder.mkdir(parents=True, exist_ok=True)
            for stale in [*folder.glob("*.sse"), *folder.glob("*.json")]:
                stale.unlink()  # a turn that no longer happens must not survive as a file
            for scenario in SCENARIOS:
                for turn, exchange in enumerate(play(base, runtime.route, scenario), start=1):
                    sse = folder / f"{capture_name(scenario, turn)}.sse"
                    sse.write_bytes(exchange.run.raw)
                    meta = {
                        "runtime": runtime.name,
                        "route": runtime.route,
                        "surface": scenario.surface,
                        "turn": turn,
                        "captured": captured,
                        "versions": versions,
                        "request": exchange.request,
                    }
                    sse.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
                    written.append(sse)
    return written


def main() -> int:
    written = record()
    for path in written:
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
    print(
        f"{len(written)} captures written; docs/matrix.md is derived from them: `python -m tests.matrix`.",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
