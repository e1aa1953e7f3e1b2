"""Drive every runtime route of a running server, at a base URL, the way a client would.

Why: the boot check (the image's install, run on this machine) and the image check (the built
container) must prove the same thing about whatever answers at their URL, so "the routes work"
is defined once, here. The routes come from ``GET /``: a runtime added later is driven without a
change to this module. Every stream goes through the project's protocol verifier
(``verifier.verify_events``, ``verifier.verify_thread``), not a hand-rolled shape check.

On each route ``drive`` runs a plain message, a delegation (must show ``SUBAGENT_STARTED``) and an
approval: the run must end in an interrupt, and a resume on the same thread that approves every
interrupt must finish; the two streams are verified as one thread. ``OpenStream`` keeps a run
streaming in the background, for checks that stop a server mid-stream.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from deploy.loopback import wait_until_ok
from verifier import parse_sse, verify_events, verify_thread
from verifier.client import history_after, interrupts, resume, run_input

PLAIN_PROMPT = "Hello there!"
DELEGATION_PROMPT = "Research the history of Lisbon"
APPROVAL_PROMPT = "delete notes.txt"
LOG_TAIL_LINES = 40
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
HEADERS = {"accept": "text/event-stream"}

Events = list[dict]


@dataclass
class Report:
    """What a check saw: one line per passed step, one per failure, and the server's last words."""

    passed: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    log_tail: str = ""

    @property
    def ok(self) -> bool:
        return not self.failures

    def extend(self, other: Report) -> None:
        self.passed += other.passed
        self.failures += other.failures

    def render(self) -> str:
        lines = [f"ok    {line}" for line in self.passed] + [f"FAIL  {line}" for line in self.failures]
        if self.failures and self.log_tail:
            lines += [f"--- last {LOG_TAIL_LINES} lines of the server log ---", self.log_tail.rstrip()]
        return "\n".join(lines)


class StepFailed(Exception):
    """One step on one route went wrong; the message says how."""


def wait_for_ok(base: str, exit_code: Callable[[], int | None], timeout_s: float) -> float:
    """``deploy.loopback.wait_until_ok`` as a step: the seconds until ``/ok`` answered, or
    ``StepFailed`` naming the exit code of a server (``exit_code`` is its ``poll``) that died."""
    try:
        return wait_until_ok(base, timeout_s=timeout_s, alive=lambda: exit_code() is None)
    except RuntimeError:
        raise StepFailed(f"server exited with code {exit_code()} before /ok answered") from None
    except TimeoutError as error:
        raise StepFailed(str(error)) from None


def list_routes(base: str) -> list[str]:
    """The runtime routes the capabilities document (``GET /``) lists."""
    try:
        response = httpx.get(f"{base}/", timeout=10)
        listing = response.json() if response.status_code == 200 else {}
    except (httpx.HTTPError, ValueError) as error:
        raise StepFailed(f"GET / failed: {error!r}") from None
    if response.status_code != 200:
        raise StepFailed(f"GET / answered HTTP {response.status_code}")
    routes = [runtime.get("route") for runtime in listing.get("runtimes", [])]
    if not routes or not all(isinstance(route, str) for route in routes):
        raise StepFailed(f"GET / lists no runtime routes: {response.text[:300]}")
    return routes


def stream_run(url: str, body: dict, timeout_s: float) -> Events:
    """POST one run and return its events; a slow trickle still ends at ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    raw = b""
    try:
        with httpx.stream("POST", url, json=body, headers=HEADERS, timeout=timeout_s) as response:
            for chunk in response.iter_bytes():
                raw += chunk
                if time.monotonic() > deadline:
                    raise StepFailed(f"the stream was still open after {timeout_s:g} s")
            if response.status_code != 200:
                raise StepFailed(f"HTTP {response.status_code}: {raw[:300].decode(errors='replace')}")
    except httpx.TimeoutException:
        raise StepFailed(f"no complete response within {timeout_s:g} s") from None
    except httpx.HTTPError as error:
        raise StepFailed(f"request failed: {error!r}") from None
    return parse_sse(raw)


def require_valid(problems: list[str]) -> None:
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StepFailed(f"verifier: {problems[0]}{more}")


def require_finished(events: Events, outcome: str = "success") -> dict:
    """The stream must end in RUN_FINISHED with ``outcome``; returns that event."""
    errors = [event for event in events if event.get("type") == "RUN_ERROR"]
    if errors:
        code = f" {errors[0]['code']}" if errors[0].get("code") else ""
        raise StepFailed(f"RUN_ERROR{code}: {errors[0].get('message')}")
    if not events:
        raise StepFailed("the stream carried no events")
    last = events[-1]
    if last.get("type") != "RUN_FINISHED":
        raise StepFailed(f"stream ended with {last.get('type')}, not RUN_FINISHED")
    got = (last.get("outcome") or {}).get("type", "success")
    if got != outcome:
        raise StepFailed(f"RUN_FINISHED with outcome {got!r}, expected {outcome!r}")
    return last


def require_types(events: Events, *required: str) -> None:
    types = {event.get("type") for event in events}
    for kind in required:
        if kind not in types:
            raise StepFailed(f"no {kind} event among {len(events)} events")


def plain(url: str, timeout_s: float) -> str:
    events = stream_run(url, run_input(PLAIN_PROMPT), timeout_s)
    require_finished(events)
    require_types(events, "TEXT_MESSAGE_CONTENT")
    require_valid(verify_events(events))
    return f"{len(events)} events"


def delegation(url: str, timeout_s: float) -> str:
    events = stream_run(url, run_input(DELEGATION_PROMPT), timeout_s)
    require_finished(events)
    require_types(events, "TEXT_MESSAGE_CONTENT", "SUBAGENT_STARTED")
    require_valid(verify_events(events))
    return f"{len(events)} events"


def approval(url: str, timeout_s: float) -> str:
    """Interrupt, then a resume on the same thread that approves every interrupt."""
    body = run_input(APPROVAL_PROMPT)
    first = stream_run(url, body, timeout_s)
    require_finished(first, "interrupt")
    pending = interrupts(first)
    if not pending:
        raise StepFailed("the interrupt outcome lists no interrupts")
    answer = resume(pending, payload={"approved": True})
    second = stream_run(url, run_input(thread_id=body["threadId"], messages=history_after(body, first), resume=answer),
                        timeout_s)  # fmt: skip
    require_finished(second)
    require_valid(verify_thread([first, second]))
    return f"{len(pending)} interrupt(s) approved, {len(first)} + {len(second)} events"


STEPS: tuple[tuple[str, Callable[[str, float], str]], ...] = (
    ("plain message", plain),
    ("delegation", delegation),
    ("approval + resume", approval),
)


PAGE_FILES: tuple[str, ...] = ("inspector/main.js", "inspector/vendor/ag-ui-client.js", "inspector/matrix.md")
"""The inspector page's code, its bundled client, and the matrix its differences link to."""


