"""The ADK route's backend tools. What they return comes from the runtime-neutral script.

Plain async functions: ADK wraps each in a ``FunctionTool`` and builds its declaration from the
signature and docstring. ``delete_file`` is the approval-gated demo tool (ADK's own tool
confirmation, ``require_confirmation=True``): it never touches the filesystem, it only says what it
would have done, so approving it in a demo is harmless. The state tools write ADK session state,
which ag-ui-adk reports as STATE_DELTA and in the run's final STATE_SNAPSHOT.
"""

from __future__ import annotations

from google.adk.tools import FunctionTool, ToolContext
from pydantic import BaseModel, Field

from runtimes import script


class Recipe(BaseModel):
    """The shape of the shared-state key ``recipe``."""

    title: str
    ingredients: list[str] = Field(default_factory=list)
    steps: list[str] = Field(default_factory=list)


async def get_weather(city: str) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city to report on.
    """
    return script.weather_report(city)


async def delete_file(path: str) -> str:
    """Delete a file. Needs the user's approval. (Demo: nothing is ever deleted from disk.)

    Args:
        path: Path of the file to delete.
    """
    return f"Deleted {path}."


async def update_recipe(recipe: Recipe, tool_context: ToolContext) -> str:
    """Put a recipe into the shared state (key `recipe`); every other state key is kept.

    Args:
        recipe: The complete recipe.
    """
    recipe = Recipe.model_validate(recipe)
    tool_context.state["recipe"] = recipe.model_dump()
    return f"Saved the recipe {recipe.title!r}."


async def write_document(document: str, tool_context: ToolContext) -> str:
    """Write a document into the shared state (key `document`); it streams in as you write it.

    Args:
        document: The full text of the document.
    """
    tool_context.state["document"] = document
    return f"Wrote the document ({len(document)} characters)."


async def lookup_fact(topic: str) -> str:
    """Look up one fact about a topic.

    Args:
        topic: What to look up.
    """
    return script.fact_about(topic)


def approval_gated_delete() -> FunctionTool:
    """``delete_file`` behind ADK's tool confirmation: the call pauses the run until the user answers."""
    return FunctionTool(delete_file, require_confirmation=True)
