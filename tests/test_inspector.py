"""The inspector page, served by the real app and used in a real browser.

Debian's Chromium (``/usr/bin/chromium``, installed by ``make browser``) driven by Playwright with
``executable_path``: Playwright never downloads a browser here. Every test runs against every
mounted runtime (``app.registry.RUNTIMES``), so a route added later is covered with no change.
What a test asserts comes from the protocol and from the stream the page received (its sessions
record every event the published client accepted), never from which runtime it is: where runtimes
legitimately differ, the compare view shows it and its test checks that it does.

Screenshots land in ``test-artifacts/inspector/`` (git-ignored); ``make screenshots`` copies the
``readme-*`` ones to ``docs/screenshots/`` for the README.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.registry import RUNTIMES
from runtimes.script import FEATURES
from tests.wire import live_server
from verifier import ThreadVerifier, parse_sse, verify_events

CHROMIUM = Path("/usr/bin/chromium")
# No GPU, no sandbox (root), and none of Chromium's own network chatter: this machine reaches no
# host but the package registries, and the tests need none.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).parent.parent / "test-artifacts" / "inspector"
ROUTES = [runtime.route for runtime in RUNTIMES]
PROMPTS = {feature.name: feature.sample_prompt for feature in FEATURES}
RUN_TIMEOUT_MS = 60_000  # one run on a busy two-core machine, with room to spare

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium: run `make browser`")

# The page's own record of the current session, in JSON: runs (input, outcome, interrupts, error)
# and every event the client accepted, with the run it belongs to.
RECORD = """() => {
  const record = (session) => ({
    route: session.runtime.route,
    runs: session.runs.map((r) => ({ n: r.n, input: r.input, outcome: r.outcome, interrupts: r.interrupts,
      error: r.error ? String(r.error.message ?? r.error) : null, done: !!r.done })),
    events: session.events.map((e) => ({ run: e.run, event: e.event })),
  });
  return { session: record(window.inspector.session),
           columns: window.inspector.compare.columns.map((c) => record(c.session)) };
}"""
IDLE = "n => !window.inspector.session.busy && window.inspector.session.runs.filter((r) => r.done).length >= n"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    # 10 ms between chunks: runs stay short, yet long enough to see work in progress.
    with live_server(Settings(agui_script_delay_ms=10)) as url:
        yield url


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(chromium: object, url: str, problems: list[str], **context: object) -> object:
    """A fresh browser context on ``url``; console errors and uncaught exceptions go to ``problems``."""
    page = chromium.new_context(viewport={"width": 1280, "height": 900}, **context).new_page()
    page.set_default_timeout(RUN_TIMEOUT_MS)
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    page.goto(url)
    return page


@pytest.fixture
def page(chromium: object, base: str, request: pytest.FixtureRequest) -> Iterator[object]:
    """The page on ``GET /``, ready; at the end a screenshot, and no console errors allowed."""
    problems: list[str] = []
    page = open_page(chromium, f"{base}/", problems)
    page.wait_for_function("!!window.inspector?.session")
    yield page
    shot(page, request.node.name)
    page.context.close()
    assert problems == [], f"console errors: {problems}"


def shot(page: object, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
    page.screenshot(path=str(ARTIFACTS / f"{safe}.png"), full_page=full_page)


def on_runtime(page: object, route: str) -> None:
    page.select_option("#runtime", route)
    page.wait_for_function("route => window.inspector.session.runtime.route === route", arg=route)


def chip(page: object, feature: str, *, within: str = "#chips") -> None:
    page.locator(within).get_by_role("button", name=PROMPTS[feature], exact=True).click()


def type_message(page: object, text: str) -> None:
    page.fill("#message", text)
    page.press("#message", "Enter")


def wait_runs(page: object, runs: int) -> dict:
    """Waits until ``runs`` runs are done and nothing is running; returns the page's record."""
    page.wait_for_function(IDLE, arg=runs)
    return page.evaluate(RECORD)["session"]


def run_events(record: dict, run: int) -> list[dict]:
    return [entry["event"] for entry in record["events"] if entry["run"] == run]


