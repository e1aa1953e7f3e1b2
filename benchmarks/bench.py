"""``python -m benchmarks.bench`` (``make bench``): what this server costs, side by side, in one run.

Three targets stream the same conversations on the offline model with zero pacing:

* ``floor``: plain Starlette + sse-starlette writing the frames our route produced, pre-encoded;
* ``bare``: each upstream bridge on a bare ``FastAPI()`` with the same agent (``benchmarks.targets``);
* ``ours``: this project's server as deployed (``python -m deploy.serve``).

Every server is its own process on a free loopback port. On a shared, noisy machine only numbers
taken in the same run are comparable, so measurements are interleaved (run by run, rotating over
the targets, several rounds) and the report leads with ratios. Phases: streaming one run at a time
(events/s, time to first event), cold start (process start to ``/ok`` and to a first completed run),
concurrency (50..500 simultaneous runs: latency percentiles, errors), memory per open stream, CPU
per run counted in instructions (``benchmarks.instructions``: the one figure the machine's load does
not move), one worker against two over the engine, and the streams a setup holds at the default pacing.
Everything is bounded: per-burst timeouts and an overall deadline, after which phases are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import httpx

from benchmarks.client import HEADERS, RunTiming, ms, spread, timed_run
from benchmarks.fair import concurrency_ratios, measure_concurrency, measure_memory, memory_ratios
from benchmarks.instructions import measure_instructions
from benchmarks.machine import load_average, machine_info
from benchmarks.process import ROOT, ServerProcess, server_spec, target_url
from benchmarks.report import render, update_docs
from benchmarks.scale import measure_capacity, measure_shared_state
from benchmarks.scenarios import RUNTIMES, SCENARIOS, route_of, run_body
from benchmarks.verdicts import issue_targets

KINDS = ("floor", "bare", "ours")
DEFAULT_JSON = ROOT / "benchmarks" / "results.json"
DEFAULT_DOCS = ROOT / "docs" / "performance.md"
T = TypeVar("T")
PHASES = ("streaming", "cold_start", "concurrency", "memory", "instructions", "workers", "capacity")


@dataclass(frozen=True)
class BenchConfig:
    """How much to measure. The defaults are the full run ``docs/performance.md`` reports."""

    runtimes: tuple[str, ...] = tuple(RUNTIMES)
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    rounds: int = 4
    """Streaming phase: ratios are taken per round, so the spread across rounds shows the noise."""
    batch: int = 8
    """Streaming phase: runs per target per round, interleaved run by run in a rotating order."""
    warmup: int = 5
    levels: tuple[int, ...] = (50, 200, 500)
    concurrency_scenarios: tuple[str, ...] = tuple(SCENARIOS)
    other_levels: tuple[int, ...] = (50, 200)
    """Which of ``levels`` every scenario but ``plain`` is measured at (the time budget: a
    delegation burst costs several plain ones)."""
    concurrency_rounds: int = 3
    """Concurrency phase: rounds per level at least, each one burst per target, which goes first
    alternating. Three, so a cell's ratio is the median of three, not the mean of two: on a shared
    machine the CPU's own speed moves by a third from one second to the next (a fixed loop of pure
    Python took 578-768 ms in thirty tries on an idle 2-core machine), and a 200-run burst pair
    caught in two such moments gave 1.17 and 1.49 for a cell whose ten-round median was 1.10."""
    concurrency_min_runs: int = 400
    """Concurrency phase: and rounds enough that each target serves this many runs at a level (8
    rounds at N = 50): the p99 of one 50-run burst is about its slowest run, and its total time
    moves with whatever else the machine did in that half second, so two such rounds make no figure."""
    memory_levels: tuple[int, ...] = (100, 500)
    memory_pacing_ms: int = 100
    """Memory phase: streams held open by this pacing (a plain run then takes ~10 s), so all N are
    open at the same moment."""
    memory_rounds: int = 3
    """Memory phase: rounds per route, each on a fresh pair of servers; the verdict takes the
    median of the per-round ratios. A Python bridge's rounds agree to a few percent, a Node
    sidecar's do not (its collector: one route's three rounds at 500 gave 1.27, 1.63 and 3.08)."""
    instruction_level: int = 50
    """Instructions phase: runs started together in one counted burst (per scenario, per target)."""
    instruction_rounds: int = 1
    """Instructions phase: counted bursts. One is enough: the count does not move with the machine
    (the same burst counted twice agrees to within a few tenths of a percent)."""
    workers_level: int = 200
    workers_rounds: int = 3
    store_level: int = 50
    store_rounds: int = 2
    capacity_pacing_ms: int = 15
    """Capacity phase: the default pacing (AGUI_SCRIPT_DELAY_MS); a level is held while the p99 gap
    between a stream's consecutive events stays under ``capacity_gap_factor`` times it."""
    capacity_gap_factor: float = 2.0
    capacity_start: int = 50
    capacity_max: int = 800
    cold_repeats: int = 1
    burst_timeout_s: float = 180.0
    max_seconds: float = 7200.0
    """Every phase fits: the whole run took 2,839 s for docs/performance.md's table (2 cores), and
    two runs later, with three rounds per concurrency level on a 2-core machine that ran the same
    phases about 2.2 times slower, the streaming, cold start and concurrency phases alone took
    3,503 s, and 4,500 s ran out in the memory phase."""
    phases: tuple[str, ...] = PHASES
    """Which phases run (``--phases``); the cold start needs the streaming phase's captured frames."""

    def rounds_at(self, level: int) -> int:
        """Concurrency phase: the rounds at ``level``."""
        return max(self.concurrency_rounds, math.ceil(self.concurrency_min_runs / level))

    def levels_of(self, scenario: str) -> tuple[int, ...]:
        """The concurrency levels ``scenario`` is measured at."""
        return (
            self.levels if scenario == "plain" else tuple(level for level in self.other_levels if level in self.levels)
        )


