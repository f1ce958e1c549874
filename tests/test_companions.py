"""--with-test writes a shader test pytest collects (and skips without an Apple GPU);
--pr-description prints a PR title and body; neither writes into the tree."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import snapshot

HEAVISIDE = ("new-op", "heaviside", "--binary", "--integer", "--expr", "a == 0 ? b : T(a > 0)")


def test_with_test_writes_a_shader_test_pytest_collects_and_skips_here(real_tree: Path, run, tmp_path: Path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    res = run(*HEAVISIDE, "--with-test", "--root", real_tree)
    assert res.exit_code == 0, res.output
    test_file = work / "test_heaviside_shader.py"
    text = test_file.read_text()
    ast.parse(text)
    assert "struct heaviside_functor" in text and "torch.mps.compile_shader" in text
    for dtype in ("torch.float16", "torch.bfloat16", "torch.int64", "torch.bool"):
        assert dtype in text
    assert 'float("nan")' in text and "torch.iinfo" in text and "is_contiguous" in text
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True, text=True, cwd=work, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped" in proc.stdout and "needs an Apple GPU" in proc.stdout and "passed" not in proc.stdout
    # a second run refuses to overwrite it, and writes nothing to the tree
    before = snapshot(real_tree)
    again = run(*HEAVISIDE, "--with-test", "--root", real_tree)
    assert again.exit_code == 2 and "exists" in again.output
    assert snapshot(real_tree) == before


def test_with_test_refuses_a_scaffold_before_writing(real_tree: Path, run, tmp_path: Path, monkeypatch, without_shipped_spec):
    monkeypatch.chdir(tmp_path)
    without_shipped_spec("special_laguerre_polynomial_l")
    before = snapshot(real_tree)
    res = run("new-op", "special_laguerre_polynomial_l", "--binary", "--with-test", "--force", "--root", real_tree)
    assert res.exit_code == 1 and "scaffold" in res.output
    assert snapshot(real_tree) == before and not list(tmp_path.glob("test_*_shader.py"))


def test_pr_description(real_tree: Path, run, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run(*HEAVISIDE, "--dry-run", "--pr-description", "--root", real_tree)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "[MPS] Add Metal kernel for heaviside" in out
    assert "Test plan:" in out and "python test/test_mps.py -v -k test_output_match_heaviside" in out
    mig = run("migrate-from-mpsgraph", "acosh", "--dry-run", "--pr-description", "--allow-dtype-loss", "--root", real_tree)
    assert mig.exit_code == 0, mig.output
    assert "[MPS] Migrate acosh to Metal" in mig.stdout
