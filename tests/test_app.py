"""The app around the runtimes, over real HTTP: health, capabilities, unknown routes and methods,
and the plain-text surface of every route. (The request guard's table is tests/test_bad_input.py;
keepalive, the token gate, CORS and the run log are tests/test_hardening_app.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.config import Settings
from app.registry import RUNTIMES
from runtimes.script import FEATURES
from tests.wire import ROUTES, live_server, post_run, run_input
from verifier import verify_events


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
    assert [r["route"] for r in listing["runtimes"]] == list(ROUTES)
    assert [r["name"] for r in listing["runtimes"]] == [runtime.name for runtime in RUNTIMES]
    for runtime, registered in zip(listing["runtimes"], RUNTIMES, strict=True):
        assert runtime["bridge_version"] == registered.version(runtime["bridge_package"])
        assert [f["sample_prompt"] for f in runtime["features"]] == [f.sample_prompt for f in FEATURES]
    assert listing["model"] == "scripted"


def test_unknown_route_is_404_json_and_wrong_method_is_405_json(base: str) -> None:
    missing = httpx.get(f"{base}/nope")
    assert missing.status_code == 404 and missing.json()["detail"]
    wrong = httpx.get(f"{base}{ROUTES[0]}")
    assert wrong.status_code == 405 and wrong.json()["detail"]


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
