"""The two MAF agents of this route: the demo assistant and its research specialist.

Both are built once per mount and shared by every request; neither is mutated per request (the
bridge gives each request its own session, history and state), which keeps threads isolated.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_framework import Agent, ChatContext, ChatMiddleware

from emitters.msaf import DelegationMiddleware, forward_specialist_update
from runtimes import budget, script
from runtimes.config import RuntimeSettings
from runtimes.msaf.conversation import StateContextPlacement
from runtimes.msaf.model import chat_client
from runtimes.msaf.specialists import SpecialistFailures, failure_code, observing
from runtimes.msaf.tools import PARENT_TOOLS, SPECIALIST_TOOLS


class CountedModelCalls(ChatMiddleware):
    """Every model call counts against its run's budget (``runtimes.budget``); the one past it fails."""

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        budget.spend()
        await call_next()


def build_specialist(settings: RuntimeSettings) -> Agent:
    return Agent(
        client=chat_client(settings, script.specialist_step),
        name=script.RESEARCH_SPECIALIST,
        description="Researches one topic with lookup_fact and reports a short finding.",
        instructions=script.SPECIALIST_INSTRUCTIONS,
        tools=list(SPECIALIST_TOOLS),
        middleware=[CountedModelCalls()],
    )


def build_assistant(settings: RuntimeSettings) -> Agent:
    """The agent the route serves; it delegates research to a real second agent."""
    research = build_specialist(settings).as_tool(
        name=script.RESEARCH_SPECIALIST,
        description="Delegate a research task to the research specialist. Call it twice in one turn to compare.",
        arg_name="task",
        arg_description="What to research, in one sentence.",
        stream_callback=observing(forward_specialist_update),
    )
    return Agent(
        client=chat_client(settings, script.parent_step),
        name="assistant",
        description="The demo assistant of the multi-runtime AG-UI server.",
        instructions=script.PARENT_INSTRUCTIONS,
        tools=[*PARENT_TOOLS, research],
        # Outermost first: the failure policy sees a specialist's failure after the emitter has
        # closed its subagent (runtimes/msaf/specialists.py).
        middleware=[
            CountedModelCalls(),
            StateContextPlacement(),
            SpecialistFailures({script.RESEARCH_SPECIALIST}),
            DelegationMiddleware({script.RESEARCH_SPECIALIST}, failure_code=failure_code),
        ],
    )
