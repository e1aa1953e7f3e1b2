"""Server settings, read from the environment only (no files, no CLI flags).

One ``Settings`` object is built per app; every knob a user can turn is here, with its
environment name, so the README's environment table and this file say the same thing.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    """Everything configurable about the server. Environment variables win over defaults."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    # --- model -------------------------------------------------------------------------
    agui_model: Literal["scripted", "openai"] = Field(
        default="scripted",
        description="scripted: the built-in deterministic model (offline). "
        "openai: any OpenAI-compatible Chat Completions endpoint.",
    )
    openai_base_url: str | None = Field(default=None, description="e.g. http://localhost:11434/v1 for Ollama.")
    openai_api_key: str | None = Field(default=None, description="Sent as the bearer key; local servers ignore it.")
    agui_model_id: str = Field(default="gpt-4o-mini", description="Model name sent to the endpoint.")
    agui_model_timeout_s: float = Field(
        default=60.0, gt=0, description="A model endpoint silent for longer ends the run with MODEL_TIMEOUT."
    )
    agui_script_delay_ms: float = Field(
        default=15.0, ge=0, description="Pause between the scripted model's streamed chunks."
    )

    # --- protocol surface --------------------------------------------------------------
    agui_subagent_events: bool = Field(
        default=True,
        description="on: SUBAGENT_* lifecycle events and subagentRunId attribution. off: for clients that "
        "reject them; the specialist's content still streams, unattributed.",
    )
    agui_keepalive_s: float = Field(default=15.0, gt=0, description="SSE keepalive comment after this silence.")

    # --- limits and security -----------------------------------------------------------
    agui_max_body_bytes: int = Field(default=1_000_000, gt=0, description="Larger request bodies get 413.")
    agui_thread_cache_size: int = Field(
        default=256, gt=0, description="Per-thread agents kept in memory (least recently used are dropped)."
    )
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
