"""Server settings, read from the environment only (no files, no CLI flags).

One ``Settings`` object is built per app. What the runtimes read (the model, the offline script's
pacing, the thread cache) is inherited from ``runtimes.config.RuntimeSettings``; what only the app
reads is here. Together they are every knob a user can turn, with its environment name, so the
README's environment table and these two classes say the same thing.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from runtimes.config import RuntimeSettings


class Settings(RuntimeSettings):
    """Everything configurable about the server. Environment variables win over defaults."""

    # --- protocol surface --------------------------------------------------------------
    agui_subagent_events: bool = Field(
        default=True,
        description="on: SUBAGENT_* lifecycle events and subagentRunId attribution. off: for clients that "
        "reject them; the specialist's content still streams, unattributed.",
    )
    agui_keepalive_s: float = Field(default=15.0, gt=0, description="SSE keepalive comment after this silence.")

    # --- limits and security -----------------------------------------------------------
    agui_max_body_bytes: int = Field(default=1_000_000, gt=0, description="Larger request bodies get 413.")
    agui_token: str | None = Field(default=None, description="When set, every route but /ok needs this bearer token.")
    agui_cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated origins allowed by CORS; empty disables CORS."
    )

    @field_validator("agui_subagent_events", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in {"on", "off"}:
            return value.strip().lower() == "on"
        return value

    @field_validator("agui_cors_origins", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value
