"""Every `mpsgen` command of the README's sh blocks, verbatim, from the top of a practice tree
holding each release's real files (the commands of one block run in order, on one tree)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def readme_blocks() -> list[list[str]]:
    blocks = []
    for body in _BLOCK.findall(README.read_text()):
        cmds = []
        for line in body.splitlines():
            line = line.split("   #")[0].strip()
            if line.startswith("mpsgen "):
                cmds.append(line)
        if cmds:
            blocks.append(cmds)
    return blocks


BLOCKS = readme_blocks()


def readme_setup_commands() -> list[str]:
    """The set-up commands of the README's sh blocks (those that install mpsgen)."""
    return [line.strip() for body in _BLOCK.findall(README.read_text()) for line in body.splitlines() if line.startswith("pip install ")]


def test_ci_runs_the_readme_setup_commands_verbatim_in_a_fresh_environment():
    """.ci/run makes a virtual environment of its own, then runs the README's set-up commands
    as written, in the README's order, each failing CI on its own."""
    ci = (README.parent / ".ci" / "run").read_text()
    setup = readme_setup_commands()
    assert setup == ["pip install -e . && mpsgen demo", "pip install -e '.[test]' && python -m pytest -q"]
    assert re.findall(r'^step "(.*)"$', ci, re.M) == setup
    assert "set -euo pipefail" in ci and 'bash -c "$1"' in ci
    venv = ci.index('-m venv "$work/venv"')
    assert venv < ci.index('source "$work/venv/bin/activate"') < ci.index("\nstep ")
    assert "apt-get install -y -q chromium" in ci


def test_the_readme_has_commands():
    assert sum(len(b) for b in BLOCKS) >= 10


@pytest.mark.parametrize("commands", BLOCKS, ids=[b[0][:60] for b in BLOCKS])
def test_readme_commands_run_verbatim(commands, tmp_path: Path, release: str, real_sources):
    from tests.conftest import git_init
    from tests.releases import build_release_tree

    root = build_release_tree(tmp_path / "pytorch", release, real_sources)
    git_init(root)
    for cmd in commands:
        args = shlex.split(cmd)[1:]
        proc = subprocess.run(
            [sys.executable, "-m", "mpsgen", *args], cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
        )
        # check exits 1 when it has findings (the practice tree has a few, as the README says)
        ok = (0, 1) if args[0] == "check" and "--explain" not in args else (0,)
        assert proc.returncode in ok, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr


def test_the_coverage_screen_the_readme_shows_is_what_coverage_prints(real_tree: Path, release: str, monkeypatch):
    """The README's sample of `mpsgen coverage` (its status table, on the practice tree of
    torch 2.13's files) is what the command prints at 80 columns."""
    from typer.testing import CliRunner

    from mpsgen.cli import app
    from tests.conftest import only_on
    from tests.releases import INSTALLED

    only_on(release, INSTALLED, "the README shows 2.13's practice tree")
    text = README.read_text(encoding="utf-8")
    start = text.index("```text\nMPS coverage of ")
    shown = text[start + len("```text\n") : text.index("```", start + 8)].rstrip("\n").split("\n")
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["coverage", "--root", str(real_tree)], catch_exceptions=False).stdout.split("\n")
    assert out[: len(shown)] == shown
