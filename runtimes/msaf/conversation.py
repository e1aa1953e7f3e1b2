"""The conversation the MAF route sends its model is one a strict provider accepts.

agent-framework-ag-ui 1.7.0 (``_inject_state_context`` in ``_agent_run.py``) shows the model the
client's state as a user message it inserts right before the request's last user message. On a
resume that last message is the approval answer, which MAF then turns into the tool result, so
the model receives ``[..., user, assistant(tool_calls), user(state), tool]``: an assistant message
with ``tool_calls`` not followed at once by its tool messages, which OpenAI and every strict
server refuse with HTTP 400 (after the approved tool has already run).

:class:`StateContextPlacement` moves that state message to where upstream means it to be: right
before the user message that opened the turn, so the state still reaches the model, still as
untrusted user content (never system authority). The state message is known by the text upstream
writes (``STATE_CONTEXT_PREFIX``); if upstream changes it, the state message stays where it is and
tests/test_real_model.py (an approved resume against a strict endpoint) fails loudly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from agent_framework import ChatContext, ChatMiddleware, Message

STATE_CONTEXT_PREFIX = "Application state supplied by the AG-UI client follows."


class StateContextPlacement(ChatMiddleware):
    """Every model call of the route sends the state message before the turn's user message."""

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        context.messages[:] = placed(context.messages)
        await call_next()


def placed(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with the state message(s) moved right before the last user message."""
    state = [m for m in messages if m.role == "user" and m.text.startswith(STATE_CONTEXT_PREFIX)]
    if not state:
        return list(messages)
    rest = [m for m in messages if all(m is not s for s in state)]
    turn = max((i for i, m in enumerate(rest) if m.role == "user"), default=len(rest))
    return [*rest[:turn], *state, *rest[turn:]]
