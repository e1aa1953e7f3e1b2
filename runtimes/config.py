"""What a runtime is configured with, read from the environment only.

The model settings live here, below the app, because every runtime package builds its models
from them and runtimes never import ``app``; ``app.config.Settings`` extends this class with what
only the HTTP layer reads (limits, keepalive, token, CORS), so one object carries both and the
README's environment table and these two classes say the same thing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class RuntimeSettings(BaseSettings):
    """Everything a runtime reads. Environment variables win over defaults."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

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
    agui_max_model_calls: int = Field(
        default=20, gt=0, description="Model calls a run may make, its specialists' included (runtimes/budget.py)."
    )
    agui_state_url: str | None = Field(
        default=None,
        description="redis://host:port/db: thread state in that engine, so any worker or replica serves any "
        "request. Unset: in this process's memory (one process).",
    )
    agui_thread_cache_size: int = Field(
        default=256, gt=0, description="Per-thread agents kept in memory (least recently used are dropped)."
    )
