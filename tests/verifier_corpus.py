"""The verifier corpus: for every rule, a stream that breaks it and one that keeps it.

Shared by ``test_verifier.py`` (the Python verifier must flag exactly the broken ones) and
``test_npm_client.py`` (the published ``@ag-ui/client`` judges the same streams). A case is the
responses of one thread in order, so a resume is just a second list of events.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    runs: list[list[dict]]
    problem: str | None
    """A fragment of the problem the Python verifier must report; None = the thread is valid."""
    npm_differs: str | None = None
    """Why the published client reaches the opposite verdict; None = it must agree."""


def ev(kind: str, **fields: object) -> dict:
    return {"type": kind, **fields}


def start(run_id: str = "r1", **fields: object) -> dict:
    return ev("RUN_STARTED", threadId="t1", runId=run_id, **fields)


def finish(run_id: str = "r1", **fields: object) -> dict:
    return ev("RUN_FINISHED", threadId="t1", runId=run_id, **fields)


def owned(sub: str | None) -> dict:
    return {} if sub is None else {"subagentRunId": sub}


def text(message_id: str, sub: str | None = None) -> list[dict]:
    return [
        ev("TEXT_MESSAGE_START", messageId=message_id, role="assistant", **owned(sub)),
        ev("TEXT_MESSAGE_CONTENT", messageId=message_id, delta="hello", **owned(sub)),
        ev("TEXT_MESSAGE_END", messageId=message_id, **owned(sub)),
    ]


def tool(call_id: str, sub: str | None = None) -> list[dict]:
    return [
        ev("TOOL_CALL_START", toolCallId=call_id, toolCallName="lookup", **owned(sub)),
        ev("TOOL_CALL_ARGS", toolCallId=call_id, delta='{"q": 1}', **owned(sub)),
        ev("TOOL_CALL_END", toolCallId=call_id, **owned(sub)),
    ]


def result(call_id: str) -> dict:
    return ev("TOOL_CALL_RESULT", messageId=f"result-{call_id}", toolCallId=call_id, content="42", role="tool")


def reasoning(message_id: str) -> list[dict]:
    return [
        ev("REASONING_START", messageId=message_id),
        ev("REASONING_MESSAGE_START", messageId=message_id, role="reasoning"),
        ev("REASONING_MESSAGE_CONTENT", messageId=message_id, delta="thinking"),
        ev("REASONING_MESSAGE_END", messageId=message_id),
        ev("REASONING_END", messageId=message_id),
    ]


def sub_started(sub: str = "sa", **fields: object) -> dict:
    return ev("SUBAGENT_STARTED", subagentRunId=sub, name="researcher", **fields)


def sub_finished(sub: str = "sa", **fields: object) -> dict:
    return ev("SUBAGENT_FINISHED", subagentRunId=sub, **fields)


def one(*events: dict | list[dict]) -> list[list[dict]]:
    """A thread of one response: the events between RUN_STARTED and RUN_FINISHED."""
    flat = [item for event in events for item in (event if isinstance(event, list) else [event])]
    return [[start(), *flat, finish()]]


def suspended_then(*resumed: dict | list[dict]) -> list[list[dict]]:
    """A subagent suspended by an interrupt, then a resuming run with ``resumed`` in it."""
    interrupt = {"id": "i1", "reason": "confirmation", "subagentRunId": "sa"}
    first = [
        start(),
        *tool("call-1"),
        sub_started(parentToolCallId="call-1"),
        sub_finished(outcome={"type": "suspended", "interruptIds": ["i1"]}),
        finish(outcome={"type": "interrupt", "interrupts": [interrupt]}),
    ]
    flat = [item for event in resumed for item in (event if isinstance(event, list) else [event])]
    return [first, [start("r2"), *flat, finish("r2")]]


ONLY_IN_PYTHON_TOOL_RESULT = (
    "verifyEvents does not check TOOL_CALL_RESULT; the client files the result as a tool message whatever call it names"
)
ONLY_IN_PYTHON_SUBAGENT_MEMORY = (
    "the client's verifyEvents forgets every subagent at each RUN_STARTED, so it cannot see an id "
    "coming back on a later run; the protocol (docs/concepts/subagents.mdx) lets only a suspended one continue"
)

CASES: list[Case] = [
    # -- run lifecycle -------------------------------------------------------------------------
    Case("minimal-run", one(), None),
    Case("first-event-not-run-started", [[*text("m1"), finish()]], "first event must be RUN_STARTED"),
    Case("run-error-alone", [[ev("RUN_ERROR", message="refused")]], None),
    Case("events-after-run-error", [[start(), ev("RUN_ERROR", message="boom"), *text("m1")]], "already errored"),
    Case("new-run-after-run-error", [[start(), ev("RUN_ERROR", message="boom"), start("r2"), finish("r2")]], None),
    Case("events-after-run-finished", [[start(), finish(), *text("m1")]], "already finished"),
    Case("two-runs-in-one-stream", [[start(), *text("m1"), finish(), start("r2"), *text("m2"), finish("r2")]], None),
    Case(
        "run-error-after-run-finished",
        [[start(), finish(), ev("RUN_ERROR", message="late")]],
        "already finished",
        npm_differs="the client's verifyEvents lets RUN_ERROR follow RUN_FINISHED; the rule as written (and our "
        "server) says a run that finished cannot also fail",
    ),
    Case("unknown-event-type", one(ev("TEXT_MESSAGE_DELTA", messageId="m1", delta="hi")), "not an AG-UI event type"),
    Case("run-started-while-running", [[start(), start("r2"), finish("r2")]], "while a run is still active"),
    Case(
        "stream-ends-inside-run",
        [[start(), *text("m1")]],
        "ended inside a run",
        npm_differs="verifyEvents checks each event against the ones before it and has no end-of-stream check",
    ),
    # -- text messages -------------------------------------------------------------------------
    Case("text-message", one(text("m1")), None),
    Case(
        "text-content-before-start",
        one(ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="hi")),
        "no active text message 'm1'",
    ),
    Case("text-end-without-start", one(ev("TEXT_MESSAGE_END", messageId="m1")), "no active text message 'm1'"),
    Case("text-start-twice", one(text("m1")[0], text("m1")), "already in progress"),
    Case("run-finished-with-open-text", one(text("m1")[:2]), "text messages 'm1' still open"),
    Case("text-chunks", one(ev("TEXT_MESSAGE_CHUNK", messageId="m1", role="assistant", delta="hi")), None),
    # -- tool calls ----------------------------------------------------------------------------
    Case("tool-call", one(tool("c1")), None),
    Case("tool-args-before-start", one(ev("TOOL_CALL_ARGS", toolCallId="c1", delta="{}")), "no active tool call"),
    Case("tool-start-twice", one(tool("c1")[0], tool("c1")), "already in progress"),
    Case("run-finished-with-open-tool-call", one(tool("c1")[:2]), "tool calls 'c1' still open"),
    # -- steps ---------------------------------------------------------------------------------
    Case("step", one(ev("STEP_STARTED", stepName="plan"), ev("STEP_FINISHED", stepName="plan")), None),
    Case("step-finished-not-started", one(ev("STEP_FINISHED", stepName="plan")), "never started"),
    Case(
        "step-started-twice",
        one(ev("STEP_STARTED", stepName="plan"), ev("STEP_STARTED", stepName="plan")),
        "already active",
    ),
    Case("run-finished-with-open-step", one(ev("STEP_STARTED", stepName="plan")), "steps 'plan' still open"),
    Case(
        "step-finished-by-another-owner",
        one(
            sub_started(),
            ev("STEP_STARTED", stepName="plan", subagentRunId="sa"),
            ev("STEP_FINISHED", stepName="plan"),
        ),
        "its starter must finish it",
    ),
    # -- reasoning -----------------------------------------------------------------------------
    Case("reasoning", one(reasoning("r1")), None),
    Case(
        "reasoning-content-before-start",
        one(ev("REASONING_MESSAGE_CONTENT", messageId="x", delta="hm")),
        "no active reasoning message 'x'",
    ),
    Case("reasoning-end-without-start", one(ev("REASONING_END", messageId="x")), "no active reasoning span 'x'"),
    Case("run-finished-with-open-reasoning", one(reasoning("x")[:3]), "still open"),
    Case(
        "legacy-thinking",
        one(
            ev("THINKING_START"),
            ev("THINKING_TEXT_MESSAGE_START"),
            ev("THINKING_TEXT_MESSAGE_CONTENT", delta="hm"),
            ev("THINKING_TEXT_MESSAGE_END"),
            ev("THINKING_END"),
        ),
        None,
    ),
    Case(
        "legacy-thinking-content-before-start",
        one(ev("THINKING_START"), ev("THINKING_TEXT_MESSAGE_CONTENT", delta="hm"), ev("THINKING_END")),
        "no active thinking message",
    ),
    # -- state ---------------------------------------------------------------------------------
    Case(
        "state-delta-applies",
        one(
            ev("STATE_SNAPSHOT", snapshot={"todo": []}),
            ev("STATE_DELTA", delta=[{"op": "add", "path": "/todo/-", "value": "buy milk"}]),
            ev("STATE_DELTA", delta=[{"op": "replace", "path": "/todo/0", "value": "buy oat milk"}]),
        ),
        None,
    ),
    Case(
        "bad-json-patch",
        one(ev("STATE_DELTA", delta=[{"op": "replace", "path": "/missing", "value": 1}])),
        "does not apply as a JSON Patch",
    ),
    Case(
        "delta-after-snapshot-replaced-state",
        one(
            ev("STATE_SNAPSHOT", snapshot={"a": {"b": 1}}),
            ev("STATE_SNAPSHOT", snapshot={"c": 1}),
            ev("STATE_DELTA", delta=[{"op": "replace", "path": "/a/b", "value": 2}]),
        ),
        "does not apply as a JSON Patch",
    ),
    Case(
        "failed-patch-test-op",
        one(ev("STATE_DELTA", delta=[{"op": "test", "path": "", "value": {"x": 1}}])),
        "does not apply as a JSON Patch",
    ),
    # -- tool results --------------------------------------------------------------------------
    Case("tool-result-for-seen-call", one(tool("c1"), result("c1")), None),
    Case(
        "tool-result-for-call-in-input",
        [
            [
                start(
                    input={
                        "threadId": "t1",
                        "runId": "r1",
                        "state": {},
                        "tools": [],
                        "context": [],
                        "forwardedProps": {},
                        "messages": [
                            {
                                "id": "a1",
                                "role": "assistant",
                                "toolCalls": [
                                    {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                                ],
                            }
                        ],
                    }
                ),
                result("c9"),
                finish(),
            ]
        ],
        None,
    ),
    Case(
        "tool-result-for-call-of-earlier-run",
        [[start(), *tool("c1"), finish()], [start("r2"), result("c1"), finish("r2")]],
        None,
    ),
    Case(
        "tool-result-for-unknown-call",
        one(result("nobody")),
        "never seen",
        npm_differs=ONLY_IN_PYTHON_TOOL_RESULT,
    ),
    # -- subagents -----------------------------------------------------------------------------
    Case(
        "subagent", one(tool("call-1"), sub_started(parentToolCallId="call-1"), text("m2", "sa"), sub_finished()), None
    ),
    Case(
        "subagent-error",
        one(sub_started(), ev("SUBAGENT_ERROR", subagentRunId="sa", message="failed", code="X")),
        None,
    ),
    Case(
        "subagent-without-name", one(ev("SUBAGENT_STARTED", subagentRunId="sa"), sub_finished()), "needs a string name"
    ),
    Case("duplicate-subagent-started", one(sub_started(), sub_started(), sub_finished()), "already active"),
    Case(
        "subagent-id-reused-in-run",
        one(sub_started(), sub_finished(), sub_started(), sub_finished()),
        "already finished in this run",
    ),
    Case("unclosed-subagent-at-run-finished", one(sub_started()), "subagents 'sa' still open"),
    Case("subagent-finished-not-active", one(sub_finished()), "no active subagent 'sa'"),
    Case(
        "subagent-error-without-message",
        one(sub_started(), ev("SUBAGENT_ERROR", subagentRunId="sa")),
        "SUBAGENT_ERROR needs a message",
    ),
    Case("subagent-bad-outcome", one(sub_started(), sub_finished(outcome={"type": "interrupt"})), "neither"),
    Case(
        "subagent-interrupt-ids-not-strings",
        one(sub_started(), sub_finished(outcome={"type": "suspended", "interruptIds": [1]})),
        "array of strings",
    ),
    Case(
        "subagent-parent-not-started",
        one(sub_started(parentSubagentRunId="ghost"), sub_finished()),
        "parentSubagentRunId 'ghost' was not started",
    ),
    Case(
        "nested-subagent",
        one(sub_started(), sub_started("sb", parentSubagentRunId="sa"), sub_finished("sb"), sub_finished()),
        None,
    ),
    Case("null-subagent-run-id", one(text("m1")[0] | {"subagentRunId": None}, text("m1")[1:]), "'subagentRunId: null'"),
    Case("null-description", one(sub_started(description=None), sub_finished()), "'description: null'"),
    Case("null-outcome", one(sub_started(), sub_finished(outcome=None)), "'outcome: null'"),
    Case(
        "null-interrupt-ids",
        one(sub_started(), sub_finished(outcome={"type": "suspended", "interruptIds": None})),
        "'outcome.interruptIds: null'",
    ),
    Case(
        "null-subagent-on-interrupt",
        [
            [
                start(),
                finish(
                    outcome={"type": "interrupt", "interrupts": [{"id": "i1", "reason": "x", "subagentRunId": None}]}
                ),
            ]
        ],
        "subagentRunId: null",
    ),
    Case(
        "null-subagent-in-snapshot",
        one(ev("MESSAGES_SNAPSHOT", messages=[{"id": "u1", "role": "user", "content": "hi", "subagentRunId": None}])),
        "subagentRunId: null",
    ),
    Case(
        "content-keeps-opener-subagent",
        one(
            sub_started(),
            text("m2", "sa")[0],
            ev("TEXT_MESSAGE_CONTENT", messageId="m2", delta="x"),
            text("m2")[2],
            sub_finished(),
        ),
        None,
    ),
    Case(
        "content-changes-owner",
        one(
            sub_started(),
            text("m2", "sa")[0],
            ev("TEXT_MESSAGE_CONTENT", messageId="m2", delta="x", subagentRunId="sb"),
            text("m2", "sa")[2],
            sub_finished(),
        ),
        "does not match subagent 'sa', which opened text message 'm2'",
    ),
    Case(
        "tool-call-end-inherits-owner",
        one(sub_started(), tool("c1", "sa")[:2], ev("TOOL_CALL_END", toolCallId="c1"), sub_finished()),
        None,
    ),
    Case(
        "parent-message-owner-mismatch",
        one(
            sub_started(),
            text("m1"),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f", parentMessageId="m1", subagentRunId="sa"),
            ev("TOOL_CALL_END", toolCallId="c1", subagentRunId="sa"),
            sub_finished(),
        ),
        "parent message 'm1'",
    ),
    Case(
        "suspended-subagent-continues-on-resume",
        suspended_then(sub_started(), text("m3", "sa"), sub_finished(), result("call-1")),
        None,
    ),
    Case(
        "finished-subagent-reused-on-later-run",
        [
            [start(), sub_started(), sub_finished(), finish()],
            [start("r2"), sub_started(), sub_finished(), finish("r2")],
        ],
        "only a suspended subagent may continue",
        npm_differs=ONLY_IN_PYTHON_SUBAGENT_MEMORY,
    ),
    Case(
        "suspended-subagent-restarted-in-same-run",
        [
            [
                start(),
                sub_started(),
                sub_finished(outcome={"type": "suspended"}),
                sub_started(),
                sub_finished(),
                finish(),
            ]
        ],
        "already finished in this run",
    ),
]
