"""Each registered runtime's own set-up beyond the Python lock: ``python -m deploy.setup``.

Why: a runtime may need more than Python packages (a Node sidecar's locked modules, a Node new
enough to run them). It declares a module that installs that (``Runtime.setup``), and every place
that installs the app runs them all through this one command, after the Python install, with the
Python of the environment the app is installed in: ``make setup`` (so ``make serve`` and
``make test``), the image build (``Dockerfile``) and the boot check (``deploy/boot_check.py``).
Each runtime's module installs into its own installed package and is quick when nothing changed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

from app.registry import RUNTIMES


def main() -> int:
    for runtime in RUNTIMES:
        if runtime.setup:
            print(f"deploy.setup: {runtime.name}: python -m {runtime.setup}", flush=True)
            # From an empty directory: `-m` imports from the current one first, and the image build
            # runs this from its source tree (WORKDIR /src), which would be set up instead of the
            # installed package the image keeps.
            with tempfile.TemporaryDirectory(prefix="agui-setup-") as empty:
                result = subprocess.run([sys.executable, "-m", runtime.setup], cwd=empty)
            if result.returncode != 0:
                print(f"deploy.setup: {runtime.name} failed with exit code {result.returncode}", file=sys.stderr)
                return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
