"""``python -m benchmarks.bench`` (``make bench``): what this server costs, side by side, in one run.

Three targets stream the same conversations on the offline model with zero pacing:

* ``floor``: plain Starlette + sse-starlette writing the frames our route produced, pre-encoded;
* ``bare``: each upstream bridge on a bare ``FastAPI()`` with the same agent (``benchmarks.targets``);
* ``ours``: this project's server as deployed (``python -m deploy.serve``).

Every server is its own process on a free loopback port. On a shared, noisy machine only numbers
taken in the same run are comparable, so measurements are interleaved (run by run, rotating over
the targets, several rounds) and the report leads with ratios. Phases: streaming one run at a time (events/s,
time to first event), cold start (process start to ``/ok`` and to a first completed run), and
concurrency (1..500 simultaneous runs: latency percentiles, errors, peak RSS, RSS per stream).
Everything is bounded: per-burst timeouts and an overall deadline, after which phases are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import httpx

from benchmarks.client import HEADERS, Burst, RunTiming, burst, percentile, timed_run
from benchmarks.machine import load_average, machine_info
from benchmarks.process import ROOT, ServerProcess, server_spec
from benchmarks.report import render, update_docs
from benchmarks.scenarios import RUNTIMES, SCENARIOS, route_of, run_body

KINDS = ("floor", "bare", "ours")
DEFAULT_JSON = ROOT / "benchmarks" / "results.json"
DEFAULT_DOCS = ROOT / "docs" / "performance.md"


@dataclass(frozen=True)
class BenchConfig:
    """How much to measure. The defaults are the full run ``docs/performance.md`` reports."""

    runtimes: tuple[str, ...] = tuple(RUNTIMES)
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    rounds: int = 8
    """Streaming phase: ratios are taken per round, so the spread across rounds shows the noise."""
    batch: int = 15
    """Streaming phase: runs per target per round, interleaved run by run in a rotating order."""
    warmup: int = 5
    levels: tuple[int, ...] = (1, 50, 200, 500)
    concurrency_scenarios: tuple[str, ...] = tuple(SCENARIOS)
    fresh_server_per_level: bool = True
    """A new server process per concurrency level, so each level's memory is its own."""
    cold_repeats: int = 3
    burst_timeout_s: float = 180.0
    max_seconds: float = 1500.0


QUICK = BenchConfig(
    rounds=2,
    batch=3,
    warmup=1,
    levels=(1, 10),
    concurrency_scenarios=("plain",),
    fresh_server_per_level=False,
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


def target_url(base: str, kind: str, runtime: str, scenario: str) -> str:
    return f"{base}/floor/{runtime}/{scenario}" if kind == "floor" else base + route_of(runtime)


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


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


async def sequential(url: str, prompt: str, count: int) -> list[RunTiming]:
    async with httpx.AsyncClient(timeout=60) as client:
        return [await timed_run(client, url, run_body(prompt)) for _ in range(count)]


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


def spread(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


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


# --- phase 3: concurrency ------------------------------------------------------------------------


async def measure_concurrency(config: BenchConfig, logs: Path, frames: Path, deadline: Deadline) -> list[dict]:
    rows = []
    for scenario in config.concurrency_scenarios:
        for runtime in config.runtimes:
            with contextlib.ExitStack() as reused:
                servers: dict[str, ServerProcess] = {}
                for level in config.levels:
                    for kind in KINDS:
                        if deadline.expired():
                            return rows
                        if config.fresh_server_per_level:
                            with ServerProcess(server_spec(kind, runtime, frames), logs) as server:
                                rows.append(await one_burst(server, kind, runtime, scenario, level, config, deadline))
                            continue
                        if kind not in servers:
                            servers[kind] = reused.enter_context(
                                ServerProcess(server_spec(kind, runtime, frames), logs)
                            )
                        rows.append(await one_burst(servers[kind], kind, runtime, scenario, level, config, deadline))
    return rows


async def one_burst(
    server: ServerProcess, kind: str, runtime: str, scenario: str, level: int, config: BenchConfig, deadline: Deadline
) -> dict:
    """Warm the server up, then start ``level`` runs at once and watch its memory."""
    server.wait_ready()
    url = target_url(server.base, kind, runtime, scenario)
    prompt = SCENARIOS[scenario]
    await sequential(url, prompt, 2)
    await asyncio.sleep(0.2)
    before = server.memory_kib()["VmRSS"]
    server.reset_peak()
    timeout = max(5.0, min(config.burst_timeout_s, deadline.remaining()))
    result = await burst(url, [run_body(prompt) for _ in range(level)], timeout_s=timeout)
    peak = server.memory_kib()["VmHWM"]
    return burst_row(result, kind, runtime, scenario, level, before, peak)


def burst_row(result: Burst, kind: str, runtime: str, scenario: str, level: int, before: int, peak: int) -> dict:
    good = [run for run in result.runs if run.ok]
    ttfe = [run.ttfe for run in result.runs if run.ttfe is not None]
    totals = [run.total for run in good]
    return {
        "scenario": scenario,
        "runtime": runtime,
        "target": kind,
        "concurrency": level,
        "errors": len(result.errors),
        "error_samples": sorted(set(result.errors))[:3],
        "ttfe_ms": {f"p{q}": ms(percentile(ttfe, q)) for q in (50, 95, 99)},
        "run_ms": {f"p{q}": ms(percentile(totals, q)) for q in (50, 95, 99)},
        "wall_s": round(result.wall, 3),
        "events_per_s": round(sum(run.events for run in good) / result.wall) if result.wall else None,
        "rss_before_mib": round(before / 1024, 1),
        "rss_peak_mib": round(peak / 1024, 1),
        "rss_per_stream_kib": round(max(0, peak - before) / level, 1),
    }


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
        streaming, frames = await measure_streaming(config, logs, deadline)
        cold = await measure_cold_start(config, logs, frames, deadline)
        concurrency = await measure_concurrency(config, logs, frames, deadline)
    results = {
        "command": command,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - started, 1),
        "complete": not deadline.hit,
        "machine": {**machine_info(), "load_average_before": load_before, "load_average_after": load_average()},
        "config": asdict(config),
        "streaming": streaming,
        "ratios": ratio_rows(streaming),
        "cold_start": cold,
        "concurrency": concurrency,
    }
    results["targets"] = verdict(results)
    return results


def parse_args(argv: list[str]) -> tuple[BenchConfig, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (small counts, levels 1 and 10)")
    parser.add_argument("--runtimes", help="comma list, default: " + ",".join(RUNTIMES))
    parser.add_argument("--levels", help="comma list of concurrency levels, default 1,50,200,500")
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
