"""The published @ag-ui/client judges the same streams as the Python verifier, and our live routes.

(a) The verifier corpus goes through the client's full runAgent pipeline (schema enforcement,
    verifyEvents, state application); both verdicts must match, except where a case records why
    the client cannot see the problem. Those cases assert the disagreement itself, so the day the
    client catches up the test fails and the note gets deleted.
(b) Live routes are driven by the client's own HttpAgent, interrupt -> resume included, and every
    response must pass both verifiers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.npm_client import live, rejections, replay_many, requires_harness
from tests.verifier_corpus import CASES, Case
from tests.wire import ROUTES, RUNTIME_BY_ROUTE
from verifier import ThreadVerifier, verify_thread

pytestmark = requires_harness

CASE_BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(scope="module")
def corpus_reports() -> dict[str, dict]:
    """The client's report on every corpus thread, from one Node process."""
    return dict(zip(CASE_BY_NAME, replay_many([case.runs for case in CASES]), strict=True))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_both_verifiers_judge_the_corpus_alike(case: Case, corpus_reports: dict[str, dict]) -> None:
    python = verify_thread(case.runs)
    npm = rejections(corpus_reports[case.name])
    if case.npm_differs is None:
        assert bool(python) == bool(npm), f"python says {python}\nnpm client says {npm}"
    else:
        # Known disagreement, explained in the case: the Python verifier is stricter here.
        assert python and not npm, f"no longer differs ({case.npm_differs}); python {python}, npm {npm}"


def test_pinned_client_verifies_subagent_lifecycle(corpus_reports: dict[str, dict]) -> None:
    """@ag-ui/client 1.0.0's own verifyEvents knows SUBAGENT_* (older clients reject the events outright)."""
    verdicts = {
        name: corpus_reports[name]["runs"][0]["verifyEvents"]
        for name in ("duplicate-subagent-started", "unclosed-subagent-at-run-finished", "subagent-bad-outcome")
    }
    assert "is already active" in verdicts["duplicate-subagent-started"]
    assert "while subagents are still active: sa" in verdicts["unclosed-subagent-at-run-finished"]
    assert "outcome type 'interrupt'" in verdicts["subagent-bad-outcome"]


def test_schema_enforcement_only_warns_before_verification(corpus_reports: dict[str, dict]) -> None:
    """Why logged refusals count: in runAgent the client strips an unknown outcome (with a warning)
    before verifyEvents could refuse it, and a bad patch is logged, not raised."""
    stripped = corpus_reports["subagent-bad-outcome"]["runs"][0]
    assert stripped["error"] is None
    assert any("Removed unrecognised material at '/outcome'" in warning for warning in stripped["warnings"])
    patched = corpus_reports["bad-json-patch"]["runs"][0]
    assert patched["error"] is None and patched["verifyEvents"] is None
    assert any("Failed to apply state patch" in warning for warning in patched["warnings"])


def test_client_state_application_matches_ours(corpus_reports: dict[str, dict]) -> None:
    case = CASE_BY_NAME["state-delta-applies"]
    verifier = ThreadVerifier()
    assert verifier.verify_stream(case.runs[0]) == []
    assert corpus_reports[case.name]["state"] == verifier.state == {"todo": ["buy oat milk"]}


def test_client_sends_resume_at_top_level(corpus_reports: dict[str, dict]) -> None:
    """The published client answers an interrupt with RunAgentInput.resume (built by buildResumeArray)."""
    report = corpus_reports["suspended-subagent-continues-on-resume"]
    first, second = report["runs"]
    assert "resume" not in first["input"]
    assert second["input"]["resume"] == [{"interruptId": "i1", "status": "resolved"}]
    assert second["input"]["threadId"] == first["input"]["threadId"]
    assert report["ok"] and second["pendingInterrupts"] == []


# -- live routes ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    from tests.wire import live_server  # imports the app: only the live tests need it

    with live_server() as url:
        yield url


def both_verdicts(report: dict) -> tuple[list[str], list[str]]:
    """(python problems, npm client refusals) for a live thread the harness drove."""
    first_input = report["runs"][0]["input"]
    verifier = ThreadVerifier(state=first_input["state"], messages=first_input["messages"])
    python = [f"run {n}: {p}" for n, run in enumerate(report["runs"]) for p in verifier.verify_stream(run["events"])]
    return python, rejections(report)


@pytest.mark.parametrize("route", ROUTES)
def test_live_text(base_url: str, route: str) -> None:
    report = live(base_url + route, [{"message": "Hello there!"}])
    assert both_verdicts(report) == ([], [])
    assert report["ok"]
    reply = report["messages"][-1]
    assert reply["role"] == "assistant" and reply["content"]


@pytest.mark.parametrize("route", ROUTES)
def test_live_approval_interrupt_then_resume(base_url: str, route: str) -> None:
    report = live(
        base_url + route,
        [{"message": "delete notes.txt"}, {"resume": "resolved", "payload": {"approved": True}}],
    )
    assert both_verdicts(report) == ([], [])
    interrupted, resumed = report["runs"]
    outcome = interrupted["events"][-1].get("outcome") or {}
    assert outcome.get("type") == "interrupt", interrupted["events"][-1]
    asked = [interrupt["id"] for interrupt in outcome["interrupts"]]
    assert [entry["interruptId"] for entry in resumed["input"]["resume"]] == asked
    assert resumed["events"][-1]["type"] == "RUN_FINISHED" and resumed["pendingInterrupts"] == []


