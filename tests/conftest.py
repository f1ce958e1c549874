"""Shared fixtures: practice trees built from mpsgen's own upstream-shaped sources, with the
real files of the installed torch 2.13.0 wheel (yaml, test lists, OpInfos, headers)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mpsgen.cli import app
from mpsgen.practice import build_practice_tree, real_file_sources

REAL = real_file_sources()


@pytest.fixture(scope="session")
def real_sources() -> dict[str, Path]:
    if not REAL:
        pytest.fail("torch==2.13.0 must be installed for the tests (pip install -e '.[test]')")
    return REAL


@pytest.fixture
def real_tree(tmp_path: Path, real_sources) -> Path:
    """Practice tree with the real torch 2.13 yaml, common_mps.py, OpInfo files and headers."""
    root, used = build_practice_tree(tmp_path / "pytorch", real=True)
    assert used
    return root


@pytest.fixture
def own_tree(tmp_path: Path) -> Path:
    """Practice tree with mpsgen's own sample files only."""
    root, _ = build_practice_tree(tmp_path / "pytorch", real=False)
    return root


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"], check=True
    )


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


@pytest.fixture
def run():
    runner = CliRunner()

    def _run(*args: str):
        result = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
        return result

    return _run


@pytest.fixture
def without_shipped_spec(tmp_path: Path, monkeypatch):
    """``hide(op)``: the CLI (run in-process) sees mpsgen's spec library without ``op``'s
    spec, as for an op the library does not cover yet (what the scaffold paths need)."""
    import shutil

    import mpsgen.cli
    import mpsgen.explain
    from mpsgen.resources import resource_dir

    def hide(*ops: str) -> None:
        specs = tmp_path / "specs-without"
        shutil.copytree(resource_dir("specs"), specs, dirs_exist_ok=True)
        for op in ops:
            (specs / f"{op}.yaml").unlink(missing_ok=True)
        for module in (mpsgen.cli, mpsgen.explain):
            monkeypatch.setattr(module, "resource_dir", lambda name: specs if name == "specs" else resource_dir(name))

    return hide
