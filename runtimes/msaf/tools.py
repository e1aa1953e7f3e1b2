"""The MAF route's backend tools. What they return comes from the runtime-neutral script.

``delete_file`` is the approval-gated demo tool: it never touches the filesystem, it only says
what it would have done, so approving it in a demo is harmless.
"""

from __future__ import annotations

from typing import Annotated

from agent_framework import Content, tool
from agent_framework_ag_ui import state_update
from pydantic import BaseModel, Field

from runtimes import script


class Recipe(BaseModel):
    """The shape of the shared-state key ``recipe``."""

    title: str
    ingredients: list[str] = Field(default_factory=list)
    steps: list[str] = Field(default_factory=list)


@tool(name=script.GET_WEATHER)
async def get_weather(city: Annotated[str, "The city to report on"]) -> dict:
    """Get the current weather for a city."""
    return script.weather_report(city)


@tool(name=script.DELETE_FILE, approval_mode="always_require")
async def delete_file(path: Annotated[str, "Path of the file to delete"]) -> str:
    """Delete a file. Needs the user's approval. (Demo: nothing is ever deleted from disk.)"""
    return f"Deleted {path}."


@tool(name=script.UPDATE_RECIPE)
async def update_recipe(recipe: Annotated[Recipe, "The complete recipe"]) -> Content:
    """Put a recipe into the shared state (key `recipe`); every other state key is kept."""
    recipe = Recipe.model_validate(recipe)  # MAF validates the arguments but passes them on as a dict
    return state_update(f"Saved the recipe {recipe.title!r}.", state={"recipe": recipe.model_dump()})


@tool(name=script.WRITE_DOCUMENT)
async def write_document(document: Annotated[str, "The full text of the document"]) -> str:
    """Write a document into the shared state (key `document`); it streams in as you write it."""
    return f"Wrote the document ({len(document)} characters)."


@tool(name=script.LOOKUP_FACT)
async def lookup_fact(topic: Annotated[str, "What to look up"]) -> str:
    """Look up one fact about a topic."""
    return script.fact_about(topic)


PARENT_TOOLS = (get_weather, delete_file, update_recipe, write_document)
"""The parent agent's own tools (the delegation tool is added by ``runtimes.msaf.agents``)."""
SPECIALIST_TOOLS = (lookup_fact, delete_file)
"""research_specialist's tools: it may be asked to delete, which needs an approval it cannot get."""
