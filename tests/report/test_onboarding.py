"""doctor and tutorial."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.report import doctor
from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS
from tests.conftest import git_init


def test_doctor_on_a_ready_checkout(real_tree: Path, run):
    git_init(real_tree)
    res = run("doctor", "--root", real_tree)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert f"ok    PyTorch checkout: {real_tree.resolve()}" in out
    assert f"ok    {NATIVE_FUNCTIONS}: present and readable" in out
    assert "ok    git: the files mpsgen edits have no uncommitted changes" in out
    assert "need a Mac" in out  # on Linux it says which steps need a Mac
    assert "doctor: ready." in res.stderr


def test_doctor_names_what_to_fix(real_tree: Path, run, tmp_path: Path):
    git_init(real_tree)
    (real_tree / COMMON_MPS).write_text((real_tree / COMMON_MPS).read_text() + "\ndef broken(:\n")
    res = run("doctor", "--root", real_tree)
    assert res.exit_code == 1
    assert f"FAIL  {COMMON_MPS}:" in res.stdout and "not valid Python" in res.stdout
    assert f"warn  git: uncommitted changes in {COMMON_MPS}" in res.stdout
    outside = run("doctor", "--root", tmp_path)
    assert outside.exit_code == 1 and "FAIL  PyTorch checkout" in outside.stdout


def test_doctor_on_a_mac_checks_the_metal_toolchain_and_torch_mps(real_tree: Path, monkeypatch):
    calls = []

    def fake_run(cmd, cwd=None, timeout=20):
        calls.append(cmd[0])
        return None  # neither is installed

    monkeypatch.setattr(doctor, "_run", fake_run)
    checks = {c.name: c for c in doctor.run_doctor(real_tree, system="Darwin")}
    assert checks["Metal toolchain"].status == "warn" and "xcode-select" in checks["Metal toolchain"].fix
    assert checks["torch.mps"].status == "warn"
    assert "xcrun" in calls and "Mac-only steps" not in checks
    assert doctor.exit_status(list(checks.values())) == 0  # the toolchain is not needed to write a change


def test_doctor_checks_what_mpsgen_try_needs(real_tree: Path, monkeypatch, tmp_path: Path):
    """A C++17 compiler and torch: reported with their versions, or each with the command that
    installs it; never a FAIL (mpsgen writes changes without them)."""
    import importlib.util
    import sys

    checks = {c.name: c for c in doctor.run_doctor(real_tree, system="Linux")}
    assert checks["C++ compiler"].status == "ok" and ", C++17" in checks["C++ compiler"].detail
    assert checks["torch"].status == "ok" and checks["torch"].detail.startswith("2.13.0")
    monkeypatch.setenv("PATH", str(tmp_path))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else find_spec(name, *a))
    checks = {c.name: c for c in doctor.run_doctor(real_tree, system="Linux")}
    assert checks["C++ compiler"].status == "warn" and checks["C++ compiler"].fix == "sudo apt-get install -y g++"
    assert checks["torch"].status == "warn" and sys.executable in checks["torch"].detail
    # (the CPU build on Linux: a plain `pip install torch` takes the CUDA one, several GB)
    assert checks["torch"].fix.endswith("-m pip install torch --index-url https://download.pytorch.org/whl/cpu")
    assert doctor.exit_status(list(checks.values())) == 0
    mac = {c.name: c for c in doctor.run_doctor(real_tree, system="Darwin")}
    assert mac["C++ compiler"].fix == "xcode-select --install"
    assert mac["torch"].fix.endswith("-m pip install torch")


def test_tutorial_runs_through_with_yes(run, tmp_path: Path):
    keep = tmp_path / "practice"
    res = run("tutorial", "--yes", "--keep", keep)
    assert res.exit_code == 0, res.output
    out = res.output
    for title in ("1. What is missing", "2. Preview the change", "3. Write it", "4. Check it", "5. Break something", "6. See check catch it", "7. Your turn"):
        assert title in out
    assert "heaviside: missing" in out and "heaviside: metal" not in out.split("3. Write it")[0]
    assert "MPS002 error: heaviside.out" in out
    assert "+struct heaviside_functor" in out  # the diff of step 2
    assert "REGISTER_DISPATCH(heaviside_stub" not in (keep / "aten/src/ATen/native/mps/operations/BinaryKernel.mm").read_text()


def test_tutorial_runs_through_without_torch(run, tmp_path: Path, monkeypatch):
    """The README's first set-up installs no torch: the tutorial then runs on mpsgen's own
    sample files, says so, and every step (check of the file new-op changed included) passes."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("torch", "torchgen") else find_spec(name, *a))
    res = run("tutorial", "--yes", "--keep", tmp_path / "practice")
    assert res.exit_code == 0, res.output
    assert "mpsgen's own sample files only" in res.output.split("\n", 1)[0]
    assert "7. Your turn" in res.output


def test_slow_commands_say_what_they_do_on_a_terminal_only(real_tree: Path, tmp_path: Path):
    """coverage plans every candidate (over a second): a spinner line on a terminal's stderr,
    and not one byte more on a pipe (pre-commit and CI logs stay clean)."""
    import shutil
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "mpsgen", "coverage", "--root", str(real_tree)]
    piped = subprocess.run(cmd, capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == ""
    if shutil.which("script") is None:
        pytest.skip("no `script` here to give the command a terminal")
    shown = subprocess.run(["script", "-qec", " ".join(cmd) + " >/dev/null", "/dev/null"], capture_output=True, text=True)
    assert shown.returncode == 0 and "reading the tree and planning each migration candidate" in shown.stdout


def test_a_kept_practice_tree_is_in_git(run, tmp_path: Path):
    """demo --keep and tutorial --keep commit the tree as built: `git diff` then shows what
    mpsgen wrote there, and `check --changed` checks it, as on a checkout."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("no git here")
    keep = tmp_path / "demo"
    res = run("demo", "--keep", keep)
    assert res.exit_code == 0 and "in git, its files committed" in res.output, res.output
    git = lambda *a: subprocess.run(["git", "-C", str(keep), *a], capture_output=True, text=True, check=True).stdout  # noqa: E731
    assert len(git("log", "--oneline").splitlines()) == 1 and git("status", "--porcelain") == ""
    assert run("new-op", "heaviside", "--root", keep).exit_code == 0
    assert "BinaryKernel.metal" in git("diff", "--stat")
    changed = run("check", "--changed", "--root", keep)
    assert changed.exit_code == 0 and "the change against HEAD: 5 files" in changed.output, changed.output
    tutorial = tmp_path / "tutorial"
    res = run("tutorial", "--yes", "--keep", tutorial)
    assert res.exit_code == 0 and "It is in git, its files committed." in res.output
    assert subprocess.run(["git", "-C", str(tutorial), "diff", "--quiet"]).returncode == 1  # what the tutorial wrote
