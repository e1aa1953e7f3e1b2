"""The LangGraph agents: the parent agent graph and the research specialist it delegates to.

Both are LangChain's own agent graph (``langchain.agents.create_agent``: a model node, a ToolNode
that runs each tool call as its own task, the agent loop between them), so everything below the
model is the real runtime. ``create_agent`` names each agent in its runs' metadata
(``lc_agent_name``), which is what lets ag-ui-langgraph tell the specialist's events from the
parent's and emit SUBAGENT_* itself.

* The specialist is a compiled graph invoked inside the parent's ``research_specialist`` tool:
  a LangGraph subgraph of the tool's task, checkpointed under it. An ``interrupt()`` inside it
  (its ``delete_file``) pauses the whole parent run, and the resume continues the specialist from
  its checkpoint. It keeps no memory between delegations.
* Client-declared (frontend) tools: the bridge puts the request's ``tools`` into the graph state;
  ``ClientTools`` offers them to the model and ends the run when the model calls one, so the
  client runs it and answers with a tool message in its next run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, hook_config
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from runtimes.langgraph.subagents import record_delegation
from runtimes.langgraph.tools import PARENT_TOOLS, SPECIALIST_TOOLS
from runtimes.script import PARENT_INSTRUCTIONS, RESEARCH_SPECIALIST, SPECIALIST_INSTRUCTIONS

PARENT_NAME = "demo_assistant"
SPECIALIST_DESCRIPTION = "Delegate a research task to the research specialist, which looks facts up and reports back."
"""What the parent's model reads about the delegation tool."""


class DemoState(AgentState):
    """The parent's state: the conversation, and the shared-state keys its tools write."""

    recipe: NotRequired[dict]
    document: NotRequired[str]


class ClientToolsState(AgentState):
    tools: NotRequired[list[dict]]
    """The tools the client declared in the request (the bridge writes them here)."""


class ClientTools(AgentMiddleware):
    """Offers the client's tools to the model and ends the run when the model calls one."""

    state_schema = ClientToolsState

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        declared = [_as_function(spec) for spec in request.state.get("tools") or () if isinstance(spec, dict)]
        return await handler(request.override(tools=[*request.tools, *declared]) if declared else request)

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: ClientToolsState, runtime: Runtime) -> dict[str, Any] | None:
        last = state["messages"][-1] if state["messages"] else None
        declared = {spec.get("name") for spec in state.get("tools") or () if isinstance(spec, dict)}
        if isinstance(last, AIMessage) and any(call["name"] in declared for call in last.tool_calls):
            return {"jump_to": "end"}
        return None


def _as_function(spec: dict) -> dict:
    """A client tool (``{name, description, parameters}``) in the function format models read."""
    return {
        "type": "function",
        "function": {
            "name": spec.get("name"),
            "description": spec.get("description") or "",
            "parameters": spec.get("parameters") or {"type": "object", "properties": {}},
        },
    }


def specialist_graph(model: BaseChatModel) -> CompiledStateGraph:
    """research_specialist: looks one fact up (or deletes, with approval) and reports back."""
    return create_agent(
        model, tools=list(SPECIALIST_TOOLS), system_prompt=SPECIALIST_INSTRUCTIONS, name=RESEARCH_SPECIALIST
    )


def delegation_tool(specialist: CompiledStateGraph) -> BaseTool:
    """``research_specialist(task)``: runs the specialist graph on the task, returns its answer."""

    @tool(RESEARCH_SPECIALIST, description=SPECIALIST_DESCRIPTION)
    async def research_specialist(
        task: str, config: RunnableConfig, tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> str:
        record_delegation(config, tool_call_id)
        result = await specialist.ainvoke({"messages": [HumanMessage(task)]})
        return result["messages"][-1].text

    return research_specialist


def parent_graph(
    model: BaseChatModel, specialist_model: BaseChatModel, checkpointer: BaseCheckpointSaver
) -> CompiledStateGraph:
    """The demo assistant the route serves, with its tools, the delegation and the client's tools."""
    return create_agent(
        model,
        tools=[*PARENT_TOOLS, delegation_tool(specialist_graph(specialist_model))],
        system_prompt=PARENT_INSTRUCTIONS,
        state_schema=DemoState,
        middleware=[ClientTools()],
        checkpointer=checkpointer,
        name=PARENT_NAME,
    )
