"""Model failures on the MAF route, named for the RUN_ERROR a client can act on.

MAF wraps every provider failure in ``ChatClientException`` whose text starts with a class repr;
the cause chain still holds the OpenAI SDK error, which the shared classifier
(``runtimes.model_errors``) names. What is MAF's own: a ``ChatClientException`` with nothing
recognisable underneath is still a model failure (MODEL_ERROR). The failure escapes the runner as
an exception; the pipeline's error boundary asks the bridge's ``describe_error`` (this function)
for its code.
"""

from __future__ import annotations

from agent_framework.exceptions import ChatClientException
from agent_framework_ag_ui._approval_lifecycle import ApprovalCapacityError

from runtimes import model_errors
from runtimes.model_errors import ModelError, causes


def describe(exc: BaseException) -> ModelError | None:
    """The model failure behind ``exc``, or None when the model is not what failed."""
    named = model_errors.describe(exc)
    if named is not None:
        return named
    chain = causes(exc)
    if any(isinstance(error, ApprovalCapacityError) for error in chain):  # the runner's store is full
        return ModelError("APPROVAL_CAPACITY", "The server holds as many waiting approvals as it may; try again later.")
    if any(isinstance(error, ChatClientException) for error in chain):
        return ModelError("MODEL_ERROR", f"The model call failed: {chain[-1]}")
    return None
