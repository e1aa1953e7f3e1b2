"""The Pydantic AI route's backend tools. What they return comes from the runtime-neutral script.

The state tools write into the run's own ``deps.state`` (``runtimes.pydantic_ai.deps``) and return
the whole state as a STATE_SNAPSHOT in the tool result's metadata, which the AG-UI adapter puts on
the wire right after the call's TOOL_CALL_RESULT: every sibling key the client sent is kept.

``delete_file`` is the approval-gated demo tool (registered with ``requires_approval=True`` in
``agents``): it never touches the filesystem, it only says what it would have done.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import StateSnapshotEvent
from pydantic import BaseModel, Field
from pydantic_ai import RunContext, ToolReturn

from runtimes import script
from runtimes.pydantic_ai.deps import RunDeps


class Recipe(BaseModel):
    """The shape of the shared-state key ``recipe``."""

    title: str
    ingredients: list[str] = Field(default_factory=list)
    steps: list[str] = Field(default_factory=list)


async def get_weather(city: str) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city to report on, e.g. "Tokyo".
    """
    return script.weather_report(city)


async def delete_file(path: str) -> str:
    """Delete a file. The user must approve every call before it runs.

    Args:
        path: The path of the file to delete.
    """
    return f"Deleted {path}."


async def update_recipe(ctx: RunContext[RunDeps], recipe: Recipe) -> ToolReturn:
    """Put a recipe into the shared state (key `recipe`), keeping every other state key.

    Args:
        recipe: The complete recipe.
    """
    return _set_state(ctx, "recipe", recipe.model_dump(), f"Saved the recipe {recipe.title!r}.")


async def write_document(ctx: RunContext[RunDeps], document: str) -> ToolReturn:
    """Write a document into the shared state (key `document`); it fills in as it streams.

    Args:
        document: The full text of the document.
    """
    return _set_state(ctx, "document", document, f"Wrote the document ({len(document)} characters).")


async def lookup_fact(topic: str) -> str:
    """Look up one fact about a topic.

    Args:
        topic: What to look up.
    """
    return script.fact_about(topic)


def _set_state(ctx: RunContext[RunDeps], key: str, value: Any, said: str) -> ToolReturn:
    """Replace the run's state with one key set, and send the whole state to the client."""
    ctx.deps.state = {**ctx.deps.state, key: value}
    return ToolReturn(return_value=said, metadata=StateSnapshotEvent(snapshot=dict(ctx.deps.state)))
