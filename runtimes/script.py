"""The offline model's script: one runtime-neutral decision function for every runtime.

Each runtime wraps this in its own model interface (a Strands ``Model``, a Microsoft Agent
Framework chat client), so everything downstream of the model — agent loop, tool execution,
bridge, emitter, SSE — is the real code path. The script only decides *what* the model says
next; the runtime adapters decide *how* that is streamed in their own chunk format.

The triggers below are also what ``GET /`` lists as sample prompts: one source of truth.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

# --- the contract a client developer sees -----------------------------------------------


@dataclass(frozen=True)
class Feature:
    """One surface every runtime route demonstrates, and how to trigger it offline."""

    name: str
    trigger: str
    sample_prompt: str
    description: str


FEATURES: tuple[Feature, ...] = (
    Feature("text", "(anything else)", "Hello there!", "A streamed reply that quotes your message."),
    Feature(
        "backend_tool",
        "weather",
        "What's the weather in Tokyo?",
        "Calls the backend tool get_weather(city) and answers with its result.",
    ),
    Feature(
        "frontend_tool",
        "<name of a tool you declared>",
        "Please call change_background",
        "Calls a tool the client declared in RunAgentInput.tools; the client runs it.",
    ),
    Feature(
        "approval",
        "delete",
        "delete notes.txt",
        "Calls the approval-gated delete_file(path): the run ends with an interrupt outcome; "
        "resume with {approved: true|false}. 'delete a.txt and b.txt' asks for two approvals at once.",
    ),
    Feature(
        "shared_state",
        "recipe",
        "Make me a recipe for pancakes",
        "Calls update_recipe, which sets the shared-state key `recipe` and keeps every other key.",
    ),
    Feature(
        "predictive_state",
        "write",
        "Write a story about dragons",
        "Calls write_document; the state key `document` fills in while the argument streams.",
    ),
    Feature(
        "subagent",
        "research",
        "Research the history of Lisbon",
        "Delegates to the specialist agent research_specialist (tool lookup_fact); streams SUBAGENT_* events.",
    ),
    Feature(
        "parallel_subagents",
        "compare",
        "Compare Lisbon and Porto",
        "Delegates to two research_specialist invocations in parallel.",
    ),
    Feature(
        "subagent_approval",
        "research + delete",
        "Research old logs and delete logs.txt",
        "The specialist asks for approval; the subagent is suspended until you resume.",
    ),
)

# Tool names shared by every runtime.
GET_WEATHER = "get_weather"
DELETE_FILE = "delete_file"
UPDATE_RECIPE = "update_recipe"
WRITE_DOCUMENT = "write_document"
RESEARCH_SPECIALIST = "research_specialist"
LOOKUP_FACT = "lookup_fact"
BACKEND_TOOLS = frozenset({GET_WEATHER, DELETE_FILE, UPDATE_RECIPE, WRITE_DOCUMENT, RESEARCH_SPECIALIST, LOOKUP_FACT})
"""Tools the server runs; any other tool a model is offered was declared by the client."""

PARENT_INSTRUCTIONS = (
    "You are the demo assistant of a multi-runtime AG-UI server. Use get_weather for weather, "
    "delete_file to delete a file (it needs the user's approval), update_recipe to put a recipe in "
    "the shared state, write_document to write a document into the shared state, and "
    "research_specialist to delegate research (call it twice in one turn to compare two topics). "
    "Call any tool the client declared when the user asks for it. Keep answers short."
)
SPECIALIST_INSTRUCTIONS = (
    "You are research_specialist. Use lookup_fact to find one fact about the task, then answer in "
    "one or two sentences starting with 'Specialist finding:'. Use delete_file if asked to delete."
)

# --- what the model decides ----------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model makes; ``call_id`` is left to the runtime (it owns id formats)."""

    name: str
    arguments: dict


@dataclass(frozen=True)
class Reply:
    """A text answer, already split into the chunks the model streams."""

    chunks: tuple[str, ...]

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@dataclass(frozen=True)
class CallTools:
    """One model turn that calls one or more tools (several = parallel calls)."""

    calls: tuple[ToolCall, ...]


