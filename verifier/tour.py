"""``agui-tour``: drive every sample prompt on every route of a running server and say what works.

    agui-tour http://127.0.0.1:8000            (or ``make tour`` against ``make serve``)

For people who bring their own model: start the server on it (``AGUI_MODEL=openai`` ...), then
run this. It reads the routes from ``GET /``, plays every scenario of ``verifier.scenarios`` on
each (the first run, then the approve / reject / cancel resume or the frontend tool's answer),
checks every stream with the protocol verifier, judges each surface with ``verifier.surfaces``
and prints a table route x surface, then the first reason of every failure. The reason tells the
two kinds of failure apart: ``invalid stream: ...`` is the server breaking the protocol; anything
else is what came back (a model that answered in text instead of calling the tool, a RUN_ERROR
such as ``MODEL_TIMEOUT``). A surface the server declares it cannot show on a route (``gaps`` in
``GET /``, each with its upstream cause) is marked ``gap``, not ``FAIL``. Exit code 0 when every
surface passes, or is a declared gap, on every route.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import httpx

from verifier.scenarios import SCENARIO_BY_SURFACE, play
from verifier.sse import parse_sse
from verifier.surfaces import SURFACES, Played, Surface, judge


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""
    gap: bool = False
    """The server declares this surface a gap on this route (``GET /``): not a failure of the run."""

    @property
    def mark(self) -> str:
        return "pass" if self.ok else "gap" if self.gap else "FAIL"


def tour_route(client: httpx.Client, url: str, surface: Surface) -> Verdict:
    """Every scenario of ``surface`` on the route at ``url``; the first reason it fails, if any."""
    for name in surface.scenarios:

        def post(body: dict) -> list[dict]:
            response = client.post(url, json=body, headers={"accept": "text/event-stream"})
            if response.status_code != 200:
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
            return parse_sse(response.content)

        try:
            turns = play(SCENARIO_BY_SURFACE[name], post)
        except (httpx.HTTPError, RuntimeError) as exc:
            return Verdict(False, f"`{name}`: {exc}")
        played = Played(requests=[request for request, _ in turns], runs=[events for _, events in turns])
        errors = [e for events in played.runs for e in events if e.get("type") == "RUN_ERROR"]
        check = judge(played, surface.predicate)
        if check.status != "yes":
            error = f"; RUN_ERROR {errors[0].get('code')}: {errors[0].get('message')}" if errors else ""
            return Verdict(False, f"`{name}` {check.status}: {check.observed}{error}")
    return Verdict(True)


def render(routes: list[str], verdicts: dict[tuple[str, str], Verdict]) -> str:
    width = max(len(surface.title) for surface in SURFACES)
    columns = [max(len(route), 4) for route in routes]

    def row(first: str, cells: list[str]) -> str:
        return f"{first:<{width}}  " + "  ".join(f"{cell:<{w}}" for cell, w in zip(cells, columns, strict=True))

    lines = [row("surface", routes)]
    for surface in SURFACES:
        lines.append(row(surface.title, [verdicts[(route, surface.title)].mark for route in routes]))
    failures = [(key, verdict) for key, verdict in verdicts.items() if not verdict.ok]
    if failures:
        lines += ["", "not passing (first reason each):"]
        lines += [f"- {route} · {title} ({verdict.mark}): {verdict.reason}" for (route, title), verdict in failures]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agui-tour", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("url", help="the server's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--route", action="append", help="only this route (repeatable); default: every route")
    parser.add_argument("--token", help="bearer token, when the server has AGUI_TOKEN set")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take (default 300)")
    args = parser.parse_args(argv)
    base = args.url.rstrip("/")
    headers = {"authorization": f"Bearer {args.token}"} if args.token else {}
    with httpx.Client(timeout=args.timeout, headers=headers) as client:
        listing = client.get(f"{base}/", headers={"accept": "application/json"})
        if listing.status_code != 200:
            raise SystemExit(f"agui-tour: GET {base}/ answered HTTP {listing.status_code}: {listing.text[:200]}")
        runtimes = {runtime["route"]: runtime for runtime in listing.json()["runtimes"]}
        routes = args.route or list(runtimes)
        verdicts = {}
        for route in routes:
            gaps = {gap["surface"]: gap for gap in runtimes.get(route, {}).get("gaps", [])}
            for surface in SURFACES:
                verdict = tour_route(client, base + route, surface)
                if not verdict.ok and surface.title in gaps:
                    gap = gaps[surface.title]
                    verdict = Verdict(False, f"{verdict.reason} (declared, {gap['cause']}: {gap['reason']})", gap=True)
                verdicts[(route, surface.title)] = verdict
                print(f"{route} {surface.title}: {verdict.mark}", file=sys.stderr, flush=True)
    print(render(routes, verdicts))
    return 0 if all(verdict.ok or verdict.gap for verdict in verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