def assert_clean(record: dict) -> None:
    """Every run ended without a client error, and the Python verifier accepts the thread's streams."""
    first = record["runs"][0]["input"]
    thread = ThreadVerifier(state=first["state"], messages=first["messages"])
    for run in record["runs"]:
        assert run["error"] is None, run["error"]
        assert thread.verify_stream(run_events(record, run["n"])) == [], run["n"]


# --- served by the app ------------------------------------------------------------------------


def test_browsers_get_the_page_and_api_clients_keep_the_json(base: str) -> None:
    browser_accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    html = httpx.get(f"{base}/", headers={"accept": browser_accept})
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert "inspector/main.js" in html.text and "Accept" in html.headers["vary"]
    for accept in (None, "*/*", "application/json", "text/html;q=0.5, application/json"):
        response = httpx.get(f"{base}/", headers={"accept": accept} if accept else {})
        assert [r["route"] for r in response.json()["runtimes"]] == ROUTES, accept
    assert httpx.get(f"{base}/inspector/vendor/ag-ui-client.js").status_code == 200
    assert httpx.get(f"{base}/inspector/matrix.md").text.startswith("# Runtime matrix")
    assert httpx.get(f"{base}/inspector/../app/config.py").status_code == 404


# --- every surface, every runtime ---------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("feature", list(PROMPTS))
def test_every_sample_prompt_renders_what_the_stream_carried(page: object, route: str, feature: str) -> None:
    on_runtime(page, route)
    chip(page, feature)
    record = wait_runs(page, 1)
    assert_clean(record)
    events = [entry["event"] for entry in record["events"]]
    assert page.locator("#log .bar span").get_attribute("data-total") == str(len(events))
    tool_calls = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"}
    subagents = {e["subagentRunId"] for e in events if e["type"] == "SUBAGENT_STARTED"}
    assert page.locator(".card.tool").count() == len(tool_calls)
    assert page.locator(".card.subagent").count() == len(subagents)
    assert page.locator(".card.approval").count() == len(record["runs"][-1]["interrupts"])
    texts = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            texts[event["messageId"]] = texts.get(event["messageId"], "") + event["delta"]
    for message_id, text in texts.items():
        shown = page.locator(f'[data-message-id="{message_id}"]').inner_text()
        assert " ".join(text.split()) in " ".join(shown.split())


