"""Past one process (issue 16): one worker against two, how many streams each setup holds, and what
the shared state costs per run, each against a real ``redis-server`` the benchmark starts itself.

Why these three: a user sizing a deployment asks whether a second worker helps on this machine
(:func:`measure_shared_state`, one and two workers in turn, round by round, ratios of the same
moment), what the engine costs next to keeping state in memory (same rounds: the server's and the
engine's CPU per run), and how many concurrent streams one setup serves at the default pacing
before its streams stutter (:func:`measure_capacity`: upward from ``capacity_start``, doubling, then
one step between the last level held and the first lost; held = the p99 gap between a stream's
consecutive events under ``capacity_gap_factor`` x the pacing, and no errors). Every route is
measured, from the registry.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.client import Burst, burst, ms, percentile, sequential, spread
from benchmarks.machine import load_average
from benchmarks.process import ServerProcess, cpu_seconds, ours_spec
from benchmarks.scenarios import SCENARIOS, route_of, run_body
from tests.engine import RedisServer

if TYPE_CHECKING:
    from benchmarks.bench import BenchConfig, Deadline


@dataclass(frozen=True)
class Setup:
    """One way to run this server: where its state lives and how many workers it runs."""

    name: str
    shared: bool
    workers: int

    def env(self, engine_url: str, pacing_ms: int | None = None) -> dict[str, str]:
        env = {"AGUI_WORKERS": str(self.workers)}
        if self.shared:
            env["AGUI_STATE_URL"] = engine_url
        if pacing_ms is not None:
            env["AGUI_SCRIPT_DELAY_MS"] = str(pacing_ms)
        return env


MEMORY_1 = Setup("memory x1", shared=False, workers=1)
REDIS_1 = Setup("redis x1", shared=True, workers=1)
REDIS_2 = Setup("redis x2", shared=True, workers=2)
SETUPS = (MEMORY_1, REDIS_1, REDIS_2)
CAPACITY_SETUPS = (MEMORY_1, REDIS_2)
"""What a user sizing a deployment compares: one worker as deployed by default, two workers over the
engine (what the engine alone costs is the shared-state phase's ratio)."""


def _server(setup: Setup, engine: RedisServer, logs: Path, pacing_ms: int | None = None) -> ServerProcess:
    return ServerProcess(ours_spec(setup.env(engine.url, pacing_ms)), logs)


async def _warm(server: ServerProcess, setup: Setup, runtimes: tuple[str, ...]) -> None:
    """Every worker warm on every route: a few runs one after the other, then a few together."""
    server.wait_ready()
    for runtime in runtimes:
        url = server.base + route_of(runtime)
        await sequential(url, lambda: run_body(SCENARIOS["plain"]), 2)
        await burst(url, [run_body(SCENARIOS["plain"]) for _ in range(8 * setup.workers)], timeout_s=120)


# --- one worker against two, and the engine against memory ------------------------------------------


async def measure_shared_state(config: BenchConfig, logs: Path, deadline: Deadline) -> dict:
    """Per route: rounds of one burst on each setup in a rotating order, with the server's CPU (all
    its workers) and the engine's CPU per run. Workers: redis x1 and x2 at ``workers_level``;
    state: memory x1 and redis x1 at ``store_level``."""
    rows: dict[str, list[dict]] = {"workers": [], "shared_state": []}
    if deadline.expired():
        return {**rows, "workers_ratios": [], "shared_state_ratios": []}
    with RedisServer() as engine, contextlib.ExitStack() as stack:
        servers = {setup: stack.enter_context(_server(setup, engine, logs)) for setup in SETUPS}
        for setup, server in servers.items():
            await _warm(server, setup, config.runtimes)
        phases = (
            ("workers", (REDIS_1, REDIS_2), config.workers_level, config.workers_rounds),
            ("shared_state", (MEMORY_1, REDIS_1), config.store_level, config.store_rounds),
        )
        for phase, setups, level, rounds in phases:
            for runtime in config.runtimes:
                measured: dict[Setup, list[tuple[Burst, float, float]]] = {setup: [] for setup in setups}
                loads = []
                for round_number in range(rounds):
                    if deadline.expired():
                        break
                    order = setups[round_number % 2 :] + setups[: round_number % 2]
                    for setup in order:
                        measured[setup].append(await _costed_burst(servers[setup], engine, runtime, level, config))
                    loads.append(load_average()[0])
                rows[phase] += [
                    _setup_row(setup, runtime, level, runs, loads) for setup, runs in measured.items() if runs
                ]
    return {
        **rows,
        "workers_ratios": _ratios(rows["workers"], REDIS_2, REDIS_1),
        "shared_state_ratios": _ratios(rows["shared_state"], REDIS_1, MEMORY_1),
    }


async def _costed_burst(
    server: ServerProcess, engine: RedisServer, runtime: str, level: int, config: BenchConfig
) -> tuple[Burst, float, float]:
    """One burst of ``level`` plain runs; the server's and the engine's CPU seconds it took."""
    engine_cpu: Callable[[], float] = lambda: cpu_seconds(engine.pid) if engine.pid else 0.0  # noqa: E731
    server_before, engine_before = server.cpu_s(), engine_cpu()
    bodies = [run_body(SCENARIOS["plain"]) for _ in range(level)]
    result = await burst(server.base + route_of(runtime), bodies, timeout_s=config.burst_timeout_s)
    return result, server.cpu_s() - server_before, engine_cpu() - engine_before


def _setup_row(
    setup: Setup, runtime: str, level: int, measured: list[tuple[Burst, float, float]], loads: list[float]
) -> dict:
    runs = [run for result, _, _ in measured for run in result.runs]
    good = [run for run in runs if run.ok]
    ttfe = [run.ttfe for run in runs if run.ttfe is not None]
    total_runs = max(1, len(runs))
    return {
        "runtime": runtime,
        "setup": setup.name,
        "concurrency": level,
        "rounds": len(measured),
        "errors": len(runs) - len(good),
        "error_samples": sorted({run.error or "failed" for run in runs if not run.ok})[:3],
        "ttfe_ms": {f"p{q}": ms(percentile(ttfe, q)) for q in (50, 99)},
        "run_ms": {f"p{q}": ms(percentile([run.total for run in good], q)) for q in (50, 99)},
        "wall_s": round(statistics.median(result.wall for result, _, _ in measured), 3),
        "server_cpu_ms_per_run": round(1000 * sum(cpu for _, cpu, _ in measured) / total_runs, 2),
        "engine_cpu_ms_per_run": round(1000 * sum(cpu for _, _, cpu in measured) / total_runs, 2)
        if setup.shared
        else 0.0,
        "round_wall_s": [round(result.wall, 3) for result, _, _ in measured],
        "round_ttfe_p50_s": [
            percentile([r.ttfe for r in result.runs if r.ttfe is not None], 50) for result, _, _ in measured
        ],
        "round_ttfe_p99_s": [
            percentile([r.ttfe for r in result.runs if r.ttfe is not None], 99) for result, _, _ in measured
        ],
        "round_run_p50_s": [percentile([r.total for r in result.runs if r.ok], 50) for result, _, _ in measured],
        "round_cpu_s": [round(server + engine, 4) for _, server, engine in measured],
        "load_1m": round(statistics.median(loads), 2) if loads else None,
    }


def _ratios(rows: list[dict], top: Setup, base: Setup) -> list[dict]:
    """``top``/``base`` per round, per route: total time, time to first event, run time, CPU."""
    by_key = {(row["runtime"], row["setup"]): row for row in rows}
    out = []
    for runtime in dict.fromkeys(row["runtime"] for row in rows):
        a, b = by_key.get((runtime, top.name)), by_key.get((runtime, base.name))
        if a is None or b is None:
            continue

        def ratio(field: str, a: dict = a, b: dict = b) -> dict | None:
            pairs = zip(a[field], b[field], strict=False)
            return spread([x / y for x, y in pairs if x is not None and y])

        out.append(
            {
                "runtime": runtime,
                "of": f"{top.name} / {base.name}",
                "total": ratio("round_wall_s"),
                "ttfe_p50": ratio("round_ttfe_p50_s"),
                "ttfe_p99": ratio("round_ttfe_p99_s"),
                "run_p50": ratio("round_run_p50_s"),
                "cpu_per_run": ratio("round_cpu_s"),
            }
        )
    return out


# --- how many streams a setup holds -----------------------------------------------------------------


async def measure_capacity(config: BenchConfig, logs: Path, deadline: Deadline) -> list[dict]:
    """Per route and setup (both servers up at once, searched one after the other per route): the
    most concurrent paced plain runs whose p99 event gap stays under ``capacity_gap_factor`` x the
    pacing, searched upward (bounded by ``capacity_max``)."""
    rows: list[dict] = []
    if deadline.expired():
        return rows
    with RedisServer() as engine, contextlib.ExitStack() as stack:
        servers = {
            setup: stack.enter_context(_server(setup, engine, logs, config.capacity_pacing_ms))
            for setup in CAPACITY_SETUPS
        }
        for setup, server in servers.items():
            await _warm(server, setup, config.runtimes)
        for runtime in config.runtimes:
            for setup, server in servers.items():
                if deadline.expired():
                    return rows
                row = await _search(server.base + route_of(runtime), config, deadline)
                rows.append({"setup": setup.name, "runtime": runtime, **row})
    return rows


async def _search(url: str, config: BenchConfig, deadline: Deadline) -> dict:
    """Double the level from ``capacity_start`` until one is lost (or ``capacity_max``), or halve
    it while even the start is lost (down to 1), then try once between the last held and the first
    lost."""
    limit_s = config.capacity_gap_factor * config.capacity_pacing_ms / 1000
    tried: dict[int, dict] = {}

    async def holds(level: int) -> bool:
        result = await burst(
            url, [run_body(SCENARIOS["plain"]) for _ in range(level)], timeout_s=config.burst_timeout_s
        )
        p99 = percentile([gap for run in result.runs for gap in run.gaps], 99)
        held = not result.errors and p99 is not None and p99 < limit_s
        tried[level] = {"p99_gap_ms": ms(p99), "errors": len(result.errors), "held": held, "load_1m": load_average()[0]}
        return held

    held, lost, level = 0, None, config.capacity_start
    while level <= config.capacity_max and not deadline.expired():
        if not await holds(level):
            lost = level
            break
        held, level = level, level * 2
    while not held and lost is not None and lost > 1 and not deadline.expired():  # the start was already lost: halve
        level = lost // 2
        if await holds(level):
            held = level
        else:
            lost = level
    if lost is not None and held and lost - held > max(1, held // 4) and not deadline.expired():
        middle = (held + lost) // 2
        if await holds(middle):
            held = middle
        else:
            lost = middle
    return {
        "pacing_ms": config.capacity_pacing_ms,
        "gap_limit_ms": ms(limit_s),
        "held": held,
        "lost_at": lost,
        "searched_to": config.capacity_max,
        "tried": {str(level): outcome for level, outcome in sorted(tried.items())},
    }
