"""Mastra runtime: ``POST /mastra/agent`` behind @ag-ui/mastra, in a Node sidecar the app owns.

Mastra is TypeScript-only, so the route runs the real Mastra agents behind the real
``@ag-ui/mastra`` bridge in a Node process (``sidecar/``), which the app starts, watches and stops
(``bridge.MastraBridge.lifespan``). The versions of the Node packages come from the sidecar's
committed lock. This module is light on purpose (the registry, the benchmarks and the docs read
it); the bridge is imported when the app builds it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runtimes.base import Bridge, Known, Runtime
from runtimes.config import RuntimeSettings
from runtimes.interrupts import GATE_ANSWERS
from store import Store

LOCK = Path(__file__).resolve().parent / "sidecar" / "package-lock.json"


def _build(settings: RuntimeSettings, store: Store) -> Bridge:
    from runtimes.mastra.bridge import MastraBridge

    return MastraBridge(settings, store)


def npm_version(package: str) -> str:
    """The version of a sidecar package, as its committed lock pins it."""
    return json.loads(LOCK.read_text())["packages"][f"node_modules/{package}"]["version"]


runtime = Runtime(
    name="mastra",
    title="Mastra",
    bridge_package="@ag-ui/mastra",
    packages=("@mastra/core",),
    version=npm_version,
    build=_build,
    setup="runtimes.mastra.setup",
    bare_command=(sys.executable, "-m", "runtimes.mastra.bare", "--port", "{port}"),
    known=Known(
        answers=GATE_ANSWERS,
        notes=(
            "The route runs Mastra in a Node 22 sidecar the app owns (started with the app, restarted with "
            "backoff when it dies; RUN_ERROR RUNTIME_UNAVAILABLE while it is down). The offline model is the "
            "app's script served to it on loopback as an OpenAI-compatible endpoint; the tools' results come "
            "from the app too (`runtimes/mastra/loopback.py`).",
            "@ag-ui/mastra 1.1.2 drops a delegating tool's `tool-output` chunks (the specialist's stream); the "
            "sidecar forwards them as CUSTOM `mastra:tool-output` events, which `emitters/mastra.py` turns into "
            "SUBAGENT_* and removes from the wire.",
            "@ag-ui/mastra 1.1.2 shows a backend tool call only once Mastra has it whole, at its next chunk: the "
            "arguments never stream (so no predictive state), a delegating call appears only once its specialist "
            "has finished, and of two calls that suspend together the second is lost (`tool-call-suspended` "
            "clears the held call). The sidecar forwards each backend call's streaming chunks and "
            "`runtimes/mastra/events.py` shows the call from them as Mastra streams it.",
            "The bridge streams text as TEXT_MESSAGE_CHUNK and sends no MESSAGES_SNAPSHOT; the route expands the "
            "chunks and folds the run's messages into a snapshot before RUN_FINISHED. A successful RUN_FINISHED "
            "carries no outcome (legacy success).",
            "Approvals are Mastra tool suspensions; the bridge's own resume reads only the first entry of "
            "`resume` and answers a cancelled one with an empty run, so the route uses the strict gate of "
            "`runtimes/interrupts.py` and sends one entry per sidecar request (a cancelled one as "
            "`{approved: false}`). The bridge also sends its legacy `on_interrupt` CUSTOM event.",
            "@ag-ui/mastra carries state only as Mastra working memory (a Memory with storage per thread); "
            "the route keeps the sidecar without per-thread memory and puts the state tools' effect on the "
            "wire itself (`runtimes/mastra/state.py`): every run opens with a STATE_SNAPSHOT of the request's "
            "state and a PredictState CUSTOM event, and a complete STATE_SNAPSHOT follows `update_recipe` and "
            "`write_document`.",
            "A run suspended for an approval waits in the sidecar's Mastra storage: Mastra's in-memory store, or "
            "with shared state (`AGUI_STATE_URL`) Mastra's own Redis adapter (@mastra/redis 1.4.6) on the same "
            "engine, so any replica's sidecar resumes it. It stays exactly as long as the approval ledger keeps its "
            "thread waiting (dropped through `Bridge.forget` on whichever replica decides); every other run's records "
            "go before its response ends.",
        ),
    ),
)
"""What ``app.registry`` mounts."""
