"""``python -m benchmarks.load`` (``make load``): mixed, verified traffic against a running server.

    python -m benchmarks.load --url http://127.0.0.1:8000 --concurrency 200 --runs 400
    python -m benchmarks.load --spawn --concurrency 200      # starts its own server, then stops it

Every route ``GET /`` lists gets a rotating mix of the four things a client does: a streamed text
reply, a backend tool call, an approval (the interrupt, then the resume on the same thread) and a
delegation to the specialist. Each response is checked with the protocol verifier
(``verify_thread`` for an interrupt and its resume, ``verify_events`` otherwise) and for what the
prompt must produce; the report gives errors, verifier failures and latency percentiles.

Random disconnects (``--disconnect``, a tenth of runs by default): such a run's client drops its
connection after a random number of events, then does what an SSE client does: it sends the same
request again with ``Last-Event-ID`` and must receive the rest exactly once (the events' ids go on
from where it left, with no gap and no repeat) and a terminal event, the two parts verified as one
stream. A run the server stopped because its client left (``CLIENT_GONE``, the default
``AGUI_DETACHED_RUN_S=0``) is then sent again as a new run on the same thread, as a user would, and
must produce what its prompt asks for: so "nothing lost" means every run of the mix, cut or not,
ends with its expected content, and no thread is left busy by a client that left.

Bounded on purpose: loopback URLs only, at most ``--concurrency`` runs in flight, and a hard
``--timeout`` after which whatever is unfinished is cancelled and counted as an error.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import random
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from benchmarks.client import HEADERS, finish_within, percentile
from benchmarks.machine import load_average, machine_info
from benchmarks.process import ServerProcess, served_as_configured
from verifier import parse_sse, verify_events, verify_thread
from verifier.client import history_after, interrupts, resume, run_input

Events = list[dict]
Check = Callable[[Events], str | None]


@dataclass(frozen=True)
class Kind:
    """One kind of run in the mix: its prompt and what its (last) response must contain."""

    name: str
    prompt: str
    check: Check


def _has(kind: str, **fields: object) -> Check:
    def check(events: Events) -> str | None:
        if any(e.get("type") == kind and all(e.get(k) == v for k, v in fields.items()) for e in events):
            return None
        return f"no {kind} {fields or ''}".strip()

    return check


def _finished(events: Events) -> str | None:
    outcome = (events[-1].get("outcome") or {}) if events else {}
    if events and events[-1].get("type") == "RUN_FINISHED" and outcome.get("type", "success") == "success":
        return None
    return f"did not finish successfully: last event {events[-1] if events else None}"


KINDS = (
    Kind("text", "Hello there!", _has("TEXT_MESSAGE_CONTENT")),
    Kind("tool", "What's the weather in Tokyo?", _has("TOOL_CALL_START", toolCallName="get_weather")),
    Kind("approval", "delete notes.txt", _has("TOOL_CALL_RESULT")),
    Kind("delegation", "Research the history of Lisbon", _has("SUBAGENT_STARTED")),
)


@dataclass
class Request:
    """One HTTP request of a run: its latency and its decoded events."""

    kind: str
    route: str
    ttfe: float | None = None
    total: float = 0.0
    events: Events = field(default_factory=list)
    ids: list[int] = field(default_factory=list)  # the SSE ``id:`` of each event
    error: str | None = None


@dataclass
class Outcome:
    """One run of the mix (two requests for an approval)."""

    kind: str
    route: str
    requests: list[Request] = field(default_factory=list)
    error: str | None = None
    problems: list[str] = field(default_factory=list)  # verifier failures
    unexpected: str | None = None  # valid stream, wrong content
    cut: str | None = None  # with a disconnect: how the cut run ended (``finished`` or its RUN_ERROR code)


_EVENT_ID = re.compile(rb"^id: (\d+)$", re.MULTILINE)


async def post(
    client: httpx.AsyncClient,
    url: str,
    route: str,
    body: dict,
    kind: str,
    *,
    leave_after: int | None = None,
    last_event_id: int | None = None,
) -> Request:
    """POST one RunAgentInput and read the stream, timing the first event: to its end, or, with
    ``leave_after``, until that many whole events came and the run had not ended (then the
    connection is dropped); with ``last_event_id``, a reconnect reading the rest of the run."""
    request = Request(kind, route)
    headers = HEADERS if last_event_id is None else {**HEADERS, "last-event-id": str(last_event_id)}
    start = time.perf_counter()
    raw = b""
    try:
        async with client.stream("POST", url + route, content=json.dumps(body).encode(), headers=headers) as response:
            async for chunk in response.aiter_raw():
                raw += chunk
                if request.ttfe is None and b"data:" in raw:
                    request.ttfe = time.perf_counter() - start
                if leave_after is not None and len(_EVENT_ID.findall(raw[: raw.rfind(b"\n\n")])) >= leave_after:
                    raw = raw[: raw.rfind(b"\n\n") + 2]  # whole frames only, as a client that left has them
                    break
            if response.status_code not in (200, 204):
                request.error = f"HTTP {response.status_code}: {raw[:200]!r}"
    except (httpx.HTTPError, OSError) as exc:
        elapsed = 1000 * (time.perf_counter() - start)
        request.error = f"{type(exc).__name__}: {exc} (after {elapsed:.0f} ms, {len(raw)} bytes received)"
    request.total = time.perf_counter() - start
    if request.error is None:
        request.events = parse_sse(raw)
        request.ids = [int(number) for number in _EVENT_ID.findall(raw)]
    return request


def resume_input(first_body: dict, first: Events) -> dict:
    """What a client sends to approve every open interrupt: its history and the top-level resume."""
    return run_input(
        thread_id=first_body["threadId"],
        messages=history_after(first_body, first),
        resume=resume(interrupts(first), payload={"approved": True}),
    )


async def cut(
    client: httpx.AsyncClient, url: str, route: str, body: dict, outcome: Outcome, leave_after: int
) -> Events | None:
    """Leave the run after ``leave_after`` events, reconnect with ``Last-Event-ID`` and read the
    rest, recording how it ended in ``outcome.cut``. Returns the whole run's events when it ended
    on its own; None when the server stopped it because its client left (``CLIENT_GONE``: the run
    is to be sent again) or when the cut went wrong (``outcome.error`` or ``outcome.problems``)."""
    head = await post(client, url, route, body, outcome.kind, leave_after=leave_after)
    outcome.requests.append(head)
    if head.error or not head.events:
        outcome.error = head.error or "the cut run's stream had no event"
        return None
    events, ids = head.events, head.ids
    if events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):  # else it ended before the client left
        rest = await post(client, url, route, body, "reconnect", last_event_id=head.ids[-1])
        outcome.requests.append(rest)
        if rest.error:
            outcome.error = rest.error
            return None
        events, ids = events + rest.events, ids + rest.ids
    if ids != list(range(1, len(events) + 1)):
        outcome.problems = [f"lost or repeated events: ids {head.ids} then {ids[len(head.ids) :]}"]
        return None
    terminal = events[-1]
    outcome.cut = terminal.get("code") or "ended" if terminal["type"] == "RUN_ERROR" else "finished"
    if outcome.cut == "CLIENT_GONE":
        outcome.problems = verify_events(events)
        return None
    return events


async def one_run(
    client: httpx.AsyncClient, url: str, route: str, kind: Kind, subagents: bool, leave_after: int | None = None
) -> Outcome:
    """One run of the mix. With ``leave_after`` its first request is cut and reconnected; a run the
    server stopped for it is sent again as a new run on the same thread."""
    outcome = Outcome(kind.name, route)
    thread_id = f"load-{uuid.uuid4().hex[:12]}"
    body = run_input(kind.prompt, thread_id=thread_id)
    events = None if leave_after is None else await cut(client, url, route, body, outcome, leave_after)
    if outcome.error or outcome.problems:
        return outcome
    if events is None:
        if outcome.cut:
            body = run_input(kind.prompt, thread_id=thread_id)
        first = await post(client, url, route, body, kind.name)
        outcome.requests.append(first)
        if first.error:
            outcome.error = first.error
            return outcome
        events = first.events
    streams = [events]
    if kind.name == "approval":
        if (events[-1].get("outcome") or {}).get("type") != "interrupt":
            outcome.unexpected = "the approval run did not end in an interrupt"
            outcome.problems = verify_events(events)
            return outcome
        second = await post(client, url, route, resume_input(body, events), "resume")
        outcome.requests.append(second)
        if second.error:
            outcome.error = second.error
            return outcome
        streams.append(second.events)
        outcome.problems = verify_thread(streams)
    else:
        outcome.problems = verify_events(events)
    if kind.name == "delegation" and not subagents:
        outcome.unexpected = _finished(streams[-1])
    else:
        outcome.unexpected = _finished(streams[-1]) or kind.check(streams[-1])
    return outcome


def plan(routes: list[str], runs: int) -> list[tuple[str, Kind]]:
    """Run ``i`` is kind ``i mod 4`` on route ``i div 4 mod len(routes)``: every pair gets its share."""
    return [(routes[(i // len(KINDS)) % len(routes)], KINDS[i % len(KINDS)]) for i in range(runs)]


async def drive(
    url: str, concurrency: int, runs: int, timeout_s: float, token: str | None, disconnect: float = 0.0, seed: int = 0
) -> dict:
    """Run the mix; a ``disconnect`` share of the runs (chosen with ``seed``) is cut at a random event."""
    chance = random.Random(seed)
    headers = {"authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=concurrency + 8, max_keepalive_connections=concurrency + 8)
    async with httpx.AsyncClient(
        limits=limits, timeout=httpx.Timeout(min(120.0, timeout_s)), headers=headers
    ) as client:
        listing = (await client.get(url + "/")).raise_for_status().json()
        routes = [runtime["route"] for runtime in listing["runtimes"]]
        subagents = bool(listing.get("subagentEvents", True))
        slots = asyncio.Semaphore(concurrency)

        async def bounded(route: str, kind: Kind, leave_after: int | None) -> Outcome:
            async with slots:
                return await one_run(client, url, route, kind, subagents, leave_after)

        cuts = [chance.randint(1, 12) if chance.random() < disconnect else None for _ in range(runs)]
        outcomes, unfinished, wall = await finish_within(
            [bounded(route, kind, cut) for (route, kind), cut in zip(plan(routes, runs), cuts, strict=True)], timeout_s
        )
    return summarize(outcomes, unfinished, wall, routes, concurrency, timeout_s)


def _percentiles(values: list[float]) -> dict:
    return {f"p{q}": round(1000 * percentile(values, q), 1) if values else None for q in (50, 95, 99)}


def summarize(outcomes: list[Outcome], unfinished: int, wall: float, routes: list[str], concurrency: int,
              timeout_s: float) -> dict:  # fmt: skip
    requests = [request for outcome in outcomes for request in outcome.requests if request.error is None]
    by_kind: dict[str, list[Request]] = {}
    for request in requests:
        by_kind.setdefault(request.kind, []).append(request)
    samples = Counter(
        f"{o.route} {o.kind}: {o.error or (o.problems[0] if o.problems else o.unexpected)}"
        for o in outcomes
        if o.error or o.problems or o.unexpected
    )
    return {
        "routes": routes,
        "concurrency": concurrency,
        "runs": len(outcomes) + unfinished,
        "requests": sum(len(outcome.requests) for outcome in outcomes),
        "wall_s": round(wall, 2),
        "errors": sum(1 for outcome in outcomes if outcome.error) + unfinished,
        "unfinished_at_timeout": unfinished,
        "verifier_failures": sum(1 for outcome in outcomes if outcome.problems),
        "unexpected_content": sum(1 for outcome in outcomes if outcome.unexpected and not outcome.error),
        "disconnects": dict(Counter(outcome.cut for outcome in outcomes if outcome.cut)),
        "failure_samples": [f"{count}x {text[:300]}" for text, count in samples.most_common(5)]
        + ([f"{unfinished}x unfinished after {timeout_s:.0f} s"] if unfinished else []),
        "latency_ms": {
            kind: {
                "requests": len(items),
                "ttfe": _percentiles([r.ttfe for r in items if r.ttfe is not None]),
                "total": _percentiles([r.total for r in items]),
            }
            for kind, items in [("all", requests), *sorted(by_kind.items())]
        },
    }


def render(summary: dict, url: str) -> str:
    lines = [
        f"{summary['runs']} runs ({summary['requests']} requests) at concurrency {summary['concurrency']} on {url} "
        f"({', '.join(summary['routes'])}) in {summary['wall_s']} s",
        f"errors {summary['errors']}, verifier failures {summary['verifier_failures']}, "
        f"unexpected content {summary['unexpected_content']}",
        "disconnected and reconnected: "
        + (", ".join(f"{n} {how}" for how, n in sorted(summary["disconnects"].items())) or "none"),
        *(f"  {sample}" for sample in summary["failure_samples"]),
        "",
        "| requests | n | TTFE ms p50 / p95 / p99 | total ms p50 / p95 / p99 |",
        "|---|---|---|---|",
    ]
    for kind, stats in summary["latency_ms"].items():
        ttfe = " / ".join(str(stats["ttfe"][p]) for p in ("p50", "p95", "p99"))
        total = " / ".join(str(stats["total"][p]) for p in ("p50", "p95", "p99"))
        lines.append(f"| {kind} | {stats['requests']} | {ttfe} | {total} |")
    return "\n".join(lines)


def loopback_only(url: str) -> str:
    """Load goes to this machine only: refuse any other host before sending anything."""
    host = urlsplit(url).hostname or ""
    try:
        is_loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        is_loopback = False
    if not is_loopback:
        raise SystemExit(f"refusing to load {url}: only loopback hosts (127.0.0.1, ::1, localhost) are allowed")
    return url.rstrip("/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="a running server (make serve)")
    parser.add_argument("--spawn", action="store_true", help="start a server on a free port instead (ignores --url)")
    parser.add_argument("--concurrency", type=int, default=50, help="runs in flight at once")
    parser.add_argument("--runs", type=int, help="total runs (default: --concurrency)")
    parser.add_argument("--timeout", type=float, default=300.0, help="hard limit in seconds for the whole load")
    parser.add_argument("--token", help="bearer token, when the server sets AGUI_TOKEN")
    parser.add_argument(
        "--disconnect", type=float, default=0.1, help="share of runs whose client leaves mid-run and reconnects"
    )
    parser.add_argument("--seed", type=int, default=0, help="which runs are cut, and where")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)
    if args.concurrency < 1 or (args.runs is not None and args.runs < 1):
        parser.error("--concurrency and --runs must be at least 1")
    if not 0 <= args.disconnect <= 1:
        parser.error("--disconnect is a share of the runs, from 0 to 1")
    runs = args.runs or args.concurrency
    with tempfile.TemporaryDirectory(prefix="agui-load-") as logs:
        server = ServerProcess(served_as_configured(), Path(logs)) if args.spawn else None
        try:
            if server is not None:
                server.start().wait_ready()
            url = server.base if server is not None else loopback_only(args.url)
            summary = asyncio.run(
                drive(url, args.concurrency, runs, args.timeout, args.token, args.disconnect, args.seed)
            )
        finally:
            if server is not None:
                server.stop()
        if server is not None and summary["errors"]:  # the server's side of the story, before it is deleted
            print("".join(server.log_path.read_text().splitlines(keepends=True)[-30:]), file=sys.stderr)
    summary["machine"] = {**machine_info(), "load_average_after": load_average()}
    print(render(summary, url))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    failed = summary["errors"] + summary["verifier_failures"] + summary["unexpected_content"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