def check_page(base: str) -> str:
    """A browser's ``GET /`` gets the inspector page, and the server serves the page's files."""
    page = httpx.get(f"{base}/", headers={"accept": "text/html"}, timeout=10)
    if page.status_code != 200 or "text/html" not in page.headers.get("content-type", ""):
        raise StepFailed(f"GET / for a browser answered HTTP {page.status_code} {page.headers.get('content-type')}")
    for path in PAGE_FILES:
        response = httpx.get(f"{base}/{path}", timeout=10)
        if response.status_code != 200 or not response.content:
            raise StepFailed(f"/{path} answered HTTP {response.status_code}")
    return f"page and {len(PAGE_FILES)} files served"


def drive(base: str, *, run_timeout_s: float = 60) -> Report:
    """``GET /``, the inspector page, then every step on every runtime route ``GET /`` lists."""
    report = Report()
    try:
        routes = list_routes(base)
    except StepFailed as failure:
        report.failures.append(str(failure))
        return report
    report.passed.append(f"GET / lists {len(routes)} runtime routes: {', '.join(routes)}")
    try:
        report.passed.append(f"inspector page: {check_page(base)}")
    except StepFailed as failure:
        report.failures.append(f"inspector page: {failure}")
    for route in routes:
        for name, step in STEPS:
            try:
                report.passed.append(f"{route} {name}: {step(base + route, run_timeout_s)}")
            except StepFailed as failure:
                report.failures.append(f"{route} {name}: {failure}")
    return report


class OpenStream:
    """One run streaming in a background thread, for stopping a server while it is open.

    ``wait_started`` returns once the first event has arrived (the condition to stop on);
    ``finish`` waits for the stream to end and returns whatever it carried, however it ended.
    """

    def __init__(self, url: str, prompt: str, timeout_s: float) -> None:
        self.url, self.raw, self.error = url, b"", ""
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(run_input(prompt), timeout_s), daemon=True)
        self._thread.start()

    def _read(self, body: dict, timeout_s: float) -> None:
        try:
            with httpx.stream("POST", self.url, json=body, headers=HEADERS, timeout=timeout_s) as response:
                for chunk in response.iter_bytes():
                    self.raw += chunk
                    if b"data:" in self.raw:
                        self._started.set()
        except httpx.HTTPError as error:
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self._started.set()  # a stream that failed before its first event must not hang the waiter

    def wait_started(self, timeout_s: float) -> bool:
        return self._started.wait(timeout_s) and b"data:" in self.raw

    def finish(self, timeout_s: float) -> Events:
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise StepFailed(f"the stream was still open {timeout_s:g} s after the stop")
        return parse_sse(self.raw)


def ended_with_terminal_event(stream: OpenStream, timeout_s: float) -> str:
    """The stream must have ended with RUN_FINISHED or RUN_ERROR and pass the verifier."""
    events = stream.finish(timeout_s)
    last = events[-1] if events else {}
    if last.get("type") not in TERMINAL:
        cut = f" ({stream.error})" if stream.error else ""
        raise StepFailed(f"the stream was cut after {len(events)} events with no RUN_FINISHED or RUN_ERROR{cut}")
    require_valid(verify_events(events))
    code = f" {last['code']}" if last.get("code") else ""
    return f"ended with {last['type']}{code} after {len(events)} events"
