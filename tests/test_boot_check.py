"""The boot check must fail when the image would not serve, and pass when it would.

``check`` is pointed at the current virtual environment and a working directory whose
``deploy/serve.py`` is what ``python -m deploy.serve`` finds first: the real tree (it passes),
a copy with a runtime that cannot be imported, or a fake server whose routes misbehave. The
slow fresh-venv provisioning runs for real in ``make boot-check``, not here. The remaining
tests keep the Dockerfile, ``.dockerignore`` and the check describing the same image.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import socket
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from deploy import boot_check
from deploy.loopback import free_port
from deploy.serve import JsonFormatter, ServeConfig

ROOT = Path(__file__).resolve().parents[1]
PYTHON = Path(sys.executable)


def _packages() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]


def _copy_tree(dest: Path) -> Path:
    for package in _packages():
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _refused(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_passes_on_the_real_tree() -> None:
    report = boot_check.check(PYTHON, ROOT)
    assert report.ok, report.render()
    routes = {line.split()[0] for line in report.passed if line.startswith("/")}
    assert len(routes) >= 2, report.render()
    assert {"plain message", "delegation", "approval + resume"} <= {
        line.split(" ", 1)[1].split(":")[0] for line in report.passed if line.startswith("/")
    }, report.render()


def test_fails_when_a_runtime_module_cannot_be_imported(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path)
    runtime = sorted((tree / "runtimes").glob("*/__init__.py"))[0]
    runtime.write_text(runtime.read_text() + "\nimport boot_check_missing_module  # injected fault\n")
    port = free_port()

    report = boot_check.check(PYTHON, tree, port=port, boot_timeout_s=60)

    assert not report.ok
    assert report.failures[0].startswith("boot: server exited with code"), report.render()
    assert "boot_check_missing_module" in report.log_tail
    assert "boot_check_missing_module" in report.render()  # the reader sees why
    assert _refused(port)


FAKE_SERVER = '''
"""A stand-in for deploy.serve: one healthy route and one for each way a route can fail."""
import asyncio, json, os
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

def frame(kind, **fields):
    return "data: " + json.dumps({"type": kind, **fields}) + "\\n\\n"

def run(*middle, outcome=None):
    end = {"threadId": "t", "runId": "r", **({"outcome": outcome} if outcome else {})}
    return [frame("RUN_STARTED", threadId="t", runId="r"), *middle, frame("RUN_FINISHED", **end)]

TEXT = [frame("TEXT_MESSAGE_START", messageId="m", role="assistant"),
        frame("TEXT_MESSAGE_CONTENT", messageId="m", delta="hi"), frame("TEXT_MESSAGE_END", messageId="m")]
SUBAGENT = [frame("SUBAGENT_STARTED", subagentRunId="s", name="research_specialist"),
            frame("SUBAGENT_FINISHED", subagentRunId="s")]
INTERRUPT = {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approve delete_file"}]}

def sse(events):
    return StreamingResponse(iter(events), media_type="text/event-stream")

async def good(request):
    body = await request.json()
    prompt = body["messages"][-1]["content"].lower()
    if body.get("resume"):
        return sse(run(*TEXT))
    if "delete" in prompt:
        return sse(run(outcome=INTERRUPT))
    return sse(run(*(SUBAGENT if "research" in prompt else []), *TEXT))

async def quiet(request):
    return sse(run(*TEXT))

async def invalid(request):
    return sse(run(TEXT[1]))

async def erroring(request):
    failed = frame("RUN_ERROR", message="model exploded", code="BOOM")
    return sse([frame("RUN_STARTED", threadId="t", runId="r"), failed])

async def broken(request):
    return JSONResponse({"detail": "internal error"}, status_code=500)

async def stuck(request):
    async def trickle():
        yield frame("RUN_STARTED", threadId="t", runId="r")
        while True:
            await asyncio.sleep(0.2)
            yield ": keepalive\\n\\n"
    return StreamingResponse(trickle(), media_type="text/event-stream")

ROUTES = {"/good/agent": good, "/quiet/agent": quiet, "/invalid/agent": invalid, "/erroring/agent": erroring,
          "/broken/agent": broken, "/stuck/agent": stuck}

async def ok(request):
    return JSONResponse({"ok": True})

async def listing(request):
    return JSONResponse({"runtimes": [{"route": route} for route in ROUTES]})

app = Starlette(routes=[Route("/ok", ok), Route("/", listing),
                        *(Route(path, handler, methods=["POST"]) for path, handler in ROUTES.items())])
print("fake server starting", flush=True)
uvicorn.run(app, host=os.environ["HOST"], port=int(os.environ["PORT"]), log_level="warning")
'''


def test_names_each_failing_route_and_step(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "__init__.py").write_text("")
    (tmp_path / "deploy" / "serve.py").write_text(textwrap.dedent(FAKE_SERVER))
    port = free_port()

    report = boot_check.check(PYTHON, tmp_path, port=port, run_timeout_s=2)
    failures = "\n".join(report.failures)

    assert not report.ok
    assert "/good/agent" not in failures
    assert "/good/agent plain message: 5 events" in report.passed
    assert "/good/agent approval + resume: 1 interrupt(s) approved, 2 + 5 events" in report.passed
    assert "/quiet/agent delegation: no SUBAGENT_STARTED" in failures
    assert "/quiet/agent approval + resume: RUN_FINISHED with outcome 'success', expected 'interrupt'" in failures
    assert "/quiet/agent plain message" not in failures
    assert "/invalid/agent plain message: verifier: event 1 TEXT_MESSAGE_CONTENT" in failures
    assert "/erroring/agent plain message: RUN_ERROR BOOM: model exploded" in failures
    assert "/broken/agent plain message: HTTP 500" in failures
    assert "/broken/agent delegation: HTTP 500" in failures
    assert "/stuck/agent plain message: the stream was still open after 2 s" in failures
    assert "fake server starting" in report.render()  # the log tail is shown on failure
    assert _refused(port)


# --- the Dockerfile, .dockerignore and the check describe one image ----------------------


def _dockerfile_instructions() -> list[str]:
    """Dockerfile instructions with continuation lines joined and comments dropped."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _run_commands() -> list[tuple[list[str], list[str]]]:
    """Each RUN instruction as (its --options, its command words)."""
    runs = [line.split()[1:] for line in _dockerfile_instructions() if line.startswith("RUN ")]
    split = [next((i for i, word in enumerate(words) if not word.startswith("--")), len(words)) for words in runs]
    return [(words[:cut], words[cut:]) for words, cut in zip(runs, split, strict=True)]


