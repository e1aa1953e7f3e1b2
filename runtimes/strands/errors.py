"""Model failures on the Strands route as RUN_ERROR codes a client can act on.

ag-ui-strands turns any failure of the model call into ``RUN_ERROR`` itself, with the code
``STRANDS_FORCE_STOP`` and the provider's raw text ("Error code: 401 - {...}"). So every model
call of the route goes through ``runtimes.model_calls.model_call``, which names the failure where
it happens and records it for the run, and the shared stage
``runtimes.model_errors.name_model_errors`` puts the recorded code on the bridge's RUN_ERROR.

A model failure anywhere ends the run: Strands hands a specialist's failure to the parent as an
error tool result and would let the parent's model carry on; ``model_call`` refuses the run's
next call instead.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from strands.models.openai import OpenAIModel
from strands.types.streaming import StreamEvent

from runtimes.model_calls import model_call


class NamingOpenAIModel(OpenAIModel):
    """``OpenAIModel`` whose calls count against the run's budget and whose failures carry a
    readable message and a RUN_ERROR code."""

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[StreamEvent, None]:
        async for event in model_call(super().stream(*args, **kwargs), unreadable_is_the_model=True):
            yield event
