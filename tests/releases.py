"""The real files of the two torch releases the tests read: 2.13.0 from the installed wheel,
2.14.1 from its wheel in the local package index (``pip download``, never installed), whose
needed members are extracted once into a cache folder shared by later runs."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mpsgen.report.practice import real_file_sources

INSTALLED = "2.13.0"
NEWER = "2.14.1"
# the wheel members a practice tree and the tests read (torchgen whole: the AOTI shim generator
# and the ATen/ops headers; the C++ headers: what tests/host_clang.py type-checks .mm files with)
MEMBERS = (
    "torchgen/",
    "torch/testing/_internal/",
    "torch/include/ATen/",
    "torch/include/c10/",
    "torch/include/fmt/",
    "torch/include/torch/",
    "torch/version.py",
)


# read once, at import: a test that points XDG_CACHE_HOME elsewhere does not move this cache
_PRACTICE_2_14_1 = Path(__file__).resolve().parent / "practice_2_14_1"  # (mpsgen's own files)
_CACHE_ROOT = Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "mpsgen-tests"


def extracted(version: str) -> tuple[Path | None, str]:
    """(folder holding the wheel's torch/ and torchgen/, "") or (None, why it cannot be had)."""
    # named by what is extracted: a cache made for other members is not taken for this one
    members = hashlib.sha256("\n".join(MEMBERS).encode()).hexdigest()[:12]
    site = _CACHE_ROOT / f"torch-{version}-{members}"
    if (site / ".complete").is_file():
        return site, ""
    with tempfile.TemporaryDirectory(prefix="mpsgen-wheel-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", f"torch=={version}", "-d", tmp],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600,
        )
        wheels = list(Path(tmp).glob("torch-*.whl"))
        if proc.returncode != 0 or not wheels:
            return None, f"torch=={version}'s wheel could not be had from the package index: {proc.stderr.strip()[-300:]}"
        staging = Path(tempfile.mkdtemp(prefix=f".torch-{version}-", dir=_ensure(site.parent)))
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if name.startswith(MEMBERS) and not name.endswith("/"):
                    wheel.extract(name, staging)
    (staging / ".complete").write_text(version)
    try:
        staging.rename(site)  # a concurrent run may have won: then its copy is used
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return site, ""


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def release_sources(version: str) -> tuple[dict[str, Path] | None, str]:
    """Tree-relative path -> real file of that release, or (None, why not)."""
    if version == INSTALLED:
        sources = real_file_sources()
        return (sources, "") if sources else (None, f"torch=={INSTALLED} must be installed (pip install -e '.[test]')")
    site, why = extracted(version)
    if site is None:
        return None, why
    return real_file_sources(site), ""


# Ops upstream moved from MPSGraph to Metal kernels between the two releases whose MPSGraph
# code mpsgen's practice sources hold (2.13's shape). A practice tree of 2.14.1 migrates them
# the way upstream did, so that its sources agree with 2.14.1's yaml.
MIGRATED_BY_NEWER = ("acosh", "asinh", "atanh", "sigmoid_backward")
# 2.14.1's shared line of each, and the MPSGraph rows 2.13 had in its place
_NEWER_LINES = {
    "acosh": ("    CPU, CUDA, XPU, MPS: acosh_out\n", "    CPU, CUDA, XPU: acosh_out\n    MPS: acosh_out_mps\n"),
    "asinh": ("    CPU, CUDA, XPU, MPS: asinh_out\n", "    CPU, CUDA, XPU: asinh_out\n    MPS: asinh_out_mps\n"),
    "atanh": ("    CPU, CUDA, XPU, MPS: atanh_out\n", "    CPU, CUDA, XPU: atanh_out\n    MPS: atanh_out_mps\n"),
    "sigmoid_backward": (
        "    CPU, CUDA, MPS, XPU: sigmoid_backward_out\n",
        "    CPU, CUDA, XPU: sigmoid_backward_out\n    MPS: sigmoid_backward_out_mps\n",
    ),
}


def build_release_tree(dest: Path, release: str, sources: dict[str, Path]) -> Path:
    """A practice tree holding ``release``'s real files, its sources in that release's shape
    (see :func:`sources_as_of`)."""
    from mpsgen.report.practice import build_practice_tree

    root, used = build_practice_tree(dest, sources=sources)
    assert used
    sources_as_of(root, release, {rel: src.read_bytes() for rel, src in sources.items()})
    return root


def sources_as_of(root: Path, release: str, real: dict[str, bytes]) -> None:
    """Bring the practice sources of the tree at ``root`` (2.13's shape) to ``release``'s: for
    2.14.1 the ops upstream migrated since 2.13 are migrated by mpsgen (what
    tests/plan/test_upstream_migrations.py proves equal to upstream's yaml); then the files of
    ``real`` (tree path -> bytes: the release's files, or a fixture's yaml) are put back."""
    if release == INSTALLED:
        return
    import dataclasses

    from mpsgen.plan.migrate import plan_migrate
    from mpsgen.core.resources import resource_dir
    from mpsgen.spec.op import load_spec
    from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree

    yaml_path = root / NATIVE_FUNCTIONS
    text = yaml_path.read_text(encoding="utf-8")
    for op in MIGRATED_BY_NEWER:
        now, before = _NEWER_LINES[op]
        assert text.count(now) == 1, f"{release}: {now.strip()!r} is not in the tree's yaml once"
        text = text.replace(now, before)
    yaml_path.write_text(text, encoding="utf-8")
    for op in MIGRATED_BY_NEWER:
        spec = dataclasses.replace(load_spec(resource_dir("specs") / f"{op}.yaml"), stub=f"{op}_stub")
        plan_migrate(PytorchTree(root), spec).apply()
    # upstream moved nan_to_num onto Metal in 2.14 (its own NanToNumParams, in the release's
    # kernels/UnaryKernel.h): the practice MPSGraph version, the only code of TensorCompare.mm, goes
    (root / "aten/src/ATen/native/mps/operations/TensorCompare.mm").unlink(missing_ok=True)
    # 2.14 moved min/max (and sum, ...) onto Metal kernels picked by a dispatcher of ReduceOps.mm's own
    # (reduction_dispatch_mps: kernels named by op prefix); the practice tree gets one of mpsgen's writing
    for rel in ("operations/ReduceOps.mm", "kernels/ReduceOps.metal"):
        shutil.copyfile(_PRACTICE_2_14_1 / rel.split("/")[1], root / "aten/src/ATen/native/mps" / rel)
    for rel, data in real.items():
        (root / rel).write_bytes(data)
