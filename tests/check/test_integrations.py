"""The real tools: pre-commit (through this repo's .pre-commit-hooks.yaml, with pre-commit's
own try-repo, and examples/.pre-commit-config.yaml) and lintrunner (through
examples/.lintrunner.toml), each blocking what a change breaks, and only that."""

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


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args], check=True, capture_output=True, text=True
    ).stdout


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

    def lint(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([lintrunner, *args], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)

    clean = lint("--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    inject(git_tree)  # not committed: lintrunner lints the files changed against HEAD
    faulty = lint()
    assert faulty.returncode == 1, faulty.stdout + faulty.stderr
    assert "Error (MPS002) missing-stub-registration" in faulty.stdout
    assert "hypot_stub" in faulty.stdout
    # only the changed file: the finding about the yaml row still shows, as the change causes it
    changed = lint(BINARY_MM)
    assert changed.returncode == 1 and "MPS002" in changed.stdout, changed.stdout + changed.stderr
    # once committed, the fault is the tree's, not a change's: lintrunner has nothing to say
    commit_all(git_tree, "fault")
    assert lint("--all-files").returncode == 0


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


def _pre_commit(tmp_path: Path):
    """(pre-commit's path, an environment with a pre-commit home of the test's own)."""
    env = env_with_mpsgen()
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env.pop("PRE_COMMIT", None)
    return tool("pre-commit"), env


def test_pre_commit_blocks_what_the_commit_breaks_and_only_that(git_tree: Path, tmp_path: Path, real_tree: Path):
    """Through pre-commit's try-repo, as on a commit (the staged files): an error the commit
    causes blocks it, wherever it is reported; on the practice tree of torch's real files, whose
    warnings (MPS007/MPS008 in 2.13) were there before, a commit touching native_functions.yaml
    elsewhere goes through. The example config installs the hooks the same way (a `repo:`
    entry naming this repository and its hook ids, nothing from a package index)."""
    import yaml

    from tests.conftest import git_init

    hooks_repo = _copy_source_repo(tmp_path / "mpsgen-repo")
    pre_commit, env = _pre_commit(tmp_path)

    def run_hook(root: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [pre_commit, "try-repo", str(hooks_repo), "mpsgen-check", *args],
            cwd=root, env=env, capture_output=True, text=True, timeout=900,
        )

    inject(git_tree)
    git(git_tree, "add", "-A")
    faulty = run_hook(git_tree)
    assert faulty.returncode == 1, faulty.stdout + faulty.stderr
    assert "MPS002" in faulty.stdout and "hypot.out" in faulty.stdout  # reported at the yaml row, which the commit does not touch
    assert "MPS002" in run_hook(git_tree, "--files", BINARY_MM).stdout
    git(git_tree, "reset", "-q", "--hard")
    fixed = run_hook(git_tree, "--all-files")
    assert fixed.returncode == 0 and "Passed" in fixed.stdout, fixed.stdout + fixed.stderr

    # warnings already in the tree do not block a commit that does not touch them
    git_init(real_tree)
    whole = subprocess.run([sys.executable, "-m", "mpsgen", "check"], cwd=real_tree, capture_output=True, text=True, timeout=300)
    assert whole.returncode == 1 and " warning: " in whole.stdout and " error: " not in whole.stdout, whole.stdout
    write = subprocess.run(
        [sys.executable, "-m", "mpsgen", "new-op", "heaviside", "--spec", "specs/heaviside.yaml"],
        cwd=real_tree, capture_output=True, text=True, timeout=300,
    )
    assert write.returncode == 0, write.stderr
    git(real_tree, "add", "-A")
    commit = run_hook(real_tree)
    assert commit.returncode == 0 and "Passed" in commit.stdout, commit.stdout + commit.stderr

    # the example config: this repository's hooks by id, installed by pre-commit from the repo
    example = yaml.safe_load((REPO / "examples/.pre-commit-config.yaml").read_text())
    ids = {h["id"] for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    [entry] = example["repos"]
    assert entry["repo"] not in ("local", "meta") and {h["id"] for h in entry["hooks"]} <= ids
    assert "pip install" not in (REPO / "examples/.pre-commit-config.yaml").read_text()
    entry["repo"] = str(hooks_repo)
    entry["rev"] = git(hooks_repo, "rev-parse", "HEAD").strip()
    config = tmp_path / "pre-commit-config.yaml"
    config.write_text(yaml.safe_dump(example))
    by_example = subprocess.run(
        [pre_commit, "run", "--config", str(config)], cwd=real_tree, env=env, capture_output=True, text=True, timeout=900
    )
    assert by_example.returncode == 0 and "Passed" in by_example.stdout, by_example.stdout + by_example.stderr


STALE_XFAIL = ('            "cummax": None,\n', '            "cummax": None,\n            "exp": [torch.float16],\n')


def test_lintrunner_applies_the_fix_it_suggests(git_tree: Path):
    """A stale xfail the change adds (MPS009): lintrunner shows the finding with its fix;
    `lintrunner -a` applies it."""
    from mpsgen.tree import COMMON_MPS

    from .conftest import edit

    shutil.copyfile(REPO / "examples/.lintrunner.toml", git_tree / ".lintrunner.toml")
    commit_all(git_tree, "lintrunner config")
    edit(git_tree, COMMON_MPS, *STALE_XFAIL)  # the change adds it
    lintrunner = tool("lintrunner")
    env = env_with_mpsgen()
    shown = subprocess.run([lintrunner, COMMON_MPS], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 1 and "MPS009" in shown.stdout, shown.stdout + shown.stderr  # (lintrunner fails on any message)
    applied = subprocess.run([lintrunner, "-a", COMMON_MPS], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)
    assert '"exp": [torch.float16]' not in (git_tree / COMMON_MPS).read_text(), applied.stdout + applied.stderr
    again = subprocess.run([lintrunner, COMMON_MPS], cwd=git_tree, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr


def test_pre_commit_paths_and_fix_hook(git_tree: Path, tmp_path: Path):
    """A fault committed earlier does not fail a commit that only adds a comment naming its op
    (findings are located by facts, not words); the fix hook removes a stale xfail the commit
    adds and fails the run, as pre-commit fixers do."""
    from mpsgen.tree import COMMON_MPS

    from .conftest import UNARY_OPS_MM, edit

    hooks_repo = _copy_source_repo(tmp_path / "mpsgen-repo")
    pre_commit, env = _pre_commit(tmp_path)

    def run_hook(hook: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [pre_commit, "try-repo", str(hooks_repo), hook, *args], cwd=git_tree, env=env, capture_output=True, text=True, timeout=900
        )

    inject(git_tree)  # MPS002 on hypot.out
    commit_all(git_tree, "fault")
    path = git_tree / UNARY_OPS_MM
    path.write_text(path.read_text() + "\n// hypot and hypot_stub are registered in BinaryKernel.mm\n")
    git(git_tree, "add", "-A")
    assert run_hook("mpsgen-check").returncode == 0
    commit_all(git_tree, "comment")
    edit(git_tree, COMMON_MPS, *STALE_XFAIL)
    git(git_tree, "add", "-A")
    fixing = run_hook("mpsgen-check-fix")
    assert fixing.returncode == 1 and "files were modified by this hook" in fixing.stdout, fixing.stdout
    assert '"exp": [torch.float16]' not in (git_tree / COMMON_MPS).read_text()
    git(git_tree, "add", "-A")
    assert run_hook("mpsgen-check-fix").returncode == 0
