"""``mpsgen doctor``: is this machine and checkout ready for MPS work, and how to fix what is
not. Each check is a :class:`Check`; ``needed`` ones decide the exit status (mpsgen cannot
work without them), the others say what a later step (``mpsgen try``, build, test on a Mac)
will need."""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from mpsgen.core import child
from mpsgen.core.errors import MpsgenError
from mpsgen.shim.toolchain import COMPILERS, compiler, install_compiler_command
from mpsgen.shim.trial import install_torch_command
from mpsgen.tree import COMMON_METHODS, COMMON_MPS, DEFAULT_METAL, DEFAULT_MM, INDEXING_HEADER, NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.native_yaml import native_yaml_problem
from mpsgen.tree.source import python_syntax_problem

OK, WARN, FAIL, INFO = "ok", "warn", "FAIL", "info"


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | FAIL | info
    detail: str
    fix: str = ""
    needed: bool = False  # a FAIL of a needed check makes doctor exit 1


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 20) -> subprocess.CompletedProcess | None:
    try:
        return child.run(cmd, cwd=cwd, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None


def run_doctor(root: str | Path | None, system: str | None = None) -> list[Check]:
    system = system or platform.system()
    checks: list[Check] = []
    try:
        tree = PytorchTree.locate(root)
    except MpsgenError as exc:
        checks.append(Check("PyTorch checkout", FAIL, exc.message, exc.hint or "Run from inside a PyTorch checkout or pass --root.", True))
        return checks + _tools(None, system)
    version = tree.root / "version.txt"
    v = version.read_text(encoding="utf-8", errors="replace").strip() if version.is_file() else "unknown (no version.txt)"
    checks.append(Check("PyTorch checkout", OK, f"{tree.root} (version {v})", needed=True))
    checks += _files(tree)
    checks += _git(tree)
    return checks + _tools(tree, system)


def _files(tree: PytorchTree) -> list[Check]:
    out = []
    wanted = [NATIVE_FUNCTIONS, COMMON_MPS, COMMON_METHODS, INDEXING_HEADER, *dict.fromkeys(DEFAULT_METAL.values()), *dict.fromkeys(DEFAULT_MM.values())]
    for rel in wanted:
        if not tree.exists(rel):
            out.append(Check(rel, FAIL, "missing", "Restore it (git checkout -- <file>) or update the checkout.", True))
            continue
        try:
            src = tree.read(rel)
            problem = None
            if rel == NATIVE_FUNCTIONS:
                problem = native_yaml_problem(src)
            elif rel == COMMON_MPS:
                problem = python_syntax_problem(src)
        except MpsgenError as exc:
            problem = exc
        if problem is not None:
            out.append(Check(rel, FAIL, str(problem), problem.hint or "Fix or restore the file.", True))
        else:
            out.append(Check(rel, OK, "present and readable", needed=True))
    return out


def _git(tree: PytorchTree) -> list[Check]:
    if not (tree.root / ".git").exists():
        return [Check("git", WARN, "the checkout is not a git repository", "mpsgen's --patch and your review need git: clone PyTorch with git.")]
    files = [NATIVE_FUNCTIONS, COMMON_MPS, COMMON_METHODS, *dict.fromkeys(DEFAULT_METAL.values()), *dict.fromkeys(DEFAULT_MM.values())]
    proc = _run(["git", "status", "--porcelain", "--", *files], cwd=tree.root)
    if proc is None or proc.returncode != 0:
        return [Check("git", WARN, "git status failed", "Check that git is installed and the checkout is healthy.")]
    changed = [line[3:] for line in proc.stdout.splitlines() if line.strip()]
    if changed:
        return [Check("git", WARN, f"uncommitted changes in {', '.join(changed)}", "Commit or stash them first, so mpsgen's change is its own diff.")]
    return [Check("git", OK, "the files mpsgen edits have no uncommitted changes")]


def _tools(tree: PytorchTree | None, system: str) -> list[Check]:
    out = []
    if tree is not None:
        build = tree.root / "build"
        out.append(
            Check("build folder", OK, str(build))
            if build.is_dir()
            else Check("build folder", WARN, "no build/ folder yet", "Build once: python -m pip install --no-build-isolation -v -e . (on the Mac).")
        )
    for tool, why in (("ninja", "PyTorch builds with ninja"), ("clang-format", "lintrunner formats .mm/.metal with it")):
        path = shutil.which(tool)
        out.append(Check(tool, OK, path) if path else Check(tool, WARN, f"not on PATH ({why})", f"pip install {tool}"))
    out += _try_needs(system)
    if system == "Darwin":
        proc = _run(["xcrun", "-sdk", "macosx", "metal", "--version"])
        if proc is not None and proc.returncode == 0:
            out.append(Check("Metal toolchain", OK, (proc.stdout or proc.stderr).strip().splitlines()[0]))
        else:
            out.append(Check("Metal toolchain", WARN, "xcrun metal is not available", "Install Xcode (not only the command line tools) and run `xcode-select -s /Applications/Xcode.app`."))
        proc = _run(["python3", "-c", "import torch; print(torch.backends.mps.is_available())"], timeout=60)
        if proc is not None and proc.stdout.strip() == "True":
            out.append(Check("torch.mps", OK, "available"))
        else:
            out.append(Check("torch.mps", WARN, "not available to python3 here", "Install a PyTorch build (or your own) on this Mac to run the MPS tests."))
    else:
        out.append(
            Check(
                "Mac-only steps", INFO,
                f"this is {system}: writing and checking changes works here; building the Metal kernels and running test_mps.py need a Mac with Apple silicon",
                "Push the branch and build/test on a Mac (or let CI's MPS jobs run).",
            )
        )
    return out


def _try_needs(system: str) -> list[Check]:
    """What ``mpsgen try`` needs besides mpsgen: a C++17 compiler and torch in this Python
    (found, not imported: importing torch takes seconds)."""
    out = []
    cxx = compiler()
    fix = install_compiler_command(system)
    if cxx is None:
        out.append(Check("C++ compiler", WARN, f"none of {', '.join(COMPILERS)} on PATH (mpsgen try compiles the functor with one)", fix))
    else:
        proc = _run([cxx, "-std=c++17", "-fsyntax-only", "-x", "c++", os.devnull])
        if proc is None or proc.returncode != 0:
            out.append(Check("C++ compiler", WARN, f"{cxx} does not take -std=c++17 (mpsgen try needs C++17)", fix))
        else:
            proc = _run([cxx, "--version"])
            version = (proc.stdout.strip().splitlines() or [""])[0] if proc is not None else ""
            out.append(Check("C++ compiler", OK, f"{cxx}, C++17" + (f": {version}" if version else "")))
    if importlib.util.find_spec("torch") is None:
        out.append(Check("torch", WARN, f"{sys.executable} cannot import torch (mpsgen try compares with its CPU op)", install_torch_command(system)))
    else:
        try:
            version = metadata.version("torch")
        except metadata.PackageNotFoundError:
            version = "version unknown"
        out.append(Check("torch", OK, f"{version} in {sys.executable} (what mpsgen try compares with)"))
    return out


def exit_status(checks: list[Check]) -> int:
    return 1 if any(c.status == FAIL and c.needed for c in checks) else 0
