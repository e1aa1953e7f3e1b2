"""Fair comparisons with the bare bridges (issue 20): memory with every stream open at once, and
concurrent bursts interleaved round by round.

Why: memory per stream taken as (peak − before) / N flatters a server that finishes one stream
before the next gets the CPU (fewer are open at once, yet it is divided by N all the same), and
bursts measured one target after the other on a shared machine compare two different moments.
Here runs are held open by the offline model's pacing and memory is read while the client sees the
most streams open together (divided by that count), in rounds on fresh servers, since what one
process grows by over one burst depends on what its allocator kept from before; and every round
of a concurrency level runs one burst per target, in a rotating order, so the ratios are taken
between neighbours in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.client import Burst, OpenStreams, burst, ms, percentile, sequential, spread, watch_open
from benchmarks.machine import load_average
from benchmarks.process import ServerProcess, server_spec, target_url
from benchmarks.scenarios import SCENARIOS, WARMUP_PROMPT, run_body

if TYPE_CHECKING:
    from benchmarks.bench import BenchConfig, Deadline

PAIR = ("bare", "ours")


# --- memory per open stream -----------------------------------------------------------------------


async def measure_memory(config: BenchConfig, logs: Path, deadline: Deadline) -> list[dict]:
    """Per route, ``config.memory_rounds`` rounds, each on a fresh bare and ours server started
    together and warmed; per N, one burst of N plain runs on each at the same moment (same machine
    noise), held open by pacing; each server's RSS read every 50 ms beside the count of its open
    streams. Fresh servers each round: what a process grows by over a burst depends on what its
    allocator (or Node's collector) kept from before, so one round is one draw of that, and a row
    gives the median of the rounds and each round's figure (:func:`memory_ratios` pairs them)."""
    rounds: dict[tuple[str, int, str], list[dict]] = {}
    pacing = {"AGUI_SCRIPT_DELAY_MS": str(config.memory_pacing_ms)}
    for runtime in config.runtimes:
        for _ in range(config.memory_rounds):
            if deadline.expired():
                break
            with contextlib.ExitStack() as stack:
                servers = {
                    kind: stack.enter_context(ServerProcess(server_spec(kind, runtime, env=pacing), logs))
                    for kind in PAIR
                }
                for kind, server in servers.items():
                    server.wait_ready()
                    await sequential(
                        target_url(server.base, kind, runtime, "plain"), lambda: run_body(WARMUP_PROMPT), 3
                    )
                for level in config.memory_levels:
                    if deadline.expired():
                        break
                    await asyncio.sleep(0.2)
                    measured = await asyncio.gather(
                        *(_memory_burst(servers[kind], kind, runtime, level, config, deadline) for kind in PAIR)
                    )
                    for kind, one_round in zip(PAIR, measured, strict=True):
                        rounds.setdefault((runtime, level, kind), []).append(one_round)
    return [memory_row(runtime, kind, level, results) for (runtime, level, kind), results in rounds.items()]


async def _memory_burst(
    server: ServerProcess, kind: str, runtime: str, level: int, config: BenchConfig, deadline: Deadline
) -> dict:
    url = target_url(server.base, kind, runtime, "plain")
    before = server.rss_kib()
    streams = OpenStreams()
    watcher = asyncio.create_task(watch_open(streams, lambda: _grown(before, server.rss_kib())))
    timeout = max(5.0, min(config.burst_timeout_s, deadline.remaining()))
    try:
        result = await burst(
            url, [run_body(SCENARIOS["plain"]) for _ in range(level)], timeout_s=timeout, streams=streams
        )
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    most_open = max((count for count, _ in streams.samples), default=0)
    grown = max((kib for count, kib in streams.samples if count == most_open), default=0)
    return {
        "errors": result.errors,
        "open_at_sample": most_open,
        "rss_before_kib": sum(before.values()),
        "grown_kib": grown,
        "kib_per_open_stream": round(grown / most_open, 1) if most_open else None,
        "load_1m": load_average()[0],
    }


def memory_row(runtime: str, kind: str, level: int, rounds: list[dict]) -> dict:
    """One target at one N over its rounds: medians, the fewest streams open at a sample, and each
    round's KiB per open stream (None where no stream opened)."""
    per_stream = [r["kib_per_open_stream"] for r in rounds if r["kib_per_open_stream"] is not None]
    errors = [error for r in rounds for error in r["errors"]]
    return {
        "runtime": runtime,
        "target": kind,
        "concurrency": level,
        "rounds": len(rounds),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:3],
        "open_at_sample": min(r["open_at_sample"] for r in rounds),
        "rss_before_mib": round(statistics.median(r["rss_before_kib"] for r in rounds) / 1024, 1),
        "rss_all_open_mib": round(statistics.median(r["rss_before_kib"] + r["grown_kib"] for r in rounds) / 1024, 1),
        "kib_per_open_stream": round(statistics.median(per_stream), 1) if per_stream else None,
        "round_kib_per_open_stream": [r["kib_per_open_stream"] for r in rounds],
        "load_1m": round(statistics.median(r["load_1m"] for r in rounds), 2),
    }


