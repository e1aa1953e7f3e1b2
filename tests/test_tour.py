"""``agui-tour`` (``verifier.tour``) against a live server: every route, every surface, and a reason
for each one that does not pass."""

from __future__ import annotations

import pytest

from tests.fake_openai import fake_openai_server, real_model_settings
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, live_server
from verifier.surfaces import SURFACES
from verifier.tour import main


def test_the_offline_model_passes_everywhere_but_the_declared_gaps(capsys: pytest.CaptureFixture[str]) -> None:
    with live_server() as base:
        assert main([base]) == 0
    table = capsys.readouterr().out
    header, *rows = table.split("\n\n")[0].splitlines()
    assert header.split() == ["surface", *ROUTES]
    assert len(rows) == len(SURFACES)
    for row, surface in zip(rows, SURFACES, strict=True):
        marks = row.removeprefix(surface.title).split()
        declared = ["gap" if RUNTIME_BY_ROUTE[route].known.gap(surface.title) else "pass" for route in ROUTES]
        assert marks == declared, row


def test_a_failing_model_is_named_in_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    with fake_openai_server() as endpoint, live_server(real_model_settings(endpoint, "fake-500")) as base:
        assert main([base, "--route", ROUTES[0]]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "RUN_ERROR MODEL_ERROR" in out
