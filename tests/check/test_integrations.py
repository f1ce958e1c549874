"""The real tools: pre-commit (through this repo's .pre-commit-hooks.yaml) and lintrunner
(through examples/.lintrunner.toml), each seeing a fault fail and its fix pass."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BINARY_MM, build_check_tree

REPO = Path(__file__).resolve().parents[2]
FAULT = ("REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args], check=True, capture_output=True)


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found


def env_with_mpsgen() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture
def git_tree(tmp_path: Path, real_sources, release) -> Path:
    root = build_check_tree(tmp_path / "pytorch", real_sources, release)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    commit_all(root, "consistent tree")
    return root


def inject(root: Path) -> None:
    path = root / BINARY_MM
    text = path.read_text()
    assert FAULT[0] in text
    path.write_text(text.replace(FAULT[0], FAULT[1]))


def test_lintrunner_runs_the_example_config(git_tree: Path):
    shutil.copyfile(REPO / "examples/.lintrunner.toml", git_tree / ".lintrunner.toml")
    commit_all(git_tree, "lintrunner config")
    lintrunner = tool("lintrunner")
    env = env_with_mpsgen()

    def lint() -> subprocess.CompletedProcess:
        return subprocess.run([lintrunner, "--all-files"], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)

    clean = lint()
    assert clean.returncode == 0, clean.stdout + clean.stderr
    inject(git_tree)
    commit_all(git_tree, "fault")
    faulty = lint()
    assert faulty.returncode == 1, faulty.stdout + faulty.stderr
    assert "Error (MPS002) missing-stub-registration" in faulty.stdout
    assert "hypot_stub" in faulty.stdout
    # only the changed file: the finding about the yaml row still shows, as it touches BinaryKernel.mm
    changed = subprocess.run([lintrunner, BINARY_MM], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)
    assert changed.returncode == 1 and "MPS002" in changed.stdout, changed.stdout + changed.stderr


def _copy_source_repo(dest: Path) -> Path:
    """This checkout's tracked and untracked (not ignored) files, committed in a fresh repo."""
    listing = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        check=True, capture_output=True, text=True,
    ).stdout.split("\0")
    for rel in filter(None, listing):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    commit_all(dest, "mpsgen")
    return dest


def test_pre_commit_try_repo_fails_on_a_fault_and_passes_once_fixed(git_tree: Path, tmp_path: Path):
    hooks_repo = _copy_source_repo(tmp_path / "mpsgen-repo")
    pre_commit = tool("pre-commit")
    env = env_with_mpsgen()
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env.pop("PRE_COMMIT", None)

    def run_hook(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [pre_commit, "try-repo", str(hooks_repo), "mpsgen-check", *args],
            cwd=git_tree, env=env, capture_output=True, text=True, timeout=900,
        )

    inject(git_tree)
    commit_all(git_tree, "fault")
    faulty = run_hook("--all-files")
    assert faulty.returncode == 1, faulty.stdout + faulty.stderr
    assert "MPS002" in faulty.stdout and "hypot.out" in faulty.stdout
    # the changed file alone (as pre-commit passes it on commit) is enough to see the fault
    assert "MPS002" in run_hook("--files", BINARY_MM).stdout
    # an unrelated file passes
    assert run_hook("--files", "aten/src/ATen/native/mps/operations/UnaryKernel.mm").returncode == 0

    git(git_tree, "revert", "--no-edit", "HEAD")
    fixed = run_hook("--all-files")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Passed" in fixed.stdout


STALE_XFAIL = ('            "cummax": None,\n', '            "cummax": None,\n            "exp": [torch.float16],\n')


def test_lintrunner_applies_the_fix_it_suggests(git_tree: Path):
    """A stale xfail (MPS009): lintrunner shows the finding with its fix; `lintrunner -a` applies it."""
    from mpsgen.tree import COMMON_MPS

    from .conftest import edit

    shutil.copyfile(REPO / "examples/.lintrunner.toml", git_tree / ".lintrunner.toml")
    edit(git_tree, COMMON_MPS, *STALE_XFAIL)
    commit_all(git_tree, "stale xfail")
    lintrunner = tool("lintrunner")
    env = env_with_mpsgen()
    shown = subprocess.run([lintrunner, COMMON_MPS], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 1 and "MPS009" in shown.stdout, shown.stdout + shown.stderr
    applied = subprocess.run([lintrunner, "-a", COMMON_MPS], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)
    assert '"exp": [torch.float16]' not in (git_tree / COMMON_MPS).read_text(), applied.stdout + applied.stderr
    again = subprocess.run([lintrunner, COMMON_MPS], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr


def test_pre_commit_paths_and_fix_hook(git_tree: Path, tmp_path: Path):
    """The check hook filters by location (a comment naming an op does not fail an unrelated
    file); the fix hook removes a stale xfail and fails the run, as pre-commit fixers do."""
    from mpsgen.tree import COMMON_MPS

    from .conftest import UNARY_OPS_MM, edit

    hooks_repo = _copy_source_repo(tmp_path / "mpsgen-repo")
    pre_commit = tool("pre-commit")
    env = env_with_mpsgen()
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env.pop("PRE_COMMIT", None)

    def run_hook(hook: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [pre_commit, "try-repo", str(hooks_repo), hook, *args], cwd=git_tree, env=env, capture_output=True, text=True, timeout=900
        )

    inject(git_tree)  # MPS002 on hypot.out
    path = git_tree / UNARY_OPS_MM
    path.write_text(path.read_text() + "\n// hypot and hypot_stub are registered in BinaryKernel.mm\n")
    edit(git_tree, COMMON_MPS, *STALE_XFAIL)
    commit_all(git_tree, "faults")
    assert run_hook("mpsgen-check", "--files", UNARY_OPS_MM).returncode == 0
    fixing = run_hook("mpsgen-check-fix", "--files", COMMON_MPS)
    assert fixing.returncode == 1 and "files were modified by this hook" in fixing.stdout, fixing.stdout
    assert '"exp": [torch.float16]' not in (git_tree / COMMON_MPS).read_text()
    commit_all(git_tree, "fixed")
    assert run_hook("mpsgen-check-fix", "--files", COMMON_MPS).returncode == 0
