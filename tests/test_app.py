"""The app around the runtimes, over real HTTP: health, capabilities, errors, the request guard,
the plain-text surface of every route, keepalive, the token gate and CORS."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from importlib import metadata

import httpx
import pytest

from app.config import Settings
from app.factory import RUNTIMES
from runtimes.script import FEATURES
from tests.wire import live_server, post_run, run_input
from verifier import verify_events

ROUTES = [runtime.route for runtime in RUNTIMES]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(Settings(agui_script_delay_ms=2, agui_max_body_bytes=20_000)) as url:
        yield url


def test_ok_is_cheap_json(base: str) -> None:
    response = httpx.get(f"{base}/ok")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_capabilities_list_every_route_with_bridge_version_and_sample_prompts(base: str) -> None:
    listing = httpx.get(f"{base}/").json()
    assert [r["route"] for r in listing["runtimes"]] == ROUTES == ["/strands/agent", "/msaf/agent"]
    for runtime in listing["runtimes"]:
        assert runtime["bridge_version"] == metadata.version(runtime["bridge_package"])
        assert [f["sample_prompt"] for f in runtime["features"]] == [f.sample_prompt for f in FEATURES]
    assert listing["model"] == "scripted"


def test_unknown_route_is_404_json_and_wrong_method_is_405_json(base: str) -> None:
    missing = httpx.get(f"{base}/nope")
    assert missing.status_code == 404 and missing.json()["detail"]
    wrong = httpx.get(f"{base}/strands/agent")
    assert wrong.status_code == 405 and wrong.json()["detail"]


BAD_INPUT = [
    # (name, body bytes, content type, status, code, field)
    ("empty body", b"", "application/json", 400, "empty_body", None),
    ("invalid json", b"{not json", "application/json", 400, "invalid_json", None),
    ("json array", b"[1, 2]", "application/json", 422, "not_an_object", None),
    ("wrong content type", b'{"threadId": "t"}', "text/plain", 415, "unsupported_media_type", None),
    ("missing threadId", json.dumps({"runId": "r", "messages": []}).encode(), "application/json", 422,
     "invalid_field", "threadId"),
    ("wrong-typed runId", json.dumps({"threadId": "t", "runId": 5, "messages": []}).encode(), "application/json",
     422, "invalid_field", "runId"),
    ("messages not a list", json.dumps({"threadId": "t", "runId": "r", "messages": "hi"}).encode(),
     "application/json", 422, "invalid_field", "messages"),
    ("unknown role", json.dumps({"threadId": "t", "runId": "r", "messages": [
        {"id": "m", "role": "wizard", "content": "x"}]}).encode(), "application/json", 422, "invalid_field",
     "messages.0"),
    ("oversized body", json.dumps(run_input("x" * 30_000)).encode(), "application/json", 413, "body_too_large",
     None),
]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("name", "body", "content_type", "status", "code", "field"), BAD_INPUT,
                         ids=[row[0] for row in BAD_INPUT])
def test_bad_input_gets_a_clear_4xx(base: str, route: str, name: str, body: bytes, content_type: str,
                                    status: int, code: str, field: str | None) -> None:
    response = httpx.post(f"{base}{route}", content=body, headers={"content-type": content_type})
    assert response.status_code == status, response.text
    error = response.json()
    assert error["code"] == code and error["detail"]
    if field is not None:
        assert error["field"].startswith(field), error


@pytest.mark.parametrize("route", ROUTES)
def test_plain_message_streams_several_chunks_and_finishes(base: str, route: str) -> None:
    run = post_run(base, route, run_input("Hello there!"))
    assert run.status == 200
    assert verify_events(run.events) == []
    types = run.types()
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert types.count("TEXT_MESSAGE_CONTENT") >= 3
    assert "Hello there!" in run.text()


@pytest.mark.parametrize("route", ROUTES)
def test_optional_fields_may_be_omitted(base: str, route: str) -> None:
    minimal = {"threadId": "t-min", "runId": "r-min", "messages": [{"id": "m", "role": "user", "content": "hi"}]}
    run = post_run(base, route, minimal)
    assert run.status == 200 and run.terminal["type"] == "RUN_FINISHED"
    assert verify_events(run.events) == []


@pytest.mark.parametrize("route", ROUTES)
def test_one_summary_log_line_per_run_without_content(base: str, route: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="agui.run"):
        body = run_input("a secret sentence")
        post_run(base, route, body)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "agui.run"]
    mine = [line for line in lines if line["runId"] == body["runId"]]
    assert len(mine) == 1
    assert mine[0]["outcome"] == "success" and mine[0]["events"]["RUN_FINISHED"] == 1
    assert "secret" not in json.dumps(mine)


def test_keepalive_comments_on_silent_streams() -> None:
    slow = Settings(agui_script_delay_ms=300, agui_keepalive_s=0.1)
    with live_server(slow) as url:
        for route in ROUTES:
            run = post_run(url, route, run_input("Hello there!"))
            assert b": keepalive" in run.raw, route
            assert verify_events(run.events) == []


def test_token_gate_and_cors() -> None:
    gated = Settings(agui_script_delay_ms=0, agui_token="s3cret", agui_cors_origins=["http://app.example"])
    with live_server(gated) as url:
        assert httpx.get(f"{url}/ok").status_code == 200
        refused = httpx.get(f"{url}/")
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        assert httpx.get(f"{url}/", headers={"authorization": "Bearer wrong"}).status_code == 401
        listing = httpx.get(f"{url}/", headers={"authorization": "Bearer s3cret"})
        assert listing.status_code == 200 and "s3cret" not in listing.text
        for route in ROUTES:
            assert post_run(url, route, run_input("hi")).status == 401
            run = post_run(url, route, run_input("hi"), headers={"authorization": "Bearer s3cret"})
            assert run.terminal["type"] == "RUN_FINISHED"
        preflight = httpx.options(
            f"{url}/strands/agent",
            headers={"origin": "http://app.example", "access-control-request-method": "POST"},
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://app.example"
