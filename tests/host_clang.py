"""Type-check a tree's .mm files with a real clang on Linux: zig's clang (the ``ziglang`` package),
``-fsyntax-only -x objective-c++ -std=c++20 -fblocks -fno-objc-arc -DAT_PER_OPERATOR_HEADERS
-DUSE_MPS`` (``__APPLE__`` not defined: Linux's ``int64_t`` is ``long``), against

- the tree's own headers (``aten/src``: what a build of the tree puts first),
- the ``_native.h`` headers torchgen makes from the tree's own native_functions.yaml (with the
  release's torchgen, MPS kept: tests/aten_ops_headers.py), for every operator the files include,
- the release wheel's ``torch/include``,
- tests/apple_sdk, mpsgen's model of the Apple SDK.

zig runs as ``zig clang`` with zig's own libc++ and glibc headers named here: ``zig c++`` would
first build libc++ and glibc for the host (minutes, once per machine) although nothing is linked.
Generated headers are cached in ~/.cache/mpsgen-tests per release and yaml."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SDK_MODEL = Path(__file__).parent / "apple_sdk"
_GENERATOR = Path(__file__).parent / "aten_ops_headers.py"
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "mpsgen-tests" / "aten-ops"
# zig 0.17's libc++ configuration (what `zig c++` passes for x86_64-linux-gnu, glibc 2.36)
_LIBCXX = (
    "-D__GLIBC_MINOR__=36", "-D_LIBCPP_ABI_VERSION=1", "-D_LIBCPP_ABI_NAMESPACE=__1", "-D_LIBCPP_HAS_THREADS=1",
    "-D_LIBCPP_HAS_MONOTONIC_CLOCK", "-D_LIBCPP_HAS_TERMINAL", "-D_LIBCPP_HAS_MUSL_LIBC=0",
    "-D_LIBCPP_HAS_FILESYSTEM=1", "-D_LIBCPP_HAS_RANDOM_DEVICE", "-D_LIBCPP_HAS_LOCALIZATION",
    "-D_LIBCPP_HAS_UNICODE", "-D_LIBCPP_HAS_WIDE_CHARACTERS", "-D_LIBCPP_HAS_NO_STD_MODULES",
    "-D_LIBCPP_HAS_TIME_ZONE_DATABASE", "-D_LIBCPP_PSTL_BACKEND_SERIAL",
    "-D_LIBCPP_HARDENING_MODE=_LIBCPP_HARDENING_MODE_NONE",
    "-D_LIBCPP_ASSERTION_SEMANTIC_DEFAULT=_LIBCPP_ASSERTION_SEMANTIC_IGNORE",
)
_PER_OPERATOR = re.compile(r"^#include <ATen/ops/([A-Za-z0-9_]+?)(?:_native|_ops|_meta)?\.h>", re.M)


def zig_clang() -> tuple[list[str] | None, str]:
    """The clang command (zig's, with its own C++ and C headers), or (None, why it cannot be had)."""
    try:
        import ziglang
    except ImportError:
        return None, "zig's clang is not installed (pip install ziglang, one of the test extras: pip install -e '.[test]')"
    lib = Path(ziglang.__file__).parent / "lib"
    libc = lib / "libc" / "include"
    needed = [lib / "libcxx" / "include", lib / "libcxxabi" / "include", lib / "include", libc / "x86-linux-gnu",
              libc / "generic-glibc", libc / "x86-linux-any", libc / "any-linux-any"]
    missing = [str(d) for d in needed if not d.is_dir()]
    if missing:
        return None, f"the ziglang package has not the header folders this check uses (zig 0.17's layout): {missing[0]}"
    cmd = [sys.executable, "-m", "ziglang", "clang", "--target=x86_64-linux-gnu", "-nostdinc", "-nostdinc++", *_LIBCXX]
    for d in needed:
        cmd += ["-isystem", str(d)]
    return cmd, ""


def operators_included(texts: list[str]) -> set[str]:
    """The operators whose ATen/ops headers the given sources include."""
    return {m.group(1) for t in texts for m in _PER_OPERATOR.finditer(t)}


def ops_headers(torchgen_parent: Path, yaml_path: Path, tags_path: Path, names: set[str]) -> Path:
    """A folder holding ATen/ops/<name>_native.h for ``names`` (and <name>.h, _ops.h, _meta.h
    for a name the wheel has none of), generated from ``yaml_path`` by the torchgen in
    ``torchgen_parent``, the folder holding the release's torch/ and torchgen/ (cached by all)."""
    key = hashlib.sha256()
    for part in (str(torchgen_parent.resolve()), " ".join(sorted(names)), yaml_path.read_text(encoding="utf-8"),
                 tags_path.read_text(encoding="utf-8"), _GENERATOR.read_text(encoding="utf-8"),
                 Path(__file__).read_text(encoding="utf-8")):
        key.update(part.encode() + b"\0")
    out = _CACHE / key.hexdigest()[:24]
    if (out / ".complete").is_file():
        return out
    _CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".ops-", dir=_CACHE))
    env = {**os.environ, "PYTHONPATH": str(torchgen_parent)}
    subprocess.run([sys.executable, "-B", str(_GENERATOR), str(yaml_path),
                    str(tags_path), str(staging), *sorted(names)],
                   check=True, capture_output=True, text=True, env=env, cwd=staging)
    # only the _native.h headers depend on the dispatch lines; an op's other headers (its schema:
    # <name>.h, _ops.h, _meta.h) are the wheel's, where it has them, so that a precompiled header
    # made with one tree's folder reads the same files as a run with another's
    wheel_ops = torchgen_parent / "torch" / "include" / "ATen" / "ops"
    for made in (staging / "ATen" / "ops").glob("*.h"):
        if not made.name.endswith("_native.h") and (wheel_ops / made.name).is_file():
            made.unlink()
    (staging / ".complete").write_text("")
    try:
        staging.rename(out)  # a concurrent run may have won: then its copy is used
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return out


