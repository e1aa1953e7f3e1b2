"""Fixtures shared by several test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine import redis_server
from tests.fake_openai import fake_openai_server


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A local OpenAI-compatible endpoint (``tests/fake_openai.py``) for real-model tests."""
    with fake_openai_server() as url:
        yield url


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    """A real ``redis-server`` of the test module's own, as its URL: replicas share it, and what one
    module fills (a route's parked approvals) or restarts stays that module's."""
    with redis_server() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real ``redis-server`` (``tests/engine.py``) for the whole session, as its URL; tests that
    share it keep to keys of their own."""
    with redis_server() as url:
        yield url