QUICK = BenchConfig(
    rounds=2,
    batch=3,
    warmup=1,
    levels=(10,),
    concurrency_scenarios=("plain",),
    concurrency_rounds=1,
    concurrency_min_runs=0,
    memory_levels=(10,),
    memory_pacing_ms=50,
    memory_rounds=1,
    instruction_level=5,
    workers_level=10,
    workers_rounds=1,
    store_level=5,
    store_rounds=1,
    capacity_start=5,
    capacity_max=20,
    cold_repeats=1,
    burst_timeout_s=60.0,
    max_seconds=300.0,
)


class Deadline:
    """The whole benchmark's time budget; phases check it and skip what no longer fits."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.hit = False

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def expired(self) -> bool:
        self.hit = self.hit or self.remaining() <= 0
        return self.hit


# --- floor frames ------------------------------------------------------------------------------


async def capture_frames(base: str, config: BenchConfig, path: Path) -> None:
    """Record one run of each scenario from our route: the floor replays exactly these bytes."""
    frames: dict[str, list[str]] = {}
    async with httpx.AsyncClient(timeout=60) as client:
        for runtime in config.runtimes:
            for scenario in SCENARIOS:
                response = await client.post(
                    base + route_of(runtime), content=run_body(SCENARIOS[scenario]), headers=HEADERS
                )
                response.raise_for_status()
                frames[f"{runtime}/{scenario}"] = [
                    frame + "\n\n" for frame in response.text.split("\n\n") if "\ndata:" in "\n" + frame
                ]
    path.write_text(json.dumps(frames))


# --- phase 1: one run at a time -------------------------------------------------------------------


async def measure_streaming(config: BenchConfig, logs: Path, deadline: Deadline) -> tuple[list[dict], Path]:
    """One run at a time, interleaved run by run over every (target, runtime) in a rotating order,
    so a noisy moment on the machine hits every target alike; returns rows and the floor's frames."""
    frames = logs / "floor-frames.json"
    with contextlib.ExitStack() as stack:
        ours = stack.enter_context(ServerProcess(server_spec("ours", "every runtime"), logs))
        bare = {rt: stack.enter_context(ServerProcess(server_spec("bare", rt), logs)) for rt in config.runtimes}
        for server in (ours, *bare.values()):
            server.wait_ready()
        await capture_frames(ours.base, config, frames)
        floor = stack.enter_context(ServerProcess(server_spec("floor", "", frames), logs))
        floor.wait_ready()
        bases = {"ours": ours.base, "floor": floor.base} | {f"bare-{rt}": server.base for rt, server in bare.items()}
        targets = [(kind, rt) for rt in config.runtimes for kind in KINDS]
        urls = {
            (scenario, rt, kind): target_url(bases[kind if kind != "bare" else f"bare-{rt}"], kind, rt, scenario)
            for scenario in config.scenarios
            for kind, rt in targets
        }
        batches: dict[tuple[str, str, str], list[list[RunTiming]]] = {}
        async with httpx.AsyncClient(timeout=60) as client:  # one kept-alive connection per server
            for (scenario, _, _), url in urls.items():
                for _ in range(config.warmup):
                    await timed_run(client, url, run_body(SCENARIOS[scenario]))
            for round_number in range(config.rounds):
                if deadline.expired():
                    break
                for scenario in config.scenarios:
                    this_round: dict[tuple[str, str, str], list[RunTiming]] = {}
                    for index in range(config.batch):
                        shift = (round_number * config.batch + index) % len(targets)
                        for kind, rt in targets[shift:] + targets[:shift]:
                            url = urls[(scenario, rt, kind)]
                            run = await timed_run(client, url, run_body(SCENARIOS[scenario]))
                            this_round.setdefault((scenario, rt, kind), []).append(run)
                    for key in urls:  # report rows in a stable order: scenario, runtime, target
                        if key in this_round:
                            batches.setdefault(key, []).append(this_round[key])
    return [streaming_row(key, rounds) for key, rounds in batches.items()], frames


