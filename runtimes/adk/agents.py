"""The ADK agents of this route: the demo assistant, its research specialist, and the app that
carries them with their plugins.

The specialist is a real second ``LlmAgent`` used through ADK's own delegation mechanism,
``AgentTool``: the parent's model calls it like a tool, ADK runs it in a nested runner and hands
its answer back as the tool's result, so the parent stays in control (as on the other routes).
Its ``input_schema`` makes the tool take ``task``, as the other routes' delegation tools do.

The app is resumable (``ResumabilityConfig``), the way ag-ui-adk 0.7.1 wants human-in-the-loop
runs: ADK itself persists a paused call and continues the invocation on the answer. Its plugins
are the subagent emitter's dialect (``emitters.adk``) and the route's failure policy, in that
order; ``AgentTool`` hands both to the specialist's nested runner.

Everything here is built once per mount and shared by every run: ag-ui-adk copies the agent tree
per run, and ADK keeps a run's state in its session, never on the agents.
"""

from __future__ import annotations

from ag_ui_adk import AGUIToolset
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models import BaseLlm
from google.adk.plugins import BasePlugin
from google.adk.tools import AgentTool
from pydantic import BaseModel, Field

from emitters.adk import DelegationPlugin
from runtimes import script
from runtimes.adk import errors
from runtimes.adk.tools import approval_gated_delete, get_weather, lookup_fact, update_recipe, write_document

APP_NAME = "agui_adk_demo"
SUBAGENT_DESCRIPTION = "Looks one fact up with lookup_fact and reports back in a sentence or two."
"""What a client reads about the subagent (SUBAGENT_STARTED.description)."""
DELEGATIONS = frozenset({script.RESEARCH_SPECIALIST})


class ResearchTask(BaseModel):
    """What the parent hands the specialist."""

    task: str = Field(description="What to research, in one sentence.")


def specialist(model: BaseLlm) -> LlmAgent:
    """The research specialist: its own tool ``lookup_fact``, and ``delete_file`` behind a confirmation."""
    return LlmAgent(
        name=script.RESEARCH_SPECIALIST,
        description="Delegate a research task to the research specialist. Call it twice in one turn to compare.",
        model=model,
        instruction=script.SPECIALIST_INSTRUCTIONS,
        input_schema=ResearchTask,
        tools=[lookup_fact, approval_gated_delete()],
    )


def assistant(parent_model: BaseLlm, specialist_model: BaseLlm) -> LlmAgent:
    """The agent the route serves; frontend tools join it per run through ``AGUIToolset``."""
    return LlmAgent(
        name="assistant",
        description="The demo assistant of the multi-runtime AG-UI server.",
        model=parent_model,
        instruction=script.PARENT_INSTRUCTIONS,
        tools=[
            get_weather,
            approval_gated_delete(),
            update_recipe,
            write_document,
            AgentTool(specialist(specialist_model)),
            AGUIToolset(),
        ],
    )


def route_plugins() -> list[BasePlugin]:
    """The route's plugins, outermost first: the subagent emitter sees a failed delegation before the
    failure policy decides what the parent gets."""
    return [
        DelegationPlugin({name: SUBAGENT_DESCRIPTION for name in DELEGATIONS}, failure_code=errors.failure_code),
        errors.SpecialistFailures(DELEGATIONS),
    ]


def app(parent_model: BaseLlm, specialist_model: BaseLlm, plugins: list[BasePlugin]) -> App:
    return App(
        name=APP_NAME,
        root_agent=assistant(parent_model, specialist_model),
        plugins=plugins,
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
