"""The backend tools of the Strands route (the specialist delegation lives in ``agents``).

The tools only compute; what they mean for the AG-UI wire (approval, shared state, predictive
state) is declared once, per tool name, in ``bridge.tool_behaviors``.
"""

from __future__ import annotations

from strands import tool

from runtimes.script import fact_about, weather_report


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city to report on, e.g. "Tokyo".
    """
    return weather_report(city)


@tool
def delete_file(path: str) -> str:
    """Delete a file. The user must approve every call before it runs.

    Args:
        path: The path of the file to delete.
    """
    # A demo: it never touches the filesystem, it only reports what approval allowed.
    return f"Deleted {path}."


@tool
def update_recipe(recipe: dict) -> dict:
    """Put a recipe into the shared state (key `recipe`), keeping every other state key.

    Args:
        recipe: The recipe, e.g. {"title": ..., "ingredients": [...], "steps": [...]}.
    """
    return recipe


@tool
def write_document(document: str) -> str:
    """Write a document into the shared state (key `document`); it fills in as it streams.

    Args:
        document: The full text of the document.
    """
    return f"Wrote a document of {len(document)} characters."


@tool
def lookup_fact(topic: str) -> str:
    """Look up one fact about a topic.

    Args:
        topic: What to look up.
    """
    return fact_about(topic)
