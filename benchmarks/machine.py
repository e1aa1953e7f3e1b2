"""What the numbers were measured on: a benchmark result without its machine is not comparable."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path

from app.registry import RUNTIMES

PACKAGES = ("ag-ui-protocol", "fastapi", "uvicorn", "sse-starlette", "httpx")


def _first(path: str, prefix: str) -> str | None:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(prefix)), None)


def load_average() -> list[float]:
    """1/5/15-minute load: a busy shared machine shows here, so it goes next to every result."""
    return [round(value, 2) for value in os.getloadavg()]


def machine_info() -> dict:
    mem_kib = _first("/proc/meminfo", "MemTotal")
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": _first("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "memory_gib": round(int(mem_kib.split()[0]) / 1024 / 1024, 1) if mem_kib else None,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": {
            **{name: metadata.version(name) for name in PACKAGES},
            **{runtime.bridge_package: runtime.version(runtime.bridge_package) for runtime in RUNTIMES},
        },
    }
