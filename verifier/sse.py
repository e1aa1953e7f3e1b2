"""Decode an SSE body into AG-UI event dicts, so captures and live responses can be verified."""

from __future__ import annotations

import json


def parse_sse(raw: bytes) -> list[dict]:
    """Events from the ``data:`` lines of each frame; comments, ids and blank frames are skipped."""
    events = []
    for frame in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].removeprefix(b" ") for line in frame.split(b"\n") if line.startswith(b"data:")]
        if data:
            events.append(json.loads(b"\n".join(data)))
    return events
