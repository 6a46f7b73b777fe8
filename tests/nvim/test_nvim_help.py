"""The plugin's help on a plain runtimepath install (no plugin manager to run :helptags): the
real headless `nvim` finds `:h kebab-events` through the tags shipped in client-nvim/doc, and
those tags are the ones :helptags makes from kebab.txt today.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_nvim_client import CLIENT, NVIM

from conftest import run_editor

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim binary (see test_nvim_client.py)")
REGENERATE = "nvim --headless --clean -c 'helptags client-nvim/doc' -c q"


def _nvim(cwd: Path, *commands: str) -> str:
    assert NVIM is not None
    argv = [NVIM, "--headless", "--clean"]
    for command in commands:
        argv += ["-c", command]
    return run_editor([*argv, "-c", "qa!"], cwd, {"PATH": "/usr/bin:/bin", "HOME": str(cwd)}, 30)


@pytest.mark.parametrize("tag", ["kebab-events", ":KebabAsk", "kebab.related()", ":KebabLink"])
def test_help_opens_on_a_plain_runtimepath_install(tmp_path: Path, tag: str) -> None:
    seen = tmp_path / "seen.txt"
    output = _nvim(
        tmp_path,
        f"set rtp+={CLIENT}",
        f"try | help {tag} | catch | call writefile([v:exception], '{seen}') | endtry",
        f"if !filereadable('{seen}') | call writefile([expand('%:t'), getline('.')], '{seen}') "
        "| endif",
    )
    assert seen.exists(), output
    file, *line = seen.read_text(encoding="utf-8").splitlines()
    assert file == "kebab.txt", f"{file} (regenerate the tags with: {REGENERATE})"
    assert f"*{tag}*" in line[0]


def test_the_shipped_tags_are_what_helptags_makes_of_the_help_today(tmp_path: Path) -> None:
    doc = tmp_path / "doc"
    shutil.copytree(CLIENT / "doc", doc)
    (doc / "tags").unlink()
    _nvim(tmp_path, f"helptags {doc}")
    made = (doc / "tags").read_text(encoding="utf-8")
    shipped = (CLIENT / "doc" / "tags").read_text(encoding="utf-8")
    assert shipped == made, f"client-nvim/doc/tags is stale: regenerate it with {REGENERATE}"
