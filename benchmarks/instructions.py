"""CPU per run as instructions counted by callgrind: ours against the bare bridge, in one process each.

Why: on a shared 2-core machine the CPU's own speed moves by a third from one second to the next
(docs/performance.md), so CPU per run read from ``/proc`` needs many rounds and still spreads, and
a change worth 3% cannot be told from noise. Valgrind's callgrind counts the instructions a
process executes: the same count for the same work, however busy the machine is. It is CPU work,
not time (memory stalls, the kernel and the client are not in it); the wall-time verdicts stay the
concurrency phase's.

Each target is its ASGI app in a process of its own under ``valgrind --tool=callgrind
--instr-atstart=no``: built, warmed by two bursts, then counted (``callgrind_control``) for
``instruction_rounds`` bursts of ``instruction_level`` concurrent runs per scenario, driven
through the ASGI interface in the same process (no sockets, no HTTP parser: what both sides share
is left out). Ours is the app as ``deploy.serve`` serves it (its collector settings), its timers
slowed to the hour: under valgrind a process runs tens of times slower, so a heartbeat or a
keepalive every few seconds of wall time would fire tens of times per run instead of once in a
while. Bare is each runtime's declared ``bare_app``; a runtime whose bare bridge is not a Python
app (a Node sidecar) has no row, since its bridge does not run in the process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.process import ROOT
from benchmarks.scenarios import BARE_APPS, SCENARIOS, route_of, run_body

if TYPE_CHECKING:
    from benchmarks.bench import BenchConfig, Deadline

PAIR = ("bare", "ours")
SLOW_TIMERS = {"AGUI_LEASE_S": "3600", "AGUI_KEEPALIVE_S": "3600"}
"""Ours' heartbeat and keepalive, once an hour: wall time under valgrind is not the run's time."""


async def measure_instructions(config: BenchConfig, deadline: Deadline) -> list[dict]:
    """Per runtime with a Python bare bridge and per scenario: instructions per run of each target,
    and ours/bare. Two targets are counted at a time (one per core)."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("instructions: no valgrind on this machine (`make valgrind`); phase skipped", file=sys.stderr)
        return []
    runtimes = [runtime for runtime in config.runtimes if BARE_APPS[runtime]]
    gate = asyncio.Semaphore(2)

    async def count(runtime: str, kind: str) -> dict[str, float]:
        async with gate:
            if deadline.expired():
                return {}
            return await asyncio.to_thread(_count, runtime, kind, config)

    counts = await asyncio.gather(*(count(runtime, kind) for runtime in runtimes for kind in PAIR))
    by_target = dict(zip([(runtime, kind) for runtime in runtimes for kind in PAIR], counts, strict=True))
    rows = []
    for runtime in runtimes:
        for scenario in config.scenarios:
            bare, ours = (by_target[(runtime, kind)].get(scenario) for kind in PAIR)
            rows.append(
                {
                    "runtime": runtime,
                    "scenario": scenario,
                    "concurrency": config.instruction_level,
                    "bare_per_run": bare,
                    "ours_per_run": ours,
                    "ours_over_bare": round(ours / bare, 3) if bare and ours else None,
                }
            )
    return rows


def _count(runtime: str, kind: str, config: BenchConfig) -> dict[str, float]:
    """Run one target under callgrind; instructions per run by scenario (empty if it failed)."""
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as folder:
        out = Path(folder) / "callgrind.out"
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AGUI_", "OPENAI_"))}
        env.update(SLOW_TIMERS if kind == "ours" else {})  # always offline, as every benchmarked server
        env["PYTHONHASHSEED"] = "0"  # the same hashes, so the same dict and set work, every count
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            f"--log-file={Path(folder) / 'valgrind.log'}",
            sys.executable,
            "-m",
            "benchmarks.instructions",
            kind,
            runtime,
            str(config.instruction_level),
            str(config.instruction_rounds),
            *config.scenarios,
        ]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600, check=False)
        if done.returncode != 0:
            print(f"instructions: {kind} {runtime} failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
            return {}
        runs = config.instruction_level * config.instruction_rounds
        # One dump per scenario, in order: <out>.1, <out>.2, ... each with its "totals:" line.
        return {
            scenario: _totals(Path(f"{out}.{index}")) / runs for index, scenario in enumerate(config.scenarios, start=1)
        }


def _totals(dump: Path) -> int:
    for line in dump.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise ValueError(f"no totals in {dump}")


# --- the counted process -------------------------------------------------------------------------


def _app(kind: str, runtime: str):
    if kind == "ours":
        from deploy.serve import served_app

        return served_app()
    module, _, factory = BARE_APPS[runtime].partition(":")
    return getattr(__import__(module, fromlist=[factory]), factory)()


async def _post(app, path: str, body: bytes) -> bytes:
    """One POST through the app's ASGI interface; the response body."""
    asked = False

    async def receive() -> dict:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never leaves
        raise AssertionError("unreachable")

    chunks: list[bytes] = []

    async def send(message: dict) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    headers = [(b"content-type", b"application/json"), (b"accept", b"text/event-stream")]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [*headers, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    return b"".join(chunks)


async def _bursts(app, path: str, prompt: str, level: int, rounds: int) -> None:
    for _ in range(rounds):
        bodies = await asyncio.gather(*(_post(app, path, run_body(prompt)) for _ in range(level)))
        finished = [body for body in bodies if b'"type":"RUN_FINISHED"' in body.rsplit(b"data:", 1)[-1]]
        if len(finished) != level:
            raise SystemExit(f"{level - len(finished)} of {level} runs did not finish: {bodies[0][-300:]!r}")


def _callgrind(*args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(os.getpid())], capture_output=True, check=True)


async def _counted(kind: str, runtime: str, level: int, rounds: int, scenarios: list[str]) -> None:
    app = _app(kind, runtime)
    path = route_of(runtime)
    for scenario in scenarios:  # warm: first runs build caches, schemas and pools
        await _bursts(app, path, SCENARIOS[scenario], level, 2)
    _callgrind("--instr=on")
    for scenario in scenarios:
        await _bursts(app, path, SCENARIOS[scenario], level, rounds)
        _callgrind("--dump")  # this scenario's count, then the counters start again
    _callgrind("--instr=off")


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks.instructions KIND RUNTIME LEVEL ROUNDS SCENARIO...``: the counted
    process (started under callgrind by :func:`measure_instructions`)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("kind", choices=PAIR)
    parser.add_argument("runtime")
    parser.add_argument("level", type=int)
    parser.add_argument("rounds", type=int)
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args(argv)
    os.environ.update({"AGUI_MODEL": "scripted", "AGUI_SCRIPT_DELAY_MS": "0"})
    import uvloop

    uvloop.run(_counted(args.kind, args.runtime, args.level, args.rounds, args.scenarios))


if __name__ == "__main__":
    main()
