"""The real files of the two torch releases the tests read: 2.13.0 from the installed wheel,
2.14.1 from its wheel in the local package index (``pip download``, never installed), whose
needed members are extracted once into a cache folder shared by later runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mpsgen.practice import real_file_sources

INSTALLED = "2.13.0"
NEWER = "2.14.1"
# the wheel members a practice tree and the tests read (torchgen whole: the AOTI shim generator)
MEMBERS = (
    "torchgen/",
    "torch/testing/_internal/",
    "torch/include/c10/metal/",
    "torch/include/ATen/native/",
    "torch/include/torch/csrc/inductor/aoti_torch/generated/",
    "torch/version.py",
)


def _cache_root() -> Path:
    base = os.environ.get("MPSGEN_TEST_CACHE") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mpsgen-tests"


def extracted(version: str) -> tuple[Path | None, str]:
    """(folder holding the wheel's torch/ and torchgen/, "") or (None, why it cannot be had)."""
    site = _cache_root() / f"torch-{version}"
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