_FIRST_LINE = re.compile(r"\A(?:\s*//[^\n]*\n|\s*\n)*#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n")
# what every operations/*.mm file starts with: parsed once into a precompiled header (the ATen
# and MPS headers are most of each file's parse time: ~6 s of CPU each, ~1 s with it)
_INCLUDES_PREFIX = re.compile(r"^#include <ATen/native/mps/OperationUtils\.h>$", re.M)
_PREFIX = "#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n#include <ATen/native/mps/OperationUtils.h>\n"


def type_check(clang: list[str], files: list[Path], includes: list[Path], work: Path) -> list[str]:
    """clang's errors for ``files`` (each its own translation unit), ``includes`` searched in
    order, then the SDK model; [] when there are none. A file starting as every operations/*.mm
    does (``#define TORCH_ASSERT_ONLY_METHOD_OPERATORS``) is parsed after a precompiled
    OperationUtils.h (made in ``work`` once: a later run over the same tree's headers reuses
    it), which it includes anyway; any other on its own."""
    # errors only, and two warnings as errors: a message the SDK does not declare (a made-up
    # MPSGraph method is only a warning in Objective-C), and a plain function of at::native that
    # nothing declares (a kernel whose signature is not its yaml row's: it would not link)
    cmd = [*clang, "-std=c++20", "-fblocks", "-fno-objc-arc", "-DAT_PER_OPERATOR_HEADERS", "-DUSE_MPS", "-Wno-everything",
           "-Werror=objc-method-access", "-Werror=missing-prototypes", "-ferror-limit=0", "-fno-color-diagnostics"]
    for d in includes:
        cmd += ["-I", str(d)]
    cmd += ["-isystem", str(SDK_MODEL)]
    # (a file not including OperationUtils.h must not get it from the precompiled header)
    prefixed = [f for f in files if _FIRST_LINE.match(t := f.read_text(encoding="utf-8")) and _INCLUDES_PREFIX.search(t)]
    plain = [f for f in files if f not in prefixed]
    runs = []
    if prefixed:
        header, pch = work / "prefix.h", work / "prefix.pch"
        if not pch.is_file():
            header.write_text(_PREFIX, encoding="utf-8")
            made = _clang([*cmd, "-x", "objective-c++-header", str(header), "-o", str(pch)])
            if made.returncode != 0:
                return _errors(made)
        runs.append([*cmd, "-fsyntax-only", "-x", "objective-c++", "-include-pch", str(pch), *map(str, prefixed)])
    if plain:
        runs.append([*cmd, "-fsyntax-only", "-x", "objective-c++", *map(str, plain)])
    return [e for run in runs for e in _errors(_clang(run))]


def _clang(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=900)


def _errors(proc: subprocess.CompletedProcess) -> list[str]:
    errors = [ln for ln in proc.stderr.splitlines() if ": error: " in ln or ln.startswith("fatal error")]
    if proc.returncode != 0 and not errors:
        errors = [f"clang exited {proc.returncode}: {proc.stderr.strip()[-2000:]}"]
    return errors
