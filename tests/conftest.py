"""Shared fixtures: practice trees built from mpsgen's own upstream-shaped sources, with the
real files (yaml, test lists, OpInfos, headers) of each torch release: 2.13.0 from the installed
wheel, 2.14.1 from its wheel in the local package index (tests/releases.py). Every test that
reads real files runs once per release (the ``release`` parameter); where its case exists in
one release only, it says why (``only_on``). ``MPSGEN_TEST_RELEASES=2.13.0`` runs one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mpsgen.cli.app import app
from mpsgen.report.practice import build_practice_tree
from tests.releases import INSTALLED, NEWER, build_release_tree, release_sources

# the real-file tests run on both releases; REAL stays the installed one's, for module-level use
REAL, _WHY_NOT_REAL = release_sources(INSTALLED)
RELEASES = tuple(r for r in (INSTALLED, NEWER) if r in os.environ.get("MPSGEN_TEST_RELEASES", f"{INSTALLED},{NEWER}").split(","))


@pytest.fixture(scope="session", params=RELEASES)
def release(request) -> str:
    """The torch release whose real files the test reads."""
    return request.param


@pytest.fixture(scope="session")
def real_sources(release: str) -> dict[str, Path]:
    sources, why = release_sources(release)
    if sources is None:
        if release == INSTALLED:
            pytest.fail(why)
        pytest.skip(why)
    return sources


@pytest.fixture(scope="session")
def release_template(release: str, real_sources, tmp_path_factory) -> Path:
    """The practice tree of ``release``, built once a session (the tests copy it)."""
    return build_release_tree(tmp_path_factory.mktemp(f"torch-{release}") / "pytorch", release, real_sources)


@pytest.fixture
def real_tree(tmp_path: Path, release_template: Path) -> Path:
    """Practice tree with the release's real yaml, common_mps.py, OpInfo files and headers."""
    import shutil

    dest = tmp_path / "pytorch"
    if dest.exists():  # a test that also builds another tree (check_tree) there
        dest = tmp_path / "pytorch-real"
    return Path(shutil.copytree(release_template, dest, symlinks=True))


def shared_dispatch(yaml_text: str, kernel: str) -> str:
    """The line of ``yaml_text`` dispatching CPU (and the other keys the release lists) to
    ``kernel``, newline included: `    CPU, CUDA: heaviside_out` in 2.13, `    CPU, CUDA, XPU:
    heaviside_out` in 2.14.1."""
    import re

    m = re.search(rf"^    [A-Za-z0-9_, ]*\bCPU\b[A-Za-z0-9_, ]*: {kernel}\n", yaml_text, re.M)
    assert m, f"no shared dispatch line names {kernel}"
    return m.group(0)


def with_mps(sources: dict[str, Path], kernel: str) -> str:
    """The release's shared line of ``kernel`` once MPS has joined it (mpsgen appends MPS)."""
    from mpsgen.tree import NATIVE_FUNCTIONS

    keys, rest = shared_dispatch(sources[NATIVE_FUNCTIONS].read_text(encoding="utf-8"), kernel).split(": ", 1)
    return ", ".join(k for k in keys.split(", ") if k != "MPS") + ", MPS: " + rest


def only_on(release: str, wanted: str, why: str) -> None:
    """Skip, saying why, a test whose case exists in the ``wanted`` release only."""
    if release != wanted:
        pytest.skip(f"torch {release}: {why}")


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

    import mpsgen.report.explain
    import mpsgen.spec.load
    from mpsgen.core.resources import resource_dir

    def hide(*ops: str) -> None:
        specs = tmp_path / "specs-without"
        shutil.copytree(resource_dir("specs"), specs, dirs_exist_ok=True)
        for op in ops:
            (specs / f"{op}.yaml").unlink(missing_ok=True)
        for module in (mpsgen.spec.load, mpsgen.report.explain):
            monkeypatch.setattr(module, "resource_dir", lambda name: specs if name == "specs" else resource_dir(name))

    return hide
