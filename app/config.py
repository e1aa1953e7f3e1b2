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

from app.approvals import ApprovalLimits
from app.guard import Limits
from app.runs import RunLimits
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

    # --- what one request may cost (app/guard.py; docs/errors.md) ---------------------------
    agui_max_body_bytes: int = Field(default=1_000_000, gt=0, description="Larger request bodies get 413.")
    agui_body_timeout_s: float = Field(default=30.0, gt=0, description="A body still arriving after this gets 408.")
    agui_max_json_depth: int = Field(default=32, gt=1, description="Deeper JSON nesting gets 422 too_deep.")
    agui_max_number_digits: int = Field(
        default=32, gt=0, description="A number with more digits gets 422 number_too_large."
    )
    agui_max_messages: int = Field(default=200, gt=0, description="More messages get 422 too_many_messages.")
    agui_max_tools: int = Field(default=128, gt=0, description="More client tools get 422 too_many_tools.")
    agui_max_tools_bytes: int = Field(
        default=131_072, gt=0, description="Client tool definitions larger than this (JSON) get 422 tools_too_large."
    )
    agui_max_id_length: int = Field(default=256, gt=0, description="A longer id gets 422 id_too_long.")

    # --- parked approvals (app/approvals.py; docs/errors.md) --------------------------------
    agui_max_parked_approvals: int = Field(
        default=500, gt=0, description="Threads that may wait for an approval at once, per route."
    )
    agui_approval_min_age_s: float = Field(
        default=600.0, ge=0, description="A waiting approval is never evicted for a newer one before this age."
    )
    agui_max_approvals_per_run: int = Field(default=16, gt=0, description="Approvals one run may ask for at once.")
    agui_max_approval_bytes: int = Field(
        default=65_536, gt=0, description="Size (JSON) of the approvals one run may park."
    )

    # --- runs and their replay logs (app/runs.py; docs/deploy.md) ----------------------------
    agui_detached_run_s: float = Field(
        default=0.0, ge=0, description="A run goes on this long after its last client left (0: it stops at once)."
    )
    agui_replay_s: float = Field(
        default=60.0, gt=0, description="A finished run's events stay this long for a client that reconnects."
    )
    agui_replay_max_events: int = Field(default=10_000, gt=0, description="Events of one run kept for reconnects.")
    agui_lease_s: float = Field(
        default=10.0,
        gt=0,
        description="A run holds its thread this long past its last heartbeat (a replica that died frees it then).",
    )

    # --- security ------------------------------------------------------------------------
    agui_token: str | None = Field(default=None, description="When set, every route but /ok needs this bearer token.")
    agui_tokens: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="Named tokens, `name:token,name:token`: each caller's threads are its own (with AGUI_TOKEN "
        "too, that one is named `default`).",
    )
    agui_cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated origins allowed by CORS; empty disables CORS."
    )

    def tokens(self) -> dict[str, str]:
        """Every accepted token and the principal it names: "" when one token is all there is."""
        named = {token: name for name, token in self.agui_tokens.items()}
        if self.agui_token:
            named.setdefault(self.agui_token, "default")
        return named if len(named) > 1 else dict.fromkeys(named, "")

    def limits(self) -> Limits:
        """What one request may cost, for the request guard."""
        return Limits(
            max_body_bytes=self.agui_max_body_bytes,
            body_timeout_s=self.agui_body_timeout_s,
            max_json_depth=self.agui_max_json_depth,
            max_number_digits=self.agui_max_number_digits,
            max_messages=self.agui_max_messages,
            max_tools=self.agui_max_tools,
            max_tools_bytes=self.agui_max_tools_bytes,
            max_id_length=self.agui_max_id_length,
        )

    def run_limits(self) -> RunLimits:
        """How long runs live without clients, and their replay logs, for ``app.runs``."""
        return RunLimits(
            detached_s=self.agui_detached_run_s,
            replay_s=self.agui_replay_s,
            max_events=self.agui_replay_max_events,
            lease_s=self.agui_lease_s,
        )

    def approval_limits(self) -> ApprovalLimits:
        """What parked approvals may cost, for the approval ledger."""
        return ApprovalLimits(
            max_parked=self.agui_max_parked_approvals,
            min_age_s=self.agui_approval_min_age_s,
            max_per_run=self.agui_max_approvals_per_run,
            max_bytes=self.agui_max_approval_bytes,
        )

    @field_validator("agui_subagent_events", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in {"on", "off"}:
            return value.strip().lower() == "on"
        return value

    @field_validator("agui_tokens", mode="before")
    @classmethod
    def _named_tokens(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        named: dict[str, str] = {}
        for item in filter(None, (part.strip() for part in value.split(","))):
            name, sep, token = item.partition(":")
            if (
                not sep
                or not name.strip()
                or not token.strip()
                or name.strip() in named
                or token.strip() in named.values()
            ):
                raise ValueError("AGUI_TOKENS is `name:token,name:token`: distinct names, distinct non-empty tokens")
            named[name.strip()] = token.strip()
        return named

    @field_validator("agui_cors_origins", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value