def streaming_row(key: tuple[str, str, str], rounds: list[list[RunTiming]]) -> dict:
    scenario, runtime, kind = key
    runs = [run for batch in rounds for run in batch]
    good = [run for run in runs if run.ok]
    return {
        "scenario": scenario,
        "runtime": runtime,
        "target": kind,
        "runs": len(runs),
        "errors": len(runs) - len(good),
        "events_per_run": statistics.median(run.events for run in good) if good else None,
        "events_per_s": round(statistics.median(run.events_per_s for run in good)) if good else None,
        "ttfe_ms": ms(statistics.median(run.ttfe for run in good if run.ttfe is not None)) if good else None,
        "run_ms": ms(statistics.median(run.total for run in good)) if good else None,
        # Per-round medians: the ratios are taken round by round, so machine noise shows as spread.
        "round_events_per_s": [
            statistics.median(r.events_per_s for r in batch if r.ok) for batch in rounds if any(r.ok for r in batch)
        ],
        "round_run_s": [
            statistics.median(r.total for r in batch if r.ok) for batch in rounds if any(r.ok for r in batch)
        ],
    }


def ratio_rows(rows: list[dict]) -> list[dict]:
    """ours/bare and ours/floor, per round (same moment, same noise), summarised as median [min, max]."""
    by_key = {(row["scenario"], row["runtime"], row["target"]): row for row in rows}
    out = []
    for (scenario, runtime, kind), ours in by_key.items():
        if kind != "ours":
            continue
        entry: dict = {"scenario": scenario, "runtime": runtime}
        for other in ("bare", "floor"):
            base = by_key.get((scenario, runtime, other))
            if base is None:
                continue
            entry[f"events_per_s_vs_{other}"] = spread(
                [a / b for a, b in zip(ours["round_events_per_s"], base["round_events_per_s"], strict=False) if b]
            )
            entry[f"run_time_vs_{other}"] = spread(
                [a / b for a, b in zip(ours["round_run_s"], base["round_run_s"], strict=False) if b]
            )
            if ours["ttfe_ms"] and base["ttfe_ms"]:
                entry[f"ttfe_vs_{other}"] = round(ours["ttfe_ms"] / base["ttfe_ms"], 3)
        out.append(entry)
    return out