DECISIONS = {
    "Approve": {"status": "resolved", "payload": {"approved": True}},
    "Reject": {"status": "resolved", "payload": {"approved": False}},
    "Cancel": {"status": "cancelled"},
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("decision", list(DECISIONS))
def test_an_approval_card_resumes_the_thread(page: object, route: str, decision: str) -> None:
    on_runtime(page, route)
    chip(page, "approval")
    (interrupt,) = wait_runs(page, 1)["runs"][0]["interrupts"]
    page.locator(".card.approval").get_by_role("button", name=decision).click()
    record = wait_runs(page, 2)
    assert_clean(record)
    resumed = record["runs"][1]
    assert resumed["input"]["resume"] == [{"interruptId": interrupt["id"], **DECISIONS[decision]}]
    assert resumed["input"]["threadId"] == record["runs"][0]["input"]["threadId"]
    assert resumed["outcome"] == "success"
    assert page.locator(".card.approval").get_attribute("data-decision") in ("approved", "rejected", "cancelled")


@pytest.mark.parametrize("route", ROUTES)
def test_parallel_approvals_are_answered_together(page: object, route: str) -> None:
    on_runtime(page, route)
    type_message(page, "delete a.txt and b.txt")
    interrupts = wait_runs(page, 1)["runs"][0]["interrupts"]
    assert len(interrupts) == 2 and page.locator(".card.approval").count() == 2
    page.locator(".card.approval").nth(0).get_by_role("button", name="Approve").click()
    assert "answer the other approvals" in page.locator(".card.approval").nth(0).inner_text()
    if route == ROUTES[0]:
        shot(page, "readme-approval")
    assert len(page.evaluate(RECORD)["session"]["runs"]) == 1  # nothing sent until both are answered
    page.locator(".card.approval").nth(1).get_by_role("button", name="Approve").click()
    record = wait_runs(page, 2)
    assert_clean(record)
    resume = record["runs"][1]["input"]["resume"]
    assert [entry["interruptId"] for entry in resume] == [interrupt["id"] for interrupt in interrupts]
    assert all(entry["payload"] == {"approved": True} for entry in resume)


@pytest.mark.parametrize("route", ROUTES)
def test_parallel_subagents_appear_as_cards_before_the_run_finishes(page: object, route: str) -> None:
    on_runtime(page, route)
    chip(page, "parallel_subagents")
    page.wait_for_function(
        "document.querySelectorAll('.card.tool .card.subagent').length === 2 && window.inspector.session.busy",
        polling="raf",
    )
    record = wait_runs(page, 1)
    assert_clean(record)
    cards = page.locator(".card.subagent")
    for index in range(2):
        card = cards.nth(index)
        assert card.get_attribute("data-status") == "finished"
        assert card.locator(".card.tool").count() >= 1 and card.locator(".message").count() >= 1
    if route == ROUTES[0]:
        shot(page, "readme-inspect")


@pytest.mark.parametrize("route", ROUTES)
def test_an_approval_inside_a_subagent_shows_what_the_stream_says(page: object, route: str) -> None:
    """Suspended (then resumed on approval) or ended with SUBAGENT_ERROR: the card follows the stream."""
    on_runtime(page, route)
    chip(page, "subagent_approval")
    record = wait_runs(page, 1)
    assert_clean(record)
    events = run_events(record, 1)
    (started,) = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    card = page.locator(f'[data-subagent-run-id="{started["subagentRunId"]}"]')
    (ended,) = [e for e in events if e["type"] in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR")]
    if ended["type"] == "SUBAGENT_ERROR":
        assert card.get_attribute("data-status") == "error"
        assert ended["message"] in card.inner_text()
        return
    assert ended["outcome"]["type"] == "suspended"
    assert card.get_attribute("data-status") == "suspended"
    card.locator(".card.approval").get_by_role("button", name="Approve").click()
    assert_clean(wait_runs(page, 2))
    assert card.get_attribute("data-status") == "finished"


@pytest.mark.parametrize("route", ROUTES)
def test_state_panel_shows_the_client_state_and_the_document_while_it_streams(page: object, route: str) -> None:
    on_runtime(page, route)
    page.evaluate("""() => {
      window.documentsSeen = [];
      new MutationObserver(() => {
        const text = document.querySelector('#state pre').textContent;
        try { window.documentsSeen.push(JSON.parse(text).document); } catch {}
      }).observe(document.querySelector('#state pre'), { childList: true, characterData: true, subtree: true });
    }""")
    chip(page, "predictive_state")
    wait_runs(page, 1)
    chip(page, "shared_state")
    record = wait_runs(page, 2)
    assert_clean(record)
    panel = page.evaluate("JSON.parse(document.querySelector('#state pre').textContent)")
    assert panel == page.evaluate("window.inspector.session.agent.state")
    assert {"document", "recipe"} <= set(panel), "a later state surface erased a sibling key"
    seen = [d for d in page.evaluate("window.documentsSeen") if isinstance(d, str)]
    partial = [d for d in seen if d and d != panel["document"] and panel["document"].startswith(d)]
    assert partial, f"the document never showed while streaming: {seen}"


@pytest.mark.parametrize("route", ROUTES)
def test_the_frontend_tool_changes_the_background_and_answers_the_call(page: object, route: str) -> None:
    on_runtime(page, route)
    before = page.evaluate("getComputedStyle(document.body).backgroundColor")
    chip(page, "frontend_tool")
    record = wait_runs(page, 2)
    assert_clean(record)
    (call,) = [e for e in run_events(record, 1) if e["type"] == "TOOL_CALL_START"]
    assert call["toolCallName"] == "change_background"
    page.wait_for_function("b => getComputedStyle(document.body).backgroundColor !== b", arg=before)
    answers = [m for m in record["runs"][1]["input"]["messages"] if m["role"] == "tool"]
    assert [m["toolCallId"] for m in answers] == [call["toolCallId"]]
    assert record["runs"][1]["outcome"] == "success"


@pytest.mark.parametrize("route", ROUTES)
def test_older_client_mode_asks_for_no_subagent_events(page: object, route: str) -> None:
    on_runtime(page, route)
    page.get_by_label("Older client").check()
    chip(page, "subagent")
    record = wait_runs(page, 1)
    assert_clean(record)
    assert record["runs"][0]["input"]["forwardedProps"] == {"subagentEvents": False}
    events = run_events(record, 1)
    assert not [e for e in events if e["type"].startswith("SUBAGENT_") or "subagentRunId" in e]
    assert page.locator(".card.subagent").count() == 0
    spoken = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"}
    assert page.locator(".message.assistant:not([data-empty])").count() == len(spoken)


# --- same prompt, every runtime ---------------------------------------------------------------


def collapsed(events: list[dict]) -> list[str]:
    types: list[str] = []
    for entry in events:
        if not types or types[-1] != entry["event"]["type"]:
            types.append(entry["event"]["type"])
    return types


def test_compare_view_runs_every_runtime_and_links_each_difference_to_the_matrix(page: object) -> None:
    page.get_by_role("link", name="Same prompt, every runtime").click()
    chip(page, "subagent_approval", within="#compare-chips")
    page.wait_for_function(
        "n => { const c = window.inspector.compare.columns;"
        " return c.length === n && c.every((x) => !x.session.busy && x.session.runs.length > 0); }",
        arg=len(ROUTES),
    )
    columns = page.evaluate(RECORD)["columns"]
    assert [column["route"] for column in columns] == ROUTES
    types = [{entry["event"]["type"] for entry in column["events"]} for column in columns]
    for column, locator in zip(columns, page.locator(".column").all(), strict=True):
        assert_clean(column)
        shown = [item.get_attribute("data-type") for item in locator.locator(".sequence li").all()]
        assert len(shown) == len(collapsed(column["events"]))  # one entry per run of one type
    expected = set.union(*types) - set.intersection(*types)
    marked = {item.get_attribute("data-difference") for item in page.locator("#differences li[data-difference]").all()}
    assert marked - {"outcome"} == expected
    marked_types = {item.get_attribute("data-type") for item in page.locator(".sequence li.differs").all()}
    assert marked_types == expected
    links = page.locator("#differences a").all()
    assert all(link.get_attribute("href") == "inspector/matrix.html#subagent_approval" for link in links)
    shot(page, "readme-compare")
    if links:
        links[0].click()
        page.wait_for_selector("table")
        assert page.locator("tr:has(#subagent_approval)").count() == 1
        shot(page, "readme-matrix", full_page=False)  # the row in view, not the whole document


# --- the page's controls ------------------------------------------------------------------------


def test_copy_as_curl_repeats_the_last_request(page: object) -> None:
    chip(page, "text")
    record = wait_runs(page, 1)
    page.get_by_role("button", name="Copy last request as curl").click()
    command = page.input_value("#curl-text")
    assert command.startswith("curl -N ") and ROUTES[0] in command
    if shutil.which("curl") is None:
        pytest.skip("no curl on this machine to run the copied command")
    done = subprocess.run(["bash", "-c", command], capture_output=True, timeout=60, check=True)
    events = parse_sse(done.stdout)
    assert verify_events(events) == [] and events[-1]["type"] == "RUN_FINISHED"
    assert events[0]["threadId"] == record["runs"][0]["input"]["threadId"]


def test_new_thread_starts_afresh(page: object) -> None:
    chip(page, "text")
    first = wait_runs(page, 1)["runs"][0]["input"]["threadId"]
    page.get_by_role("button", name="New thread").click()
    page.wait_for_function("t => window.inspector.session.agent.threadId !== t", arg=first)
    assert page.locator(".message").count() == 0 and page.locator("#log .row").count() == 0


def test_keyboard_labels_and_a_narrow_screen(page: object) -> None:
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
      .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
      .map((el) => el.outerHTML)""")
    assert unlabelled == []
    page.locator("#message").focus()  # from here on, the keyboard alone
    page.keyboard.type(PROMPTS["approval"])
    page.keyboard.press("Enter")
    wait_runs(page, 1)
    page.locator(".card.approval").get_by_role("button", name="Approve").focus()
    page.keyboard.press("Space")
    assert_clean(wait_runs(page, 2))
    page.locator("#message").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Send"
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "readme-narrow")


def test_the_token_lives_in_the_tab_session_only(chromium: object) -> None:
    with live_server(Settings(agui_script_delay_ms=2, agui_token="s3cret-token")) as url:
        problems: list[str] = []
        page = open_page(chromium, f"{url}/", problems)
        assert "s3cret-token" not in page.content()
        page.get_by_label("Bearer token").fill("s3cret-token")
        page.get_by_role("button", name="Use token").click()
        page.wait_for_function("!!window.inspector?.session")
        assert page.locator("#runtime option").count() == len(ROUTES)
        chip(page, "text")
        assert_clean(wait_runs(page, 1))
        assert page.evaluate("Object.values(sessionStorage)") == ["s3cret-token"]
        assert page.evaluate("localStorage.length") == 0
        page.get_by_role("button", name="Copy last request as curl").click()
        command = page.input_value("#curl-text")
        assert "$AGUI_TOKEN" in command and "s3cret-token" not in command
        page.context.close()
    # The one expected error: the browser logs the 401 that asked for the token.
    assert [p for p in problems if "401" not in p] == []


# --- a 10,000-event run -------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
def test_a_ten_thousand_event_run_keeps_the_page_responsive(chromium: object, route: str) -> None:
    """The offline model quotes the message back in chunks of about 12 characters, one word each:
    a message of 10,000 twelve-character words is a real run of over 10,000 events."""
    message = " ".join(f"word{n:07d}x" for n in range(10_000))
    with live_server(Settings(agui_script_delay_ms=0, agui_max_body_bytes=2_000_000)) as url:
        problems: list[str] = []
        page = open_page(chromium, f"{url}/", problems)
        page.wait_for_function("!!window.inspector?.session")
        on_runtime(page, route)
        # The time between painted frames while the run streams.
        page.evaluate("""() => { window.gaps = []; let last = performance.now();
          const tick = (now) => { if (window.inspector.session.busy) window.gaps.push(now - last);
            last = now; requestAnimationFrame(tick); };
          requestAnimationFrame(tick); }""")
        type_message(page, message)
        page.wait_for_function("window.inspector.session.events.length > 1000")
        started = time.monotonic()
        page.select_option("#log-filter", "RUN_STARTED")  # a control used while the run streams...
        page.wait_for_function("document.querySelector('#log .bar span').textContent.startsWith('1 of')")
        answered = time.monotonic() - started
        assert page.evaluate("window.inspector.session.busy"), "the run ended before the page was used"
        record = wait_runs(page, 1)
        assert len(record["events"]) > 10_000 and record["runs"][0]["error"] is None
        assert answered < 2.0, f"the filter took {answered:.2f} s to answer"  # ...answers promptly
        # Most frames come on time; a shared two-core machine may stall the odd one, so the 95th
        # percentile is bounded (a page that blocked while the burst lasts has a few frames, all long).
        gaps = sorted(page.evaluate("window.gaps"))
        assert len(gaps) > 20 and gaps[int(len(gaps) * 0.95)] < 250, f"frame gaps (ms): {gaps[-10:]}"
        page.select_option("#log-filter", "")
        assert page.locator("#log .row").count() < 100  # the log is virtualised
        page.locator("#log .row").last.click()
        assert page.locator("#log pre.raw").inner_text().startswith("{")
        shot(page, f"ten-thousand-events-{route.strip('/').replace('/', '-')}")
        page.context.close()
    assert problems == []
