"""Build a practice PyTorch tree: mpsgen's own upstream-shaped sources, plus the real
``native_functions.yaml``, test lists, OpInfo files and headers of an installed torch wheel
when there is one (found without importing torch)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

from mpsgen.core import child
from mpsgen.tree import COMMON_METHODS, COMMON_MPS, INDEXING_HEADER, NATIVE_DIR, NATIVE_FUNCTIONS, OPINFO_DEFINITIONS
from mpsgen.tree.aoti import C_SHIM_MPS, TAGS_YAML

PRACTICE_TREE = Path(__file__).resolve().parent.parent / "practice_tree"


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def real_file_sources(site: Path | None = None) -> dict[str, Path] | None:
    """Tree-relative path -> file in the installed torch wheel (or in ``site``, a folder
    holding a wheel's ``torch/`` and ``torchgen/``), or None without them."""
    torch_dir = _package_dir("torch") if site is None else site / "torch"
    torchgen_dir = _package_dir("torchgen") if site is None else site / "torchgen"
    if torch_dir is None or torchgen_dir is None or not torch_dir.is_dir():
        return None
    files = {
        NATIVE_FUNCTIONS: torchgen_dir / "packaged/ATen/native/native_functions.yaml",
        COMMON_MPS: torch_dir / "testing/_internal/common_mps.py",
        COMMON_METHODS: torch_dir / "testing/_internal/common_methods_invocations.py",
        INDEXING_HEADER: torch_dir / "include/c10/metal/indexing.h",
    }
    for f in sorted((torch_dir / "testing/_internal/opinfo/definitions").glob("*.py")):
        files[f"{OPINFO_DEFINITIONS}/{f.name}"] = f
    for f in sorted((torch_dir / "include/ATen/native").glob("*.h")):
        files[f"{NATIVE_DIR}/{f.name}"] = f
    for f in ("MetalShaderLibrary.h", "OperationUtils.h"):
        files[f"{NATIVE_DIR}/mps/{f}"] = torch_dir / "include/ATen/native/mps" / f
    # the structs kernels share with their host code (params kinds add theirs there)
    for f in sorted((torch_dir / "include/ATen/native/mps/kernels").glob("*.h")):
        files[f"{NATIVE_DIR}/mps/kernels/{f.name}"] = f
    for f in sorted((torch_dir / "include/c10/metal").glob("*.h")):
        files[f"c10/metal/{f.name}"] = f
    # the AOTI shim: the fallback op list, the checked-in MPS header, and what regenerates it
    # (torchgen's sources, without the packaged/ copies a build makes, and the tags it reads)
    files[C_SHIM_MPS] = torch_dir / "include" / C_SHIM_MPS
    # which backward ops an op's tests also run (new-kernel keeps xfails until they are on MPS)
    files["tools/autograd/derivatives.yaml"] = torchgen_dir / "packaged/autograd/derivatives.yaml"
    files[TAGS_YAML] = torchgen_dir / "packaged/ATen/native/tags.yaml"
    for f in sorted(torchgen_dir.rglob("*.py")):
        rel = f.relative_to(torchgen_dir)
        if rel.parts[0] != "packaged" and "__pycache__" not in rel.parts:
            files[f"torchgen/{rel.as_posix()}"] = f
    return {k: v for k, v in files.items() if v.is_file()}


def what_it_holds(real: bool) -> str:
    """What a practice tree is made of, as demo and the tutorial say it."""
    if real:
        return "mpsgen's own sample kernels with the real native_functions.yaml, test lists and headers of the installed torch wheel"
    return "mpsgen's own sample files only (install torch==2.13.0 for the real yaml and test files)"


def build_practice_tree(dest: Path, *, real: bool = True, sources: dict[str, Path] | None = None) -> tuple[Path, bool]:
    """Copy the practice tree to ``dest`` (overlaying the wheel's real files if ``real`` and
    torch is installed, or the given ``sources``). Returns (root, whether real files were used)."""
    shutil.copytree(PRACTICE_TREE, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    used_real = False
    if real:
        sources = sources or real_file_sources()
        if sources:
            for rel, src in sources.items():
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, target)
            used_real = True
    return dest, used_real


def commit_practice_tree(root: Path) -> str | None:
    """Make a kept practice tree a git repository with its files committed, so that `git diff`
    and `mpsgen check --changed` work on it as on a checkout; None when done, else why not."""
    git = shutil.which("git")
    if git is None:
        return "git is not on PATH"
    ident = ["-c", "user.name=mpsgen", "-c", "user.email=practice-tree@mpsgen.invalid", "-c", "commit.gpgsign=false"]
    steps = (("git init", ["init", "-q"]), ("git add", ["add", "-A"]),
             ("git commit", [*ident, "commit", "-q", "-m", "practice tree, as mpsgen built it"]))
    for shown, argv in steps:
        try:
            proc = child.run([git, *argv], timeout=60, cwd=root, text=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{shown} did not run ({exc})"
        if proc.returncode != 0:
            return f"{shown} failed: {(proc.stderr.strip().splitlines() or ['no message'])[-1]}"
    return None
