"""``research_specialist(task)``: Pydantic AI's agent delegation, with approvals that pass through.

Pydantic AI's documented delegation is a tool of the parent agent that runs a second agent and
returns its output, sharing the parent run's usage (``usage=ctx.usage``). This tool runs the
specialist with ``run_stream_events``, so every event of the specialist's run is seen live and fed
to the subagent emitter's dialect (``emitters.pydantic_ai``), which puts it on the wire attributed
to the parent call (``RunContext.tool_call_id``).

An approval inside the specialist: the specialist's own ``delete_file`` needs one, so its run ends
with ``DeferredToolRequests`` instead of an answer. Pydantic AI has no built-in way to carry that
out of a tool, so the tool defers *itself*: it records the paused run in the run's deps
(``deps.suspended``: the specialist's history and the calls it waits on) and raises
``ApprovalRequired``, which ends the parent run with its own ``DeferredToolRequests``. The bridge
turns that into one interrupt per call the specialist waits on and keeps the paused run for the
thread (``approvals``). On the resume the bridge approves the delegation call and hands the tool
the specialist's history and the user's answers (``deps.continuations``); the tool, called again
for the same parent call id, continues the specialist with ``DeferredToolResults``, under the
same subagent.

How a delegation fails: a model failure (``runtimes.model_errors`` names it) closes the subagent
with SUBAGENT_ERROR and that code and ends the whole run (the endpoint the parent would ask next is
the one that just failed); any other failure closes it with ``SPECIALIST_ERROR`` and becomes the
tool's result, saying why, so the parent can tell the user.
"""

from __future__ import annotations

from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, RunContext, Tool
from pydantic_ai.run import AgentRunResult, AgentRunResultEvent

from emitters.pydantic_ai import SpecialistStream
from runtimes.model_errors import describe
from runtimes.pydantic_ai.deps import RunDeps, Suspension
from runtimes.script import RESEARCH_SPECIALIST

SPECIALIST_ERROR = "SPECIALIST_ERROR"
"""SUBAGENT_ERROR code of a specialist that failed for any reason but its model."""
TOOL_DESCRIPTION = (
    "Delegate a research task to the research specialist, which looks facts up and reports back. "
    "Call it twice in one turn to compare two topics."
)
"""What the parent's model reads about the delegation tool."""
SUBAGENT_DESCRIPTION = "Looks one fact up with lookup_fact and reports back in a sentence or two."
"""What a client reads about the subagent (SUBAGENT_STARTED.description)."""


def research_tool(specialist: Agent[None, str | DeferredToolRequests]) -> Tool[RunDeps]:
    """The parent's delegation tool, running ``specialist`` for every call."""

    async def research_specialist(ctx: RunContext[RunDeps], task: str) -> str:
        """Delegate a research task to the research specialist.

        Args:
            task: What to research, in one sentence.
        """
        call_id = ctx.tool_call_id or ""
        subagent = SpecialistStream(call_id, RESEARCH_SPECIALIST, SUBAGENT_DESCRIPTION)
        try:
            result = await _run_specialist(specialist, subagent, ctx, task)
        except Exception as exc:  # noqa: BLE001 - a failed specialist is reported, then re-raised or told
            named = describe(exc)
            reason = str(named) if named is not None else (str(exc) or type(exc).__name__)
            told = f"{RESEARCH_SPECIALIST} could not finish: {reason}"
            subagent.fail(told, named.code if named is not None else SPECIALIST_ERROR)
            if named is not None:
                raise
            return told
        output = result.output
        if isinstance(output, DeferredToolRequests):
            subagent.suspend()
            ctx.deps.suspended[call_id] = Suspension(result.all_messages(), list(output.approvals))
            raise ApprovalRequired()  # the bridge asks for the specialist's calls instead (approvals)
        subagent.finish(result=output)
        return output

    return Tool(research_specialist, name=RESEARCH_SPECIALIST, description=TOOL_DESCRIPTION)


async def _run_specialist(
    specialist: Agent[None, str | DeferredToolRequests],
    subagent: SpecialistStream,
    ctx: RunContext[RunDeps],
    task: str,
) -> AgentRunResult[str | DeferredToolRequests]:
    """Run the specialist, or continue the one this call paused (the bridge hands it over on the
    resume), feeding its events to ``subagent``."""
    continuation = ctx.deps.continuations.pop(ctx.tool_call_id or "", None)
    start = (
        {"message_history": continuation.messages, "deferred_tool_results": continuation.results}
        if continuation is not None
        else {"user_prompt": task}
    )
    async with specialist.run_stream_events(**start, usage=ctx.usage) as events:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                return event.result
            subagent.feed(event)
    raise RuntimeError("the specialist's run ended without a result")