# --- phase 2: cold start -------------------------------------------------------------------------


async def measure_cold_start(config: BenchConfig, logs: Path, frames: Path, deadline: Deadline) -> list[dict]:
    """Process start -> ready (``/ok`` 200 for ours, any HTTP answer for the others) -> first run."""
    samples: dict[tuple[str, str], list[tuple[float, float | None]]] = {}
    for _ in range(config.cold_repeats):
        for runtime in config.runtimes:
            for kind in KINDS:
                if deadline.expired():
                    break
                with ServerProcess(server_spec(kind, runtime, frames), logs) as server:
                    ready = server.wait_ready()
                    async with httpx.AsyncClient(timeout=60) as client:
                        url = target_url(server.base, kind, runtime, "plain")
                        run = await timed_run(client, url, run_body(SCENARIOS["plain"]))
                    first_run = time.perf_counter() - server.started_at if run.ok else None
                samples.setdefault((runtime, kind), []).append((ready, first_run))
    return [
        {
            "runtime": runtime,
            "target": kind,
            "ready_s": round(statistics.median(ready for ready, _ in values), 3),
            "first_run_s": _median_or_none([first for _, first in values]),
            "samples": len(values),
        }
        for (runtime, kind), values in samples.items()
    ]


def _median_or_none(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(statistics.median(present), 3) if present and len(present) == len(values) else None


# --- verdict -------------------------------------------------------------------------------------


def verdict(results: dict) -> list[dict]:
    """Where the run stands against the issue's four targets (measured, never assumed)."""
    ratios = [row for row in results["ratios"] if row["scenario"] == "plain"]
    bare = [row["events_per_s_vs_bare"]["median"] for row in ratios if row.get("events_per_s_vs_bare")]
    floor = [row["events_per_s_vs_floor"]["median"] for row in ratios if row.get("events_per_s_vs_floor")]
    top = max((row["concurrency"] for row in results["concurrency"]), default=0)
    ours_top = [row for row in results["concurrency"] if row["target"] == "ours" and row["concurrency"] == top]
    ready = [row["ready_s"] for row in results["cold_start"] if row["target"] == "ours"]
    return [
        _target(
            "events/s within 5% of the bare bridge (plain reply, worst runtime)",
            min(bare, default=None),
            ">= 0.95",
            lambda v: v >= 0.95,
        ),
        _target(
            "events/s at least half the floor's (plain reply, worst runtime)",
            min(floor, default=None),
            ">= 0.5",
            lambda v: v >= 0.5,
        ),
        _target(
            f"errors at {top} concurrent runs (every route and scenario)",
            sum(row["errors"] for row in ours_top) if top >= 500 else None,
            "0 at 500",
            lambda v: v == 0,
        ),
        _target(
            "cold start to the first 200 from /ok (s, slowest median)", max(ready, default=None), "< 3", lambda v: v < 3
        ),
    ]


def _target(name: str, value: float | None, goal: str, met) -> dict:
    return {"target": name, "value": value, "goal": goal, "met": None if value is None else bool(met(value))}


# --- driver --------------------------------------------------------------------------------------


async def run_bench(config: BenchConfig, command: str) -> dict:
    deadline = Deadline(config.max_seconds)
    started = time.monotonic()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="agui-bench-") as tmp:
        logs = Path(tmp)
        phases: dict[str, float] = {}

        async def phase(name: str, work: Awaitable[T]) -> T:
            began = time.monotonic()
            try:
                return await work
            finally:
                phases[name] = round(time.monotonic() - began, 1)

        streaming, frames = (
            await phase("streaming", measure_streaming(config, logs, deadline))
            if "streaming" in config.phases
            else ([], None)
        )
        cold = (
            await phase("cold_start", measure_cold_start(config, logs, frames, deadline))
            if "cold_start" in config.phases and frames is not None
            else []
        )
        concurrency = (
            await phase("concurrency", measure_concurrency(config, logs, deadline))
            if "concurrency" in config.phases
            else []
        )
        memory = await phase("memory", measure_memory(config, logs, deadline)) if "memory" in config.phases else []
        instructions = (
            await phase("instructions", measure_instructions(config, deadline))
            if "instructions" in config.phases
            else []
        )
        shared = (
            await phase("workers_and_shared_state", measure_shared_state(config, logs, deadline))
            if "workers" in config.phases
            else {"workers": [], "shared_state": [], "workers_ratios": [], "shared_state_ratios": []}
        )
        capacity = (
            await phase("capacity", measure_capacity(config, logs, deadline)) if "capacity" in config.phases else []
        )
    results = {
        "command": command,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - started, 1),
        "complete": not deadline.hit,
        "phase_s": phases,
        "machine": {**machine_info(), "load_average_before": load_before, "load_average_after": load_average()},
        "config": asdict(config),
        "streaming": streaming,
        "ratios": ratio_rows(streaming),
        "cold_start": cold,
        "concurrency": concurrency,
        "concurrency_ratios": concurrency_ratios(concurrency),
        "memory": memory,
        "memory_ratios": memory_ratios(memory),
        "instructions": instructions,
        **shared,
        "capacity": capacity,
    }
    results["targets"] = verdict(results)
    results["issue_targets"] = issue_targets(results)
    return results


