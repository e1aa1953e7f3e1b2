"""The runtimes this server mounts: the one place that names them.

Adding a runtime: write ``runtimes/<name>/`` exposing ``runtime`` (a ``runtimes.base.Runtime``)
and add it below. Everything generic (the app, ``GET /``, the tests, the captures and matrix,
the boot and image checks, the benchmarks, the server's log settings) reads this tuple.
"""

from __future__ import annotations

from runtimes.adk import runtime as adk
from runtimes.base import Runtime
from runtimes.msaf import runtime as msaf
from runtimes.pydantic_ai import runtime as pydantic_ai
from runtimes.strands import runtime as strands

RUNTIMES: tuple[Runtime, ...] = (strands, msaf, adk, pydantic_ai)
