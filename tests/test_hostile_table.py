"""Every case of tests/hostile_cases.py: the exit code, a message naming what is wrong, no
traceback, nothing written. In-process for all of them; a sample also as real processes
(`python -m mpsgen`), where start-up and the last-resort handlers of ``main`` are exercised."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.practice import build_practice_tree
from tests.hostile_cases import CASES, leftovers, tree_state, undo_deep_folders
from tests.conftest import REAL


@pytest.fixture(scope="module")
def base_tree(tmp_path_factory, real_sources) -> Path:
    root, _ = build_practice_tree(tmp_path_factory.mktemp("hostile") / "pytorch", sources=REAL)
    return root


def _fresh(base: Path, tmp: Path) -> Path:
    import shutil

    root = tmp / "pytorch"
    shutil.copytree(base, root)
    return root


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case, base_tree: Path, tmp_path: Path, run):
    root = _fresh(base_tree, tmp_path)
    args = case.prepare(root, tmp_path)
    before = tree_state(root)
    try:
        res = run(*args)
    finally:
        after = tree_state(root)
        undo_deep_folders(root)  # catch_exceptions=False: a traceback fails the test
    out = res.output
    assert res.exit_code == case.exit_code, out
    for w in case.words:
        assert w in out, (w, out)
    assert "Traceback" not in out
    if case.exit_code:
        assert out.count("error") >= 1 and len(out.strip().splitlines()) <= 3, out  # one paragraph
    assert after == before
    assert leftovers(root) == []


SAMPLE = ("root of 300 characters", "NUL in a spec", "spec nested 5,000 deep", "common_mps.py with mixed tabs", "folders 1,200 deep under aten/src/ATen/native")


@pytest.mark.parametrize("case", [c for c in CASES if c.id in SAMPLE], ids=lambda c: c.id)
def test_hostile_input_as_a_process(case, base_tree: Path, tmp_path: Path):
    root = _fresh(base_tree, tmp_path)
    args = case.prepare(root, tmp_path)
    before = tree_state(root)
    try:
        proc = subprocess.run([sys.executable, "-m", "mpsgen", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        after, left = tree_state(root), leftovers(root)
    finally:
        undo_deep_folders(root)
    assert proc.returncode == case.exit_code, proc.stderr
    assert "Traceback" not in proc.stderr
    for w in case.words:
        assert w in proc.stderr + proc.stdout
    assert after == before and left == []
