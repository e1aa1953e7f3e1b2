"""Every surface of every route on a real model: each runtime's own OpenAI client, over real HTTP,
against an endpoint as strict as OpenAI's Chat Completions API (``tests/fake_openai.py``).

The endpoint follows the offline script, so each surface must come out as it does offline: the
runtime matrix's predicates (``tests/matrix.py``) give the same verdict on the live thread as on
the route's committed offline capture, and no request any route sent was refused as invalid (an
approved resume whose conversation a strict provider rejects fails here). Both ways a server
streams a tool call are driven: in argument pieces (OpenAI) and whole, in one final chunk (Ollama,
llama.cpp). A call that arrives whole cannot fill a predictive state key while it streams, so there
that surface is expected partial, whatever the route.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import fake_openai
from tests.capture import against_offline
from tests.fake_openai import fake_openai_server, real_model_settings
from tests.wire import ROUTES, RUNTIME_BY_ROUTE, live_server, play
from verifier.scenarios import SCENARIOS, Scenario

WHOLE_CALLS = "scripted-whole-calls"


@pytest.fixture(scope="module", params=["scripted", WHOLE_CALLS])
def model(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def base(model: str) -> Iterator[str]:
    with fake_openai_server() as endpoint, live_server(real_model_settings(endpoint, model)) as url:
        yield url


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.surface for scenario in SCENARIOS])
def test_every_surface_comes_out_as_it_does_offline(base: str, model: str, route: str, scenario: Scenario) -> None:
    refused = len(fake_openai.refused)
    exchanges = play(base, route, scenario)
    assert fake_openai.refused[refused:] == [], "a request the route sent its model was invalid"
    surface, verdict, offline = against_offline(RUNTIME_BY_ROUTE[route].name, scenario.surface, exchanges)
    expected = "partial" if model == WHOLE_CALLS and scenario.surface == "predictive_state" else offline.status
    assert verdict.status == expected, f"{surface.title}: {verdict.observed or 'yes'} (offline: {offline})"
