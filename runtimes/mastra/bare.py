"""@ag-ui/mastra's own endpoint alone, for ``make bench``: the sidecar's Node server, no Python in front.

``python -m runtimes.mastra.bare --port N`` (the runtime's ``bare_command``) serves MastraAgent at
``POST /mastra/agent`` on loopback port N straight from Node, with the same agents, model and
tools as the route: the sidecar still needs its model (the offline script) and its tools' results,
so this launcher serves those on loopback first (``loopback``), as the app does, then runs the
sidecar and waits. It stops the sidecar's whole process group on SIGTERM or SIGINT. The difference
to the route is what the app adds: the Python hop, the stages, the emitter, the pipeline.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from runtimes.config import RuntimeSettings
from runtimes.mastra.bridge import sidecar_env
from runtimes.mastra.loopback import LoopbackServer
from runtimes.mastra.setup import SIDECAR, node_executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    node = node_executable()
    if node is None:
        sys.exit("runtimes.mastra.bare: no node >= 22.13; run `python -m runtimes.mastra.setup`")
    settings = RuntimeSettings()
    loopback = LoopbackServer(delay_s=settings.agui_script_delay_ms / 1000, runs=lambda thread: None)
    loopback.start()
    env = {**os.environ, **sidecar_env(settings, loopback, port=args.port)}
    sidecar = subprocess.Popen(
        [node, "server.mjs"], cwd=SIDECAR, env=env, stdin=subprocess.PIPE, start_new_session=True
    )

    def stop(signum: int, frame: object) -> None:
        os.killpg(sidecar.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = sidecar.wait()
    loopback.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
