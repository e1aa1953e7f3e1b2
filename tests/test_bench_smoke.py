"""Smoke tests for ``benchmarks/``: every piece runs and reports what it promises. Not timed tests:
nothing here asserts a speed, only that ``make bench`` and ``make load`` would produce their reports."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from app.config import Settings
from app.registry import RUNTIMES
from benchmarks.bench import QUICK, BenchConfig, run_bench
from benchmarks.load import KINDS, drive, loopback_only
from benchmarks.process import rss_kib
from benchmarks.report import BEGIN, END, render, update_docs
from tests.wire import live_server

TINY = replace(
    QUICK,
    runtimes=(RUNTIMES[0].name,),
    scenarios=("plain",),
    rounds=1,
    batch=1,
    warmup=0,
    levels=(2,),
    memory_levels=(20,),  # enough that the bare server grows too (a few streams fit in heap it has free)
    memory_pacing_ms=20,
    memory_rounds=2,
    instruction_level=2,
    workers_level=2,
    store_level=2,
    capacity_start=2,
    capacity_max=4,
    burst_timeout_s=30,
    max_seconds=600,
)


def test_bench_reports_every_section(tmp_path: Path) -> None:
    results = asyncio.run(run_bench(TINY, "python -m benchmarks.bench (smoke)"))

    assert results["complete"]
    assert {"command", "machine", "config", "streaming", "ratios", "cold_start", "concurrency", "targets"} <= set(
        results
    )
    assert {"nproc", "cpu_model", "memory_gib", "python"} <= set(results["machine"])
    assert {(row["target"], row["errors"]) for row in results["streaming"]} == {("floor", 0), ("bare", 0), ("ours", 0)}
    [ratio] = results["ratios"]
    assert {"events_per_s_vs_bare", "events_per_s_vs_floor", "run_time_vs_bare"} <= set(ratio)
    assert {row["target"] for row in results["cold_start"]} == {"floor", "bare", "ours"}
    assert all(row["first_run_s"] is not None for row in results["cold_start"])
    for row in results["concurrency"]:
        assert row["errors"] == 0, row["error_samples"]
        assert {"p50", "p95", "p99"} == set(row["ttfe_ms"])
    [fair] = results["concurrency_ratios"]
    assert fair["total_vs_bare"]["median"] > 0 and fair["ttfe_p99_vs_bare"]["median"] > 0
    assert {(row["target"], row["errors"]) for row in results["memory"]} == {("bare", 0), ("ours", 0)}
    assert all(row["open_at_sample"] >= 1 and row["kib_per_open_stream"] is not None for row in results["memory"])
    assert all(len(row["round_kib_per_open_stream"]) == row["rounds"] == 2 for row in results["memory"])
    [memory] = results["memory_ratios"]
    assert memory["kib_vs_bare"]["median"] > 0
    [counted] = results["instructions"]
    assert counted["bare_per_run"] > 0 and counted["ours_per_run"] > 0 and counted["ours_over_bare"] > 0
    assert len(results["targets"]) == 4
    assert {row["runtime"] for row in results["issue_targets"]} == set(TINY.runtimes)
    assert {row["setup"] for row in results["workers"]} == {"redis x1", "redis x2"}
    assert {row["setup"] for row in results["shared_state"]} == {"memory x1", "redis x1"}
    for row in results["workers"] + results["shared_state"]:
        assert row["errors"] == 0, row["error_samples"]
        assert row["server_cpu_ms_per_run"] > 0
    [workers] = results["workers_ratios"]
    assert workers["total"]["median"] > 0 and workers["ttfe_p99"]["median"] > 0
    [shared] = results["shared_state_ratios"]
    assert shared["cpu_per_run"]["median"] > 0
    assert {row["setup"] for row in results["capacity"]} == {"memory x1", "redis x2"}
    assert all(row["tried"] for row in results["capacity"])

    docs = tmp_path / "performance.md"
    docs.write_text("# Performance\n\nhand-written analysis\n")
    update_docs(docs, render(results))
    update_docs(docs, render(results))  # a second run replaces the block instead of appending
    text = docs.read_text()
    assert "hand-written analysis" in text and text.count(BEGIN) == 1 and text.count(END) == 1
    assert "ours/bare ev/s" in text
    assert "KiB/open stream" in text and "streams held" in text and "TTFE p99 ratio" in text
    assert "M instr/run" in text


def test_small_concurrency_levels_get_rounds_enough_for_a_p99() -> None:
    full = BenchConfig()
    assert [full.rounds_at(level) for level in full.levels] == [8, 3, 3]
    assert QUICK.rounds_at(10) == 1


def test_load_runs_every_kind_on_every_route_and_verifies_it() -> None:
    with live_server(Settings(agui_script_delay_ms=0)) as base:
        summary = asyncio.run(drive(base, concurrency=4, runs=16, timeout_s=60, token=None))

    assert summary["errors"] == 0, summary["failure_samples"]
    assert summary["verifier_failures"] == 0, summary["failure_samples"]
    assert summary["unexpected_content"] == 0, summary["failure_samples"]
    assert len(summary["routes"]) >= 2
    assert {kind.name for kind in KINDS} | {"resume", "all"} == set(summary["latency_ms"])
    assert summary["disconnects"] == {}


def test_load_with_disconnects_loses_nothing() -> None:
    """Every run is cut at a random event: each reconnects, reads the rest exactly once, and a run
    the server stopped is sent again and still produces its content (paced, so cuts land mid-run)."""
    runs = 4 * len(KINDS)
    with live_server(Settings(agui_script_delay_ms=20)) as base:
        summary = asyncio.run(drive(base, concurrency=8, runs=runs, timeout_s=120, token=None, disconnect=1.0))

    assert summary["errors"] == summary["verifier_failures"] == summary["unexpected_content"] == 0, summary[
        "failure_samples"
    ]
    assert sum(summary["disconnects"].values()) == runs
    assert summary["disconnects"].get("CLIENT_GONE", 0) > 0, summary["disconnects"]
    assert summary["latency_ms"]["reconnect"]["requests"] > 0


@pytest.mark.parametrize("url", ["http://10.0.0.1:8000", "https://example.com", "http://0.0.0.0:8000"])
def test_load_refuses_anything_but_loopback(url: str) -> None:
    with pytest.raises(SystemExit, match="only loopback"):
        loopback_only(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/", "http://localhost:9000", "http://[::1]:8000"])
def test_load_accepts_loopback(url: str) -> None:
    assert loopback_only(url) == url.rstrip("/")


def test_a_servers_memory_includes_the_processes_it_started() -> None:
    """A bridge in a sidecar holds its streams in the sidecar: a server's memory is its process tree's."""
    child = (
        "import sys; held = bytearray(64 << 20); held[::4096] = bytes(len(held) // 4096); "  # every page written
        "print(flush=True); sys.stdin.read()"
    )
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    with subprocess.Popen([sys.executable, "-c", parent], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as server:
        server.stdout.readline()  # the child's line: its 64 MiB are resident
        sizes = rss_kib(server.pid)
        assert len(sizes) == 2 and max(kib for pid, kib in sizes.items() if pid != server.pid) >= 64 * 1024, sizes
        server.stdin.close()
