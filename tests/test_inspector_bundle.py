"""The inspector's bundled @ag-ui/client is exactly what web/'s lock builds, and the same client the
suite's harness drives.

Why committed and checked rather than built at install: the Docker image has no Node, and a plain
``docker build`` of a fresh clone must still ship the page. ``make inspector-bundle`` rebuilds it;
this test fails when the lock or web/client.js changed without a rebuild.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
WEB = ROOT / "web"
BUNDLE = ROOT / "app" / "inspector" / "static" / "vendor" / "ag-ui-client.js"


def _locked_client_version(folder: Path) -> str:
    lock = json.loads((folder / "package-lock.json").read_text())
    return lock["packages"]["node_modules/@ag-ui/client"]["version"]


def test_the_page_bundles_the_client_the_harness_drives() -> None:
    assert _locked_client_version(WEB) == _locked_client_version(ROOT / "tests" / "client")


@pytest.mark.skipif(
    shutil.which("node") is None or not (WEB / "node_modules" / "esbuild").is_dir(),
    reason="web/ is not installed: run `make inspector-deps` (npm ci --prefix web)",
)
def test_committed_bundle_is_what_the_lock_builds(tmp_path: Path) -> None:
    rebuilt = tmp_path / "ag-ui-client.js"
    subprocess.run(["node", str(WEB / "build.mjs"), str(rebuilt)], check=True, timeout=120)
    assert rebuilt.read_bytes() == BUNDLE.read_bytes(), "stale bundle: run `make inspector-bundle` and commit it"
