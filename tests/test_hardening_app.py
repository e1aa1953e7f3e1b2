"""The app around the runtimes, reviewed against the hardening issue, over real HTTP/SSE:
the token gate (every route but /ok, constant-time, 401 JSON before the body is read, nothing
secret on /), CORS (configured origins; never a wildcard with credentials), keepalive comments
(on every SSE route, never on JSON answers, never after the terminal event) and the run log (one
line per run with the terminal outcome or RUN_ERROR code, and no content)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import httpx
import pytest

import app.security
from app.config import Settings
from runtimes.base import FINISHED
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, arun, live_server, open_stream, run_input, run_sync
from verifier import verify_events

TOKEN = "s3cret-token-value"
AUTH = {"authorization": f"Bearer {TOKEN}"}
ORIGIN = "https://app.example"


# --- token gate -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gated() -> Iterator[str]:
    settings = Settings(
        agui_script_delay_ms=1,
        agui_token=TOKEN,
        agui_cors_origins=[ORIGIN],
        agui_model="openai",  # never contacted by these tests: only to prove / does not show it
        openai_api_key="sk-very-secret-key",
        openai_base_url="http://secret-model-host.internal/v1",
    )
    with live_server(settings) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("GET", "/no-such-route"),
        *(("POST", route) for route in ROUTES),
        ("OPTIONS", ROUTES[0]),
        ("GET", ROUTES[0]),
    ],
)
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN, f"Bearer  {TOKEN}", "Bearer"],
    ids=["none", "wrong", "longer", "basic-scheme", "no-scheme", "extra-space", "empty-token"],
)
def test_every_route_but_ok_needs_the_token(gated: str, method: str, path: str, authorization: str | None) -> None:
    headers = {"content-type": "application/json"} | ({"authorization": authorization} if authorization else {})
    response = httpx.request(method, f"{gated}{path}", headers=headers, content=b"{not json", timeout=10)
    assert response.status_code == 401, (method, path, response.status_code)
    assert response.json() == {"detail": "Missing or wrong bearer token.", "code": "unauthorized"}
    assert response.headers["www-authenticate"] == "Bearer"
    assert TOKEN not in response.text


def test_ok_needs_no_token_and_the_right_token_opens_everything(gated: str) -> None:
    assert httpx.get(f"{gated}/ok", timeout=10).json() == {"ok": True}
    for scheme in ("Bearer", "bearer", "BEARER"):  # the scheme is case-insensitive
        assert httpx.get(f"{gated}/", headers={"authorization": f"{scheme} {TOKEN}"}, timeout=10).status_code == 200
    for route in ROUTES:  # with the token, bad input is the guard's business again
        refused = httpx.post(
            f"{gated}{route}", headers={**AUTH, "content-type": "application/json"}, content=b"{not json", timeout=10
        )
        assert refused.status_code == 400 and refused.json()["code"] == "invalid_json"


def test_capabilities_and_schema_show_no_secret(gated: str) -> None:
    for path in ("/", "/openapi.json"):
        text = httpx.get(f"{gated}{path}", headers=AUTH, timeout=10).text
        for secret in (TOKEN, "sk-very-secret-key", "secret-model-host"):
            assert secret not in text, (path, secret)


def test_the_token_is_compared_in_constant_time(gated: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = app.security.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(app.security.hmac, "compare_digest", spy)
    assert httpx.get(f"{gated}/", headers={"authorization": "Bearer guess"}, timeout=10).status_code == 401
    assert compared == [(b"guess", TOKEN.encode())]


# --- CORS -----------------------------------------------------------------------------------


def preflight(base: str, origin: str) -> httpx.Response:
    headers = {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type",
    }
    return httpx.options(f"{base}{ROUTES[0]}", headers=headers, timeout=10)


def test_cors_allows_the_configured_origin_with_credentials_and_nothing_else(gated: str) -> None:
    allowed = preflight(gated, ORIGIN)
    assert allowed.status_code == 200  # answered before the token gate: preflights carry no credentials
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    assert allowed.headers["access-control-allow-credentials"] == "true"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    other = preflight(gated, "https://evil.example")
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    # The real responses carry the header too, so a browser may read the stream and a 401.
    for headers in (AUTH, {}):
        response = httpx.post(
            f"{gated}{ROUTES[-1]}", json=run_input("hi"), headers={**headers, "origin": ORIGIN}, timeout=30
        )
        assert response.headers["access-control-allow-origin"] == ORIGIN, response.status_code


def test_a_wildcard_origin_never_comes_with_credentials() -> None:
    with live_server(Settings(agui_script_delay_ms=1, agui_cors_origins=["https://a.example", "*"])) as url:
        answer = preflight(url, "https://anything.example")
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in answer.headers
        simple = httpx.get(f"{url}/ok", headers={"origin": "https://anything.example"}, timeout=10)
        assert simple.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in simple.headers


def test_no_cors_headers_unless_configured() -> None:
    with live_server(Settings(agui_script_delay_ms=1)) as url:
        response = httpx.get(f"{url}/ok", headers={"origin": ORIGIN}, timeout=10)
        assert not [name for name in response.headers if name.startswith("access-control-")]


# --- keepalive ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slow() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=250, agui_keepalive_s=0.1)) as url:
        yield url


@pytest.mark.parametrize("route", ROUTES)
def test_keepalive_comments_fill_silences_and_stop_at_the_terminal_event(slow: str, route: str) -> None:
    run = run_sync(slow, route, run_input("Hello there!"), deadline_s=60)
    assert verify_events(run.events) == [] and run.terminal["type"] == "RUN_FINISHED"
    frames = [frame for frame in run.raw.replace(b"\r\n", b"\n").split(b"\n\n") if frame.strip()]
    assert frames.count(b": keepalive") >= 3
    assert b"\ndata:" in frames[-1] and b'"RUN_FINISHED"' in frames[-1], "nothing after the terminal event"


@pytest.mark.parametrize("route", ROUTES)
def test_json_answers_on_a_stream_route_carry_no_keepalive(slow: str, route: str) -> None:
    response = httpx.post(f"{slow}{route}", content=b"[1]", headers={"content-type": "application/json"}, timeout=10)
    assert response.status_code == 422 and response.json()["code"] == "not_an_object"


# --- run log ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=20)) as url:
        yield url


def log_lines(caplog: pytest.LogCaptureFixture) -> list[dict]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "agui.run"]


SECRET = "zebra-violet-4471"


async def _log_scenarios(base: str, route: str) -> dict[str, str]:
    """Runs ending every way; returns runId -> expected outcome."""
    expected: dict[str, str] = {}
    for message in (f"Hello {SECRET}", f"What's the weather in {SECRET}?", f"Research {SECRET}"):
        body = run_input(message, state={"note": SECRET})
        run = await arun(base, route, body)
        assert run.terminal["type"] == "RUN_FINISHED"
        expected[body["runId"]] = "success"
    body = run_input(f"delete {SECRET}.txt")
    assert (await arun(base, route, body)).interrupts()
    expected[body["runId"]] = "interrupt"
    body = run_input(messages=[], resume=[{"interruptId": "nope", "status": "resolved", "payload": {"approved": True}}])
    code = (await arun(base, route, body)).terminal["code"]
    expected[body["runId"]] = f"error:{code}"
    [busy_code] = RUNTIME_BY_ROUTE[route].known.answers["a second run on a thread while its first run is in flight"]
    if busy_code != FINISHED:  # a runtime that refuses a second run on a busy thread
        busy = run_input("Research the history of Lisbon")
        async with open_stream(base, route, busy) as events:
            await anext(events)
            second = run_input("Hello", thread_id=busy["threadId"])
            assert (await arun(base, route, second)).terminal["code"] == busy_code
            expected[second["runId"]] = f"error:{busy_code}"
            _ = [event async for event in events]
        expected[busy["runId"]] = "success"
    return expected


@pytest.mark.parametrize("route", ROUTES)
def test_one_log_line_per_run_with_its_outcome_or_error_code_and_no_content(
    base: str, route: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agui")
    expected = asyncio.run(asyncio.wait_for(_log_scenarios(base, route), timeout=120))
    lines = log_lines(caplog)
    for run_id, outcome in expected.items():
        mine = [line for line in lines if line["runId"] == run_id]
        assert len(mine) == 1, (run_id, mine)
        [line] = mine
        assert line["outcome"] == outcome, line
        assert line["runtime"] == route.split("/")[1] and line["threadId"] and line["durationMs"] >= 0
        assert sum(line["events"].values()) >= 2 and ("RUN_ERROR" in line["events"]) == outcome.startswith("error")
        assert set(line) == {"event", "runtime", "threadId", "runId", "outcome", "durationMs", "events"}
    everything = "\n".join(record.getMessage() for record in caplog.records)
    assert SECRET not in everything, "message content reached the logs"