Step = Reply | CallTools


@dataclass
class Turn:
    """What the script needs to know about the conversation, in runtime-neutral terms.

    ``user_text`` is the latest user message. ``results`` are the tool results that arrived
    since then, oldest first, as ``(tool_name, result_text)``; empty means the model has not
    called anything yet in this turn. ``frontend_tools`` are the names the client declared.
    """

    user_text: str
    results: list[tuple[str, str]] = field(default_factory=list)
    frontend_tools: Sequence[str] = ()


def chunk_text(text: str, size: int = 12) -> tuple[str, ...]:
    """Split a reply into word-aligned chunks of roughly ``size`` characters (always >= 2 chunks
    for non-trivial text, so streaming is visible)."""
    words = re.findall(r"\S+\s*", text)
    chunks: list[str] = []
    current = ""
    for word in words:
        current += word
        if len(current) >= size:
            chunks.append(current)
            current = ""
    if current:
        chunks.append(current)
    return tuple(chunks) or (text,)


async def paced(
    items: Iterable[T], delay_s: float, *, is_chunk: Callable[[T], bool] = lambda item: True
) -> AsyncIterator[T]:
    """Stream a scripted model turn: ``items`` in order, with a pause of ``delay_s`` before every
    chunk but the first, so streaming is visible on the wire (``AGUI_SCRIPT_DELAY_MS``).

    Every runtime's scripted model streams through this one function (tests observe it to see
    which runs are still producing model output)."""
    first = True
    for item in items:
        if is_chunk(item):
            if not first and delay_s:
                await asyncio.sleep(delay_s)
            first = False
        yield item


def chunk_json(arguments: dict, size: int = 16) -> Iterator[str]:
    """Serialize tool arguments and cut the JSON into pieces, as a model streams them."""
    text = json.dumps(arguments)
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _reply(text: str) -> Reply:
    return Reply(chunk_text(text))


def _word_after(text: str, marker: str) -> str | None:
    """The token that follows ``marker`` (a whole word), trailing punctuation removed."""
    match = re.search(rf"\b{re.escape(marker)}\s+(\S+)", text, flags=re.IGNORECASE)
    if not match:
        return None
    token = match.group(1).rstrip("?!.,;:'\"")
    return token or None


def _topic(text: str) -> str:
    """What a research request is about: the words after 'research'/'about', or the message."""
    match = re.search(r"\b(?:research|about)\s+(.+)", text, flags=re.IGNORECASE)
    topic = (match.group(1) if match else text).strip().rstrip("?!.")
    return re.split(r"\s+and\s+delete\b", topic, flags=re.IGNORECASE)[0].strip() or "the topic"


def _compared(text: str) -> tuple[str, str]:
    """The two things to compare: 'compare A and B' / 'A vs B'; defaults keep the call valid."""
    match = re.search(r"\bcompare\s+(.+?)\s+(?:and|with|vs\.?|versus)\s+(.+)", text, flags=re.IGNORECASE)
    if match:
        return match.group(1).strip(), match.group(2).strip().rstrip("?!.")
    return "the first option", "the second option"


def _paths_to_delete(text: str) -> list[str]:
    """'delete a.txt and b.txt' names two files (two approvals at once); otherwise one."""
    match = re.search(r"\bdelete\s+(\S+)\s+and\s+(\S+)", text, flags=re.IGNORECASE)
    if match:
        return [path.rstrip("?!.,;:'\"") for path in match.groups()]
    return [_word_after(text, "delete") or "untitled.txt"]


def weather_report(city: str) -> dict:
    """The deterministic weather the backend tool returns (derived from the city name)."""
    digest = hashlib.sha256(city.lower().encode()).digest()
    conditions = ("sunny", "cloudy", "rainy", "windy", "snowy")[digest[0] % 5]
    return {"city": city, "conditions": conditions, "temperature_c": 5 + digest[1] % 25}


def fact_about(topic: str) -> str:
    """The deterministic fact lookup_fact returns."""
    digest = hashlib.sha256(topic.lower().encode()).hexdigest()[:6]
    return f"{topic} is documented in archive record #{digest}."


