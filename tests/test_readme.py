"""Every `mpsgen` command of the sh blocks of the README and of the docs pages (docs/*.md),
verbatim, from the top of a practice tree holding each release's real files (the commands of
one block run in order, on one tree)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = README.parent / "docs"
# the README, then the docs pages the commands moved to
PAGES = [README, *sorted(DOCS.glob("*.md"))]
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def page_blocks(page: Path) -> list[list[str]]:
    """The `mpsgen` commands of each sh block of a page (a block without one is left out)."""
    blocks = []
    for body in _BLOCK.findall(page.read_text(encoding="utf-8")):
        cmds = []
        for line in body.splitlines():
            line = line.split("   #")[0].strip()
            if line.startswith("mpsgen "):
                cmds.append(line)
        if cmds:
            blocks.append(cmds)
    return blocks


def readme_blocks() -> list[list[str]]:
    return page_blocks(README)


# (page, commands) of every block of the README and the docs
BLOCKS = [(page.relative_to(README.parent).as_posix(), cmds) for page in PAGES for cmds in page_blocks(page)]


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
    """The README's first op is commands the test runs (coverage to check), and the docs hold
    the rest: every command the README showed before it became a front door."""
    first = readme_blocks()
    assert [c.split()[1] for b in first for c in b] == ["coverage", "explain", "new-op", "new-op", "check"]
    assert sum(len(b) for _page, b in BLOCKS) >= 30
    pages = {page for page, _b in BLOCKS}
    for page in ("onboarding", "new-op", "migrate", "params", "new-kernel", "try", "check"):
        assert f"docs/{page}.md" in pages


@pytest.mark.parametrize("page, commands", BLOCKS, ids=[f"{p}: {b[0][:60]}" for p, b in BLOCKS])
def test_readme_commands_run_verbatim(page, commands, real_tree: Path):
    from tests.conftest import git_init

    root = real_tree
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


def test_the_coverage_screen_the_docs_show_is_what_coverage_prints(real_tree: Path, release: str, monkeypatch):
    """The docs' sample of `mpsgen coverage` (its status table, on the practice tree of
    torch 2.13's files, in docs/onboarding.md) is what the command prints at 80 columns."""
    from typer.testing import CliRunner

    from mpsgen.cli.app import app
    from tests.conftest import only_on
    from tests.releases import INSTALLED

    only_on(release, INSTALLED, "the docs show 2.13's practice tree")
    text = (DOCS / "onboarding.md").read_text(encoding="utf-8")
    start = text.index("```text\nMPS coverage of ")
    shown = text[start + len("```text\n") : text.index("```", start + 8)].rstrip("\n").split("\n")
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["coverage", "--root", str(real_tree)], catch_exceptions=False).stdout.split("\n")
    assert out[: len(shown)] == shown
