"""The two Pydantic AI agents of this route: the demo assistant and its research specialist.

Both are built once per mount and shared by every request; neither is mutated per request (each
run gets its own ``deps``, history and state), which keeps threads isolated. Both may end a run
with ``DeferredToolRequests`` (an approval is pending), so that is among their output types.
"""

from __future__ import annotations

from pydantic_ai import Agent, DeferredToolRequests, Tool
from pydantic_ai.models import Model

from runtimes import script
from runtimes.pydantic_ai.delegation import research_tool
from runtimes.pydantic_ai.deps import RunDeps
from runtimes.pydantic_ai.model import CountedModelCalls
from runtimes.pydantic_ai.teardown import NoteRunTasks
from runtimes.pydantic_ai.tools import delete_file, get_weather, lookup_fact, update_recipe, write_document

Output = str | DeferredToolRequests


def build_specialist(model: Model) -> Agent[None, Output]:
    """research_specialist: looks facts up; it may be asked to delete, which needs an approval."""
    return Agent(
        model,
        name=script.RESEARCH_SPECIALIST,
        instructions=script.SPECIALIST_INSTRUCTIONS,
        output_type=[str, DeferredToolRequests],
        tools=[Tool(lookup_fact), Tool(delete_file, requires_approval=True)],
        capabilities=[CountedModelCalls(), NoteRunTasks()],
    )


def build_assistant(parent_model: Model, specialist_model: Model) -> Agent[RunDeps, Output]:
    """The agent the route serves; it delegates research to a real second agent."""
    return Agent(
        parent_model,
        name="demo_assistant",
        deps_type=RunDeps,
        instructions=script.PARENT_INSTRUCTIONS,
        output_type=[str, DeferredToolRequests],
        tools=[
            Tool(get_weather),
            Tool(delete_file, requires_approval=True),
            Tool(update_recipe),
            Tool(write_document),
            research_tool(build_specialist(specialist_model)),
        ],
        capabilities=[CountedModelCalls(), NoteRunTasks()],
    )
