"""The one small interface every runtime implements to appear on the app.

A runtime package exposes a module-level ``runtime`` object of this shape; ``app.factory``
lists them. Adding a runtime = one new package under ``runtimes/`` + one line in
``app.factory.RUNTIMES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from typing import Protocol

from fastapi import FastAPI

from app.config import Settings


class Runtime(Protocol):
    """What the app needs from a runtime: who it is, where it lives, and how to mount it."""

    name: str
    """Short id, also the first path segment: ``strands`` -> ``POST /strands/agent``."""
    title: str
    """Human name of the agent runtime."""
    bridge_package: str
    """The upstream AG-UI bridge distribution this route stands on."""

    @property
    def route(self) -> str: ...

    def mount(self, app: FastAPI, settings: Settings) -> None:
        """Register ``POST self.route`` on ``app``, wired for ``settings``."""


@dataclass(frozen=True)
class RuntimeInfo:
    """What ``GET /`` says about a mounted runtime."""

    name: str
    title: str
    route: str
    bridge_package: str
    bridge_version: str


def describe(runtime: Runtime) -> RuntimeInfo:
    return RuntimeInfo(
        name=runtime.name,
        title=runtime.title,
        route=runtime.route,
        bridge_package=runtime.bridge_package,
        bridge_version=metadata.version(runtime.bridge_package),
    )


def agent_route(name: str) -> str:
    """The one route shape every runtime uses."""
    return f"/{name}/agent"