def parse_args(argv: list[str]) -> tuple[BenchConfig, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (small counts, levels 1 and 10)")
    parser.add_argument("--runtimes", help="comma list, default: " + ",".join(RUNTIMES))
    parser.add_argument("--levels", help="comma list of concurrency levels, default 1,50,200,500")
    parser.add_argument("--phases", help="comma list of phases to run, default: " + ",".join(PHASES))
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--max-seconds", type=float, help="overall time budget; later phases are skipped after it")
    parser.add_argument(
        "--json",
        type=Path,
        help=f"results JSON (default {DEFAULT_JSON.relative_to(ROOT)}; a temporary file with --quick)",
    )
    parser.add_argument(
        "--docs", type=Path, help=f"markdown to update (default {DEFAULT_DOCS.relative_to(ROOT)}; none with --quick)"
    )
    args = parser.parse_args(argv)
    config = QUICK if args.quick else BenchConfig()
    overrides: dict = {}
    if args.runtimes:
        overrides["runtimes"] = tuple(name.strip() for name in args.runtimes.split(",") if name.strip())
        unknown = set(overrides["runtimes"]) - set(RUNTIMES)
        if unknown:
            parser.error(f"unknown runtimes: {', '.join(sorted(unknown))}")
    if args.levels:
        overrides["levels"] = tuple(int(level) for level in args.levels.split(","))
    if args.phases:
        overrides["phases"] = tuple(name.strip() for name in args.phases.split(",") if name.strip())
        if set(overrides["phases"]) - set(PHASES):
            parser.error(f"unknown phases: {', '.join(sorted(set(overrides['phases']) - set(PHASES)))}")
    for name in ("rounds", "batch", "max_seconds"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    return replace(config, **overrides), args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config, args = parse_args(argv)
    command = " ".join(["python -m benchmarks.bench", *argv])
    results = asyncio.run(run_bench(config, command))
    json_path = args.json or (Path(tempfile.gettempdir()) / "agui-bench-quick.json" if args.quick else DEFAULT_JSON)
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    table = render(results)
    print(table)
    print(f"\nJSON: {json_path}")
    docs_path = args.docs or (None if args.quick else DEFAULT_DOCS)
    if docs_path is not None:
        update_docs(docs_path, table)
        print(f"docs: {docs_path}")
    return 0 if results["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
