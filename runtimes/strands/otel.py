"""Keep one known, harmless OpenTelemetry traceback out of the logs.

When a run stops early on a frontend tool call, ag-ui-strands stops reading Strands' stream and
Strands leaves its inner generators to the garbage collector. Finalized later, in another
``contextvars`` context, they reset OpenTelemetry context tokens there and OpenTelemetry logs
``Failed to detach context`` with a ``ValueError`` traceback. The span is already over; nothing is
lost. The fix belongs in Strands, so until then this filter drops exactly that record.
(Ordinary runs never produce it: the emitter core pulls each run in one context.)
"""

from __future__ import annotations

import logging

OTEL_CONTEXT_LOGGER = "opentelemetry.context"


class DetachedContextNoise(logging.Filter):
    """Drops ``Failed to detach context`` records caused by a token from another context."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (record.getMessage() == "Failed to detach context" and isinstance(error, ValueError))


def silence_detached_context_noise() -> None:
    """Install the filter once per process."""
    otel_logger = logging.getLogger(OTEL_CONTEXT_LOGGER)
    if not any(isinstance(existing, DetachedContextNoise) for existing in otel_logger.filters):
        otel_logger.addFilter(DetachedContextNoise())