def test_dockerfile_installs_exactly_like_the_boot_check() -> None:
    syncs = [tuple(command[2:]) for _, command in _run_commands() if command[:2] == ["uv", "sync"]]
    assert syncs == [step[1:] for step in boot_check.INSTALL_STEPS]
    assert all(step[0] == "sync" for step in boot_check.INSTALL_STEPS)


def test_dockerfile_runs_the_runtimes_setup_after_the_install_like_the_boot_check() -> None:
    commands = [command for _, command in _run_commands()]
    setup = [index for index, command in enumerate(commands) if command[1:] == list(boot_check.RUNTIME_SETUP[1:])]
    last_sync = max(index for index, command in enumerate(commands) if command[:2] == ["uv", "sync"])
    assert len(setup) == 1 and setup[0] > last_sync, commands
    assert commands[setup[0]][0] == "/opt/venv/bin/python"  # the installed environment's Python


def test_every_download_step_can_trust_an_extra_ca_bundle() -> None:
    """The build secret ``ca-certificates`` stands in for the bundle pip, uv, apt and npm (the
    runtimes' set-up) are told to trust."""
    env = " ".join(line for line in _dockerfile_instructions() if line.startswith("ENV "))
    bundle = re.search(r"PIP_CERT=(\S+)", env)
    assert bundle and "UV_SYSTEM_CERTS=1" in env and f"NPM_CONFIG_CAFILE={bundle.group(1)}" in env
    mount = f"--mount=type=secret,id=ca-certificates,target={bundle.group(1)}"
    downloaders = ("pip", "uv", "apt-get", "/opt/venv/bin/python")  # the last: the runtimes' set-up (npm ci)
    downloads = [(options, command) for options, command in _run_commands() if command[0] in downloaders]
    assert len(downloads) == 1 + 1 + len(boot_check.INSTALL_STEPS) + 1
    assert all(options == [mount] for options, _ in downloads), downloads


def test_dockerfile_entrypoint_is_the_boot_checks() -> None:
    entrypoints = [line for line in _dockerfile_instructions() if line.startswith("ENTRYPOINT ")]
    assert [json.loads(line.removeprefix("ENTRYPOINT ")) for line in entrypoints] == [list(boot_check.ENTRYPOINT)]


def test_build_context_holds_every_shipped_package_and_no_tests(tmp_path: Path) -> None:
    boot_check.build_context(ROOT, tmp_path)
    shipped = {path.name for path in tmp_path.iterdir()}
    assert set(_packages()) <= shipped, "add the missing package to .dockerignore as !name/"
    assert {"pyproject.toml", "uv.lock"} <= shipped
    assert not {"tests", ".venv", ".git", "node_modules"} & shipped
    assert not list(tmp_path.rglob("__pycache__"))


# --- deploy.serve's environment -----------------------------------------------------------


def test_serve_config_defaults_and_overrides() -> None:
    assert ServeConfig.from_env({}) == ServeConfig()
    config = ServeConfig.from_env(
        {
            "HOST": "0.0.0.0",
            "PORT": "9000",
            "AGUI_WORKERS": "2",
            "AGUI_STATE_URL": "redis://127.0.0.1:6379/0",
            "LOG_FORMAT": "JSON",
            "LOG_LEVEL": "Warning",
        }
    )
    assert (config.host, config.port, config.workers, config.log_format, config.log_level) == (
        "0.0.0.0",
        9000,
        2,
        "json",
        "warning",
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PORT": "http"}, "PORT='http' is not an integer"),
        ({"PORT": "70000"}, "PORT=70000 must be at most 65535"),
        ({"AGUI_WORKERS": "0"}, "AGUI_WORKERS=0 must be at least 1"),
        ({"AGUI_WORKERS": "2"}, "AGUI_WORKERS=2 needs AGUI_STATE_URL"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT='xml' is not one of plain, json"),
        ({"LOG_LEVEL": "loud"}, "LOG_LEVEL='loud' is not one of"),
    ],
)
def test_serve_config_names_the_bad_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ServeConfig.from_env(env)


def test_json_log_lines_are_json() -> None:
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "Started %s", ("server",), None)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "Started server"
    assert (line["level"], line["logger"]) == ("info", "uvicorn.error")