@pytest.mark.parametrize("route", ROUTES)
def test_live_subagent(base_url: str, route: str) -> None:
    report = live(base_url + route, [{"message": "Research the history of Lisbon"}])
    assert both_verdicts(report) == ([], [])
    types = [event["type"] for event in report["runs"][0]["events"]]
    assert "SUBAGENT_STARTED" in types and "SUBAGENT_FINISHED" in types


@pytest.mark.parametrize("route", ROUTES)
def test_live_frontend_tool_round_trip(base_url: str, route: str) -> None:
    """The client declares a tool, the agent calls it, the host answers it on the next run."""
    tool = {
        "name": "change_background",
        "description": "Change the page background",
        "parameters": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
    }
    turns = [{"message": "Please call change_background"}, {"answerToolCalls": "background changed"}]
    report = live(base_url + route, turns, tools=[tool])
    assert both_verdicts(report) == ([], [])
    called, answered = report["runs"]
    assert any(e.get("toolCallName") == "change_background" for e in called["events"])
    assert [m["role"] for m in answered["input"]["messages"]] == ["user", "assistant", "tool"]
    assert "background changed" in report["messages"][-1]["content"]


# The remaining surfaces, driven by the published client on every route. The client applies the
# state itself (snapshots and JSON Patch deltas), so its final state is what a UI would show.


@pytest.mark.parametrize("route", ROUTES)
def test_live_backend_tool(base_url: str, route: str) -> None:
    report = live(base_url + route, [{"message": "What's the weather in Tokyo?"}])
    assert both_verdicts(report) == ([], [])
    events = report["runs"][0]["events"]
    assert any(e.get("toolCallName") == "get_weather" for e in events)
    assert "Tokyo" in report["messages"][-1]["content"]


@pytest.mark.parametrize("route", ROUTES)
def test_live_shared_state_keeps_sibling_keys(base_url: str, route: str) -> None:
    report = live(base_url + route, [{"message": "Make me a recipe for pancakes"}], state={"keep": "me"})
    assert both_verdicts(report) == ([], [])
    assert report["state"]["keep"] == "me"
    assert report["state"]["recipe"]["title"] == "Pancakes"


@pytest.mark.parametrize("route", ROUTES)
def test_live_predictive_state_ends_with_the_document(base_url: str, route: str) -> None:
    report = live(base_url + route, [{"message": "Write a story about dragons"}])
    assert both_verdicts(report) == ([], [])
    assert "dragons" in report["state"]["document"]


@pytest.mark.parametrize("route", ROUTES)
def test_live_parallel_subagents(base_url: str, route: str) -> None:
    report = live(base_url + route, [{"message": "Compare Lisbon and Porto"}])
    assert both_verdicts(report) == ([], [])
    started = [e for e in report["runs"][0]["events"] if e["type"] == "SUBAGENT_STARTED"]
    assert len({e["subagentRunId"] for e in started}) == 2


@pytest.mark.parametrize("route", ROUTES)
def test_live_approval_inside_a_subagent(base_url: str, route: str) -> None:
    """The specialist asks for approval: its subagent ends suspended and continues on the resume,
    or, where the runtime cannot carry the approval out of the specialist (a declared gap), it ends
    with SUBAGENT_ERROR and the run still finishes."""
    ask = {"message": "Research old logs and delete logs.txt"}
    approve = {"resume": "resolved", "payload": {"approved": True}}
    if RUNTIME_BY_ROUTE[route].known.gap("subagent suspended"):
        report = live(base_url + route, [ask])
        assert both_verdicts(report) == ([], [])
        events = report["runs"][0]["events"]
        assert [e["type"] for e in events if e["type"].startswith("SUBAGENT_")][-1] == "SUBAGENT_ERROR"
        assert events[-1]["type"] == "RUN_FINISHED"
        return
    report = live(base_url + route, [ask, approve])
    assert both_verdicts(report) == ([], [])
    interrupted, resumed = (run["events"] for run in report["runs"])
    (suspended,) = [e for e in interrupted if e["type"] == "SUBAGENT_FINISHED"]
    assert suspended["outcome"]["type"] == "suspended"
    # The approval names the specialist's tool call by the id the client rendered it under.
    [interrupt] = interrupted[-1]["outcome"]["interrupts"]
    rendered = {e["toolCallId"]: e.get("subagentRunId") for e in interrupted if e["type"] == "TOOL_CALL_START"}
    assert rendered.get(interrupt["toolCallId"]) == interrupt["subagentRunId"] == suspended["subagentRunId"]
    continued = [e["subagentRunId"] for e in resumed if e["type"] == "SUBAGENT_STARTED"]
    assert continued == [suspended["subagentRunId"]]
