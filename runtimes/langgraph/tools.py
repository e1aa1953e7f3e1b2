"""The LangGraph route's backend tools (the specialist delegation lives in ``agents``).

What they return comes from the runtime-neutral script. Each speaks LangGraph's own language for
what it means on the AG-UI wire:

* ``delete_file`` asks for approval with LangGraph's ``interrupt()``; the interrupt's value carries
  the AG-UI fields (``reason``, ``toolCallId``, ``responseSchema``) ag-ui-langgraph reads into the
  run's interrupt outcome, and the answer is what the resume sent. It never touches a file system.
* ``update_recipe`` and ``write_document`` write their state key with a ``Command`` update, so the
  bridge's state snapshots carry it (``write_document``'s argument also streams as predictive state:
  ``bridge.PREDICT_STATE``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from ag_ui_langgraph.interrupts import DEFAULT_RESUME_SENTINEL_CANCELLED
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command, interrupt

from runtimes import script
from runtimes.interrupts import APPROVAL_SCHEMA


@tool(script.GET_WEATHER)
def get_weather(city: str) -> str:
    """Get the current weather for a city, e.g. "Tokyo"."""
    return json.dumps(script.weather_report(city))


@tool(script.LOOKUP_FACT)
def lookup_fact(topic: str) -> str:
    """Look up one fact about a topic."""
    return script.fact_about(topic)


@tool(script.DELETE_FILE)
def delete_file(path: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Delete a file. The user must approve every call before it runs."""
    answer = interrupt(
        {
            "reason": "tool_call",
            "toolCallId": tool_call_id,
            "message": f"Delete {path}?",
            "responseSchema": APPROVAL_SCHEMA,
        }
    )
    return f"Deleted {path}." if approved(answer) else f"Not deleted: {path} ({decision(answer)})."


def approved(answer: Any) -> bool:
    """The answer allows the call: ``{"approved": true}``."""
    return isinstance(answer, dict) and answer.get("approved") is True


def decision(answer: Any) -> str:
    """What a refusal says: cancelled (the bridge's sentinel for ``status: cancelled``), or denied."""
    return "cancelled" if isinstance(answer, dict) and answer.get(DEFAULT_RESUME_SENTINEL_CANCELLED) else "denied"


@tool(script.UPDATE_RECIPE)
def update_recipe(recipe: dict, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Put a recipe into the shared state (key `recipe`): {"title", "ingredients", "steps"}."""
    title = recipe.get("title", "the recipe")
    return Command(
        update={"recipe": recipe, "messages": [ToolMessage(f"Saved the recipe {title!r}.", tool_call_id=tool_call_id)]}
    )


@tool(script.WRITE_DOCUMENT)
def write_document(document: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Write a document into the shared state (key `document`); it fills in as it streams."""
    message = ToolMessage(f"Wrote a document of {len(document)} characters.", tool_call_id=tool_call_id)
    return Command(update={"document": document, "messages": [message]})


PARENT_TOOLS = (get_weather, delete_file, update_recipe, write_document)
"""The parent agent's own tools (the delegation tool is added by ``agents``)."""
SPECIALIST_TOOLS = (lookup_fact, delete_file)
"""research_specialist's tools: asked to delete, it asks for approval the same way the parent does."""
