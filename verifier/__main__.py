"""``agui-verify``: check an SSE capture or a live AG-UI endpoint against the protocol rules.

    agui-verify capture.sse [resume.sse ...]       # several files = one thread, in order
    agui-verify http://127.0.0.1:8000/strands/agent --message "hello"
    agui-verify http://127.0.0.1:8000/msaf/agent --message "delete notes.txt" \\
        --resume resolved --payload '{"approved": true}'

A live URL gets a real ``RunAgentInput`` POST; with ``--resume``, a run that ends in an interrupt
is followed by a second run on the same thread that answers every interrupt, and both responses
are verified as one thread. Prints each problem; exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx

from verifier.client import history_after, interrupts, resume, run_input
from verifier.core import ThreadVerifier
from verifier.sse import parse_sse


def load_capture(path: Path) -> list[dict]:
    """A capture is either an SSE byte stream or a JSON array of events."""
    raw = path.read_bytes()
    return json.loads(raw) if raw.lstrip().startswith(b"[") else parse_sse(raw)


def post(url: str, body: dict, headers: list[str], timeout: float) -> list[dict]:
    """POST ``body`` and decode the whole SSE response."""
    extra = {name.strip(): value.strip() for name, value in (header.split(":", 1) for header in headers)}
    all_headers = {"content-type": "application/json", "accept": "text/event-stream", **extra}
    response = httpx.post(url, json=body, headers=all_headers, timeout=timeout)
    if response.status_code != 200:
        raise SystemExit(f"{url} answered HTTP {response.status_code}: {response.text[:500]}")
    return parse_sse(response.content)


def verify_live(args: argparse.Namespace) -> tuple[list[list[dict]], list[str]]:
    """Run the first turn, and the resume when asked and needed; verify them as one thread.

    The resume carries what a client holds after the first run: its state and the last
    MESSAGES_SNAPSHOT (or the original messages when the server sent none).
    """
    first = run_input(args.message, thread_id=args.thread_id, state=json.loads(args.state))
    verifier = ThreadVerifier(state=first["state"], messages=first["messages"])
    runs = [post(args.source, first, args.header, args.timeout)]
    problems = [f"run 0: {problem}" for problem in verifier.verify_stream(runs[0])]
    pending = interrupts(runs[0])
    if args.resume and pending:
        payload = json.loads(args.payload) if args.payload else None
        second = run_input(
            thread_id=first["threadId"],
            messages=history_after(first, runs[0]),
            state=verifier.state,
            resume=resume(pending, args.resume, payload),
        )
        runs.append(post(args.source, second, args.header, args.timeout))
        problems += [f"run 1: {problem}" for problem in verifier.verify_stream(runs[1])]
    return runs, problems


def verify_captures(args: argparse.Namespace) -> tuple[list[list[dict]], list[str]]:
    """Verify capture files as the responses of one thread, in the order given."""
    runs = [load_capture(Path(args.source)), *(load_capture(path) for path in args.more)]
    verifier = ThreadVerifier()
    problems = [
        f"run {number}: {problem}" for number, events in enumerate(runs) for problem in verifier.verify_stream(events)
    ]
    return runs, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agui-verify", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", help="an .sse / .json capture file, or an http(s) URL of an AG-UI route")
    parser.add_argument("more", nargs="*", type=Path, help="later captures of the same thread, in order")
    parser.add_argument("--message", default="hello", help="user message for a live run")
    parser.add_argument("--thread-id", help="thread id for a live run (default: a fresh one)")
    parser.add_argument("--state", default="{}", help="initial state (JSON) for a live run")
    parser.add_argument("--header", action="append", default=[], help="extra request header 'Name: value'")
    parser.add_argument("--resume", choices=["resolved", "cancelled"], help="answer an interrupt with a second run")
    parser.add_argument(
        "--payload", help="JSON payload sent with every resolved interrupt, e.g. '{\"approved\": true}'"
    )
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--show", action="store_true", help="print each event's type as well")
    args = parser.parse_args(argv)

    live = args.source.startswith(("http://", "https://"))
    runs, problems = verify_live(args) if live else verify_captures(args)
    if args.show:
        for number, events in enumerate(runs):
            print(f"run {number}: {' '.join(str(event.get('type')) for event in events)}")
    for problem in problems:
        print(problem)
    total = sum(len(events) for events in runs)
    print(f"{'INVALID' if problems else 'ok'}: {len(runs)} run(s), {total} events, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
