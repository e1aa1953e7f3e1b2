"""A model that hangs or fails ends the run with RUN_ERROR and a MODEL_* code, on every route.

Every route runs on a real OpenAI-compatible endpoint (``tests/fake_openai.py``: real HTTP, the
runtimes' real client libraries) that misbehaves on purpose: it never answers, stalls mid-stream,
answers 500, drops the connection, sends an error inside its stream, refuses the key, or is not
there at all; or it answers the parent but fails the specialist of a delegation. Every stream
must pass the verifier and end with a terminal event within a few seconds (every client call has
a hard deadline), the run log must carry the code, and the server must be left with no task of
the failed run.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import pytest

from app.config import Settings
from deploy.serve import BRIDGE_LOGGERS, ServeConfig, log_config
from tests.fake_openai import API_KEY, real_model_settings
from tests.wire import ROUTES, free_port, run_input, run_sync, serve
from verifier import verify_events

TIMEOUT_S = 1.0
"""AGUI_MODEL_TIMEOUT_S for these tests."""


@dataclass(frozen=True)
class Case:
    name: str
    model: str
    code: str
    message: str = "Hello there!"
    overrides: tuple[tuple[str, object], ...] = ()
    specialist: bool = False  # the specialist's model is what fails: SUBAGENT_ERROR first
    within_s: float = 5.0  # the stream's terminal event arrives within this (timeout + margin)


CASES = [
    Case("never answers", "fake-hang", "MODEL_TIMEOUT"),
    Case("stalls mid-stream", "fake-stall", "MODEL_TIMEOUT"),
    Case("HTTP 500", "fake-500", "MODEL_ERROR"),
    Case("drops the connection mid-stream", "fake-drop", "MODEL_ERROR"),
    Case("sends an error inside the stream", "fake-inband-error", "MODEL_ERROR"),
    Case("answers garbage", "fake-garbage", "MODEL_ERROR"),
    # Its subject is the call budget, not the timeout: dozens of calls, each given time enough on a busy machine.
    Case(
        "keeps calling tools",
        "fake-loop",
        "TOO_MANY_MODEL_CALLS",
        "What's the weather in Oslo?",
        overrides=(("agui_model_timeout_s", 10.0),),
        within_s=60,
    ),
    Case("wrong key", "scripted", "MODEL_AUTH_ERROR", overrides=(("openai_api_key", "wrong-key"),)),
    Case("no key", "scripted", "MODEL_AUTH_ERROR", overrides=(("openai_api_key", None),)),
    Case("unreachable endpoint", "scripted", "MODEL_UNREACHABLE", overrides=(("openai_base_url", "UNREACHABLE"),)),
    Case("specialist never answers", "fake-specialist-hang", "MODEL_TIMEOUT", "Research Lisbon", specialist=True),
    Case("specialist gets HTTP 500", "fake-specialist-500", "MODEL_ERROR", "Research Lisbon", specialist=True),
    Case("specialist gets garbage", "fake-specialist-garbage", "MODEL_ERROR", "Research Lisbon", specialist=True),
]


def settings_for(endpoint: str, case: Case) -> Settings:
    overrides = {
        key: f"http://127.0.0.1:{free_port()}/v1" if value == "UNREACHABLE" else value for key, value in case.overrides
    }
    # keepalive comments must not keep a failed run's stream open
    return real_model_settings(
        endpoint, case.model, **{"agui_model_timeout_s": TIMEOUT_S, "agui_keepalive_s": 0.2, **overrides}
    )


def run_log(caplog: pytest.LogCaptureFixture, run_id: str) -> list[dict]:
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "agui.run"]
    return [line for line in lines if line["runId"] == run_id]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_failing_model_ends_the_run_with_a_model_code(
    endpoint: str, case: Case, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agui.run")
    with serve(settings_for(endpoint, case)) as server:
        idle = len(server.tasks())
        for route in ROUTES:
            body = run_input(case.message)
            started = time.monotonic()
            run = run_sync(server.base, route, body, deadline_s=30)
            elapsed = time.monotonic() - started
            assert run.status == 200, (route, run.raw)
            assert verify_events(run.events) == [], (route, run.types())
            assert run.types()[0] == "RUN_STARTED"
            assert run.terminal["type"] == "RUN_ERROR", (route, run.terminal)
            assert run.terminal["code"] == case.code, (route, run.terminal)
            message = run.terminal["message"]
            assert message and "<class" not in message and API_KEY not in message and "wrong-key" not in message
            # named by us; only a provider error also quotes what the provider said
            assert "Error code:" not in message or case.code == "MODEL_ERROR"
            assert elapsed < case.within_s, f"{route}: the terminal event took {elapsed:.1f} s"
            print(f"{route} {case.name}: {case.code} after {elapsed:.2f} s")
            if case.specialist:
                [started_event] = run.of_type("SUBAGENT_STARTED")
                [error] = run.of_type("SUBAGENT_ERROR")
                assert error["subagentRunId"] == started_event["subagentRunId"]
                assert error["code"] == case.code, (route, error)
                assert run.types().index("SUBAGENT_ERROR") < len(run.events) - 1
            [line] = run_log(caplog, body["runId"])
            assert line["outcome"] == f"error:{case.code}" and line["runtime"] == route.split("/")[1]
            # Nothing of the failed run is left running on the server (the model call included).
            waited, left = server.settle(idle, within_s=3)
            assert len(left) <= idle, f"{route}: {len(left) - idle} task(s) still running {waited:.1f} s later"


def test_a_delegation_on_a_real_model_succeeds(endpoint: str) -> None:
    """The control for the specialist rows: the same delegation, nothing failing."""
    case = Case("delegates", "scripted", "", "Research Lisbon")
    with serve(settings_for(endpoint, case)) as server:
        for route in ROUTES:
            run = run_sync(server.base, route, run_input(case.message), deadline_s=30)
            assert verify_events(run.events) == [] and run.terminal["type"] == "RUN_FINISHED", (route, run.types())
            [started] = run.of_type("SUBAGENT_STARTED")
            [finished] = run.of_type("SUBAGENT_FINISHED")
            assert finished["subagentRunId"] == started["subagentRunId"]
            assert "archive record" in run.text(subagent=True)


def test_a_failed_run_is_one_log_line_with_its_code(endpoint: str, caplog: pytest.LogCaptureFixture) -> None:
    """Under the server's own log settings (``deploy.serve``, below debug), a model failure is one
    WARNING line, the run's, carrying the code: no upstream tracebacks, on any route."""
    served = log_config(ServeConfig())["loggers"]
    quiet = {name: logging.getLogger(name) for name in BRIDGE_LOGGERS}
    before = {name: logger.level for name, logger in quiet.items()}
    caplog.set_level(logging.DEBUG)
    for name, logger in quiet.items():
        logger.setLevel(served[name]["level"])
    try:
        case = Case("specialist gets HTTP 500", "fake-specialist-500", "MODEL_ERROR", "Research Lisbon")
        with serve(settings_for(endpoint, case)) as server:
            for route in ROUTES:
                body = run_input(case.message)
                assert run_sync(server.base, route, body, deadline_s=30).terminal["code"] == "MODEL_ERROR"
                loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
                assert [(r.name, bool(r.exc_info)) for r in loud] == [("agui.run", False)], [
                    r.getMessage() for r in loud
                ]
                assert json.loads(loud[0].getMessage())["outcome"] == "error:MODEL_ERROR"
                caplog.clear()
    finally:
        for name, logger in quiet.items():
            logger.setLevel(before[name])
