"""Issue 20's targets, per route, from one bench run: the verdict rows ``make bench`` prints.

At every concurrency level above one (50, 200, 500 in the full run) and every scenario: total time
ours/bare <= 1.10 and p99 time to first event ours <= bare (ratios per round, their median); with
all N streams open at once: memory per open stream ours <= 1.2 x bare (ratios per round, their
median), and <= 100 KiB (median of the rounds) wherever the bare bridge is under 100 KiB. Each row
names the worst case it found, so a miss points at its cell.
"""

from __future__ import annotations

TOTAL_MAX = 1.10
TTFE_MAX = 1.00
MEMORY_RATIO_MAX = 1.2
MEMORY_KIB_MAX = 100.0


def _row(runtime: str, name: str, value: float | None, goal: str, met: bool | None, worst: str) -> dict:
    return {"runtime": runtime, "target": name, "value": value, "goal": goal, "met": met, "worst": worst}


def _worst(cells: list[tuple[float, str]]) -> tuple[float | None, str]:
    if not cells:
        return None, ""
    value, where = max(cells)
    return round(value, 3), where


def _cell(ratio: dict) -> str:
    return f"{ratio['scenario']} N={ratio['concurrency']}"


def issue_targets(results: dict) -> list[dict]:
    rows = []
    runtimes = dict.fromkeys(row["runtime"] for row in results["concurrency_ratios"] + results["memory"])
    for runtime in runtimes:
        ratios = [r for r in results["concurrency_ratios"] if r["runtime"] == runtime and r["concurrency"] > 1]
        memory_ratios = [r for r in results["memory_ratios"] if r["runtime"] == runtime and r["kib_vs_bare"]]
        total = _worst([(r["total_vs_bare"]["median"], _cell(r)) for r in ratios if r["total_vs_bare"]])
        ttfe = _worst([(r["ttfe_p99_vs_bare"]["median"], _cell(r)) for r in ratios if r["ttfe_p99_vs_bare"]])
        mine = [r for r in results["memory"] if r["runtime"] == runtime]
        memory = {(r["concurrency"], r["target"]): r["kib_per_open_stream"] for r in mine}
        levels = sorted({level for level, _ in memory})
        pairs = [(level, memory.get((level, "ours")), memory.get((level, "bare"))) for level in levels]
        pairs = [(level, ours, bare) for level, ours, bare in pairs if ours is not None and bare]
        ratio = _worst([(r["kib_vs_bare"]["median"], f"N={r['concurrency']}") for r in memory_ratios])
        small = [(ours, f"N={level} (bare {bare:.0f})") for level, ours, bare in pairs if bare < MEMORY_KIB_MAX]
        kib = _worst(small)
        rows += [
            _row(runtime, "concurrent total time ours/bare (worst level, scenario)", total[0], f"<= {TOTAL_MAX:.2f}",
                 None if total[0] is None else total[0] <= TOTAL_MAX, total[1]),
            _row(runtime, "p99 time to first event ours/bare (worst level, scenario)", ttfe[0], f"<= {TTFE_MAX:.2f}",
                 None if ttfe[0] is None else ttfe[0] <= TTFE_MAX, ttfe[1]),
            _row(runtime, "memory per open stream ours/bare (all N open at once)", ratio[0], f"<= {MEMORY_RATIO_MAX}",
                 None if ratio[0] is None else ratio[0] <= MEMORY_RATIO_MAX, ratio[1]),
            _row(runtime, "memory per open stream, KiB, where bare < 100", kib[0], f"<= {MEMORY_KIB_MAX:.0f}",
                 None if kib[0] is None else kib[0] <= MEMORY_KIB_MAX, kib[1] or "bare >= 100 KiB at every N"),
        ]  # fmt: skip
    return rows