def memory_ratios(rows: list[dict]) -> list[dict]:
    """ours/bare KiB per open stream per round (two servers started together, bursts at the same
    moment), as median [min, max]."""
    by_key = {(row["runtime"], row["concurrency"], row["target"]): row for row in rows}
    out = []
    for (runtime, level, kind), ours in by_key.items():
        bare = by_key.get((runtime, level, "bare"))
        if kind != "ours" or bare is None:
            continue
        pairs = zip(ours["round_kib_per_open_stream"], bare["round_kib_per_open_stream"], strict=False)
        out.append(
            {
                "runtime": runtime,
                "concurrency": level,
                "kib_vs_bare": spread([a / b for a, b in pairs if a is not None and b]),
            }
        )
    return out


def _grown(before: dict[int, int], now: dict[int, int]) -> int:
    """KiB the server's processes grew by since ``before``, each counted on its own: a process that
    let memory go meanwhile (an idle sidecar's garbage collector) takes nothing off the others'."""
    return sum(max(0, kib - before.get(pid, 0)) for pid, kib in now.items())


# --- concurrent bursts, interleaved ------------------------------------------------------------


async def measure_concurrency(config: BenchConfig, logs: Path, deadline: Deadline) -> list[dict]:
    """Per scenario and route: a bare and an ours server, then per level ``config.rounds_at(level)``
    rounds of one burst on each, which one goes first alternating round by round."""
    kinds = PAIR
    rows = []
    for scenario in config.concurrency_scenarios:
        for runtime in config.runtimes:
            with contextlib.ExitStack() as stack:
                servers = {kind: stack.enter_context(ServerProcess(server_spec(kind, runtime), logs)) for kind in kinds}
                for kind, server in servers.items():
                    server.wait_ready()
                    url = target_url(server.base, kind, runtime, scenario)
                    await sequential(url, lambda scenario=scenario: run_body(SCENARIOS[scenario]), 2)
                    await burst(url, [run_body(SCENARIOS[scenario]) for _ in range(20)], timeout_s=60)
                for level in config.levels_of(scenario):
                    bursts: dict[str, list[Burst]] = {kind: [] for kind in kinds}
                    loads = []
                    for round_number in range(config.rounds_at(level)):
                        if deadline.expired():
                            break
                        shift = round_number % len(kinds)
                        for kind in kinds[shift:] + kinds[:shift]:
                            url = target_url(servers[kind].base, kind, runtime, scenario)
                            timeout = max(5.0, min(config.burst_timeout_s, deadline.remaining()))
                            bodies = [run_body(SCENARIOS[scenario]) for _ in range(level)]
                            result = await burst(url, bodies, timeout_s=timeout)
                            if deadline.expired() and result.errors:
                                break  # cut short by the time budget, not by the server: not a measurement
                            bursts[kind].append(result)
                        loads.append(load_average()[0])
                    paired = min(len(results) for results in bursts.values())
                    rows += [
                        burst_row(bursts[kind][:paired], kind, runtime, scenario, level, loads)
                        for kind in kinds
                        if paired
                    ]
    return rows


def burst_row(bursts: list[Burst], kind: str, runtime: str, scenario: str, level: int, loads: list[float]) -> dict:
    runs = [run for result in bursts for run in result.runs]
    good = [run for run in runs if run.ok]
    ttfe = [run.ttfe for run in runs if run.ttfe is not None]
    totals = [run.total for run in good]
    return {
        "scenario": scenario,
        "runtime": runtime,
        "target": kind,
        "concurrency": level,
        "rounds": len(bursts),
        "errors": len(runs) - len(good),
        "error_samples": sorted({run.error or "failed" for run in runs if not run.ok})[:3],
        "ttfe_ms": {f"p{q}": ms(percentile(ttfe, q)) for q in (50, 95, 99)},
        "run_ms": {f"p{q}": ms(percentile(totals, q)) for q in (50, 95, 99)},
        "wall_s": round(statistics.median(result.wall for result in bursts), 3),
        "round_wall_s": [round(result.wall, 3) for result in bursts],
        "round_ttfe_p99_s": [percentile([r.ttfe for r in result.runs if r.ttfe is not None], 99) for result in bursts],
        "events_per_s": round(sum(run.events for run in good) / sum(result.wall for result in bursts)),
        "load_1m": round(statistics.median(loads), 2) if loads else None,
    }


def concurrency_ratios(rows: list[dict]) -> list[dict]:
    """ours/bare per round (same moment, same noise): total time and p99 time to first event."""
    by_key = {(row["scenario"], row["runtime"], row["concurrency"], row["target"]): row for row in rows}
    out = []
    for (scenario, runtime, level, kind), ours in by_key.items():
        bare = by_key.get((scenario, runtime, level, "bare"))
        if kind != "ours" or bare is None:
            continue
        pairs = list(zip(ours["round_wall_s"], bare["round_wall_s"], strict=False))
        ttfe = list(zip(ours["round_ttfe_p99_s"], bare["round_ttfe_p99_s"], strict=False))
        out.append(
            {
                "scenario": scenario,
                "runtime": runtime,
                "concurrency": level,
                "total_vs_bare": spread([a / b for a, b in pairs if b]),
                "ttfe_p99_vs_bare": spread([a / b for a, b in ttfe if a is not None and b]),
            }
        )
    return out