def recipe_for(dish: str) -> dict:
    return {
        "title": dish.capitalize(),
        "ingredients": ["flour", "milk", "eggs"],
        "steps": [f"Mix the ingredients for {dish}.", "Cook until golden.", "Serve warm."],
    }


def document_about(subject: str) -> str:
    return (
        f"Once upon a time there was a tale about {subject}. "
        f"It grew one sentence at a time, so you could watch it arrive. The end."
    )


def was_denied(result_text: str) -> bool:
    """True when an approval-gated tool result says the call did not run."""
    lowered = result_text.lower()
    return any(word in lowered for word in ("denied", "rejected", "not approved", "cancelled", "declined"))


# --- the parent agent's script -------------------------------------------------------------


def parent_step(turn: Turn) -> Step:
    """The demo assistant's next step for this conversation."""
    text = turn.user_text
    lowered = text.lower()
    if turn.results:
        return _reply(_parent_answer(turn))
    for name in turn.frontend_tools:
        if name.lower() in lowered:
            return CallTools((ToolCall(name, {"request": text}),))
    if "compare" in lowered:
        first, second = _compared(text)
        return CallTools(
            (
                ToolCall(RESEARCH_SPECIALIST, {"task": f"Research {first}"}),
                ToolCall(RESEARCH_SPECIALIST, {"task": f"Research {second}"}),
            )
        )
    if "research" in lowered:
        return CallTools((ToolCall(RESEARCH_SPECIALIST, {"task": text}),))
    if "weather" in lowered:
        return CallTools((ToolCall(GET_WEATHER, {"city": _word_after(text, "in") or "Paris"}),))
    if "delete" in lowered:
        return CallTools(tuple(ToolCall(DELETE_FILE, {"path": path}) for path in _paths_to_delete(text)))
    if "recipe" in lowered:
        dish = _word_after(text, "for") or "pancakes"
        return CallTools((ToolCall(UPDATE_RECIPE, {"recipe": recipe_for(dish)}),))
    if "write" in lowered:
        subject = _word_after(text, "about") or "a quiet harbour"
        return CallTools((ToolCall(WRITE_DOCUMENT, {"document": document_about(subject)}),))
    return _reply(f'You said: "{text}". I am the offline scripted model; try a sample prompt from GET /.')


def _parent_answer(turn: Turn) -> str:
    """The reply after the tools of this turn have answered; it always uses their results."""
    name, result = turn.results[-1]
    if name == GET_WEATHER:
        return f"Here is the weather report: {result}"
    if name == DELETE_FILE:
        deletions = [result for tool, result in turn.results if tool == DELETE_FILE]
        if len(deletions) > 1:
            return " ".join(f"Not done: {r}" if was_denied(r) else f"Done: {r}" for r in deletions)
        path = _word_after(turn.user_text, "delete") or "untitled.txt"
        if was_denied(result):
            return f"I did not delete {path}: the request was not approved."
        return f"Done: {result}"
    if name == UPDATE_RECIPE:
        return "The recipe is in the shared state now. Enjoy!"
    if name == WRITE_DOCUMENT:
        return "The document is in the shared state now."
    if name == RESEARCH_SPECIALIST:
        findings = " ".join(result for tool, result in turn.results if tool == RESEARCH_SPECIALIST)
        return f"According to the research specialist: {findings}"
    return f"The tool {name} answered: {result}"


# --- the specialist's script ------------------------------------------------------------------


def specialist_step(turn: Turn) -> Step:
    """research_specialist's next step: look the fact up (or delete when asked), then answer."""
    text = turn.user_text
    if not turn.results:
        if "delete" in text.lower():
            return CallTools((ToolCall(DELETE_FILE, {"path": _word_after(text, "delete") or "untitled.txt"}),))
        return CallTools((ToolCall(LOOKUP_FACT, {"topic": _topic(text)}),))
    name, result = turn.results[-1]
    if name == DELETE_FILE and was_denied(result):
        return _reply("Specialist finding: the deletion was not approved, so nothing was removed.")
    return _reply(f"Specialist finding: {result}")
