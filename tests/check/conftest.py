"""A consistent tree for ``mpsgen check``: mpsgen's practice sources, a native_functions.yaml
made of the torch 2.13 rows of the ops those sources cover (taken from the installed wheel at
test time), and a few additions of our own so that every MPS row is backed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.check import run_check
from mpsgen.report.practice import build_practice_tree
from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.native_yaml import scan_native_functions
from tests.releases import INSTALLED, sources_as_of

UNARY_METAL = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
BINARY_METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
UNARY_MM = "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
BINARY_MM = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
UNARY_OPS_MM = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
BINARY_OPS_MM = "aten/src/ATen/native/mps/operations/BinaryOps.mm"
UNARY_H = "aten/src/ATen/native/UnaryOps.h"

# ops whose every MPS row the practice sources back (add, xlogy and atan2 are left out:
# their 2.13 rows name kernels the practice sources do not have)
COVERED_OPS = (
    "abs", "sgn", "acosh", "asinh", "atanh", "bitwise_not", "copysign", "polar", "cos", "exp",
    "frac", "gcd", "log", "logaddexp", "mul", "neg", "round", "sigmoid", "sin", "sqrt",
    "threshold", "sub", "bitwise_and", "sign", "hypot", "fmin", "fmax", "pow",
    "sigmoid_backward", "tanh_backward", "heaviside", "special_ndtri", "signbit",
    "threshold_backward", "softplus", "softplus_backward", "gelu", "gelu_backward",
)


def real_rows(yaml_text: str, ops=COVERED_OPS) -> str:
    """The entries of ``ops`` (all overloads and in-place variants), verbatim, in file order."""
    lines = yaml_text.split("\n")
    keep = []
    for e in scan_native_functions(yaml_text).entries:
        op = e.base[:-1] if e.base.endswith("_") else e.base
        if op in ops:
            keep.append("\n".join(lines[e.start_line - 1 : e.end_line]))
    return "# rows of torch 2.13's native_functions.yaml for the ops of the check fixture\n\n" + "\n\n".join(keep) + "\n"


def edit(root: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    """Replace ``old`` (which must occur exactly ``count`` times) in a tree file."""
    path = root / rel
    text = path.read_text()
    assert text.count(old) == count, f"{rel}: expected {count} occurrence(s) of {old!r}, found {text.count(old)}"
    path.write_text(text.replace(old, new))


def shared_line(root: Path, kernel: str) -> str:
    """The yaml line dispatching CPU (and what else the release lists) to ``kernel``, with its
    newline: `    CPU, CUDA, MPS: hypot_out` in 2.13, `    CPU, CUDA, MPS, XPU: hypot_out` in 2.14.1."""
    import re

    m = re.search(rf"^    [A-Za-z0-9_, ]*\bCPU\b[A-Za-z0-9_, ]*: {kernel}\n", (root / NATIVE_FUNCTIONS).read_text(), re.M)
    assert m, f"no shared dispatch line names {kernel}"
    return m.group(0)


def kernel_column(line: str) -> int:
    """1-based column of the kernel name on a dispatch line."""
    return line.index(": ") + 3


def without_mps(line: str, kernel: str) -> str:
    """A shared line with MPS taken off it and given its own `MPS: <kernel>_mps` line."""
    keys, rest = line.split(": ", 1)
    kept = ", ".join(k for k in keys.strip().split(", ") if k != "MPS")
    return f"    {kept}: {rest}    MPS: {kernel}_mps\n"


def found(root: Path, paths=None, cwd=None) -> list[tuple[str, str, int, int]]:
    """(code, path, line, col) of each finding of a whole-tree check, kept by ``paths``."""
    return [(f.code, f.path, f.line, f.col) for f in run_check(PytorchTree(root), paths, cwd).findings]


def line_of(root: Path, rel: str, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line containing ``needle``."""
    hits = [i + 1 for i, ln in enumerate((root / rel).read_text().split("\n")) if needle in ln]
    assert len(hits) >= nth, f"{rel}: {needle!r} found {len(hits)} time(s)"
    return hits[nth - 1]


def build_check_tree(dest: Path, real_sources: dict[str, Path], release: str = INSTALLED) -> Path:
    root, _ = build_practice_tree(dest, real=False)
    rows = real_rows(real_sources[NATIVE_FUNCTIONS].read_text())
    (root / NATIVE_FUNCTIONS).write_text(rows)
    sources_as_of(root, release, {NATIVE_FUNCTIONS: rows.encode()})
    # round.out puts MPS on the shared round_out: give round_stub a Metal kernel
    edit(root, UNARY_H, "DECLARE_DISPATCH(unary_fn, abs_stub)\n", "DECLARE_DISPATCH(unary_fn, abs_stub)\nDECLARE_DISPATCH(unary_fn, round_stub)\n")
    edit(
        root, UNARY_METAL, "struct sigmoid_functor {",
        "struct round_functor {\n  template <typename T>\n  inline T operator()(const T x) {\n    return T(rint(float(x)));\n  }\n};\n\nstruct sigmoid_functor {",
    )
    edit(root, UNARY_METAL, "\nREGISTER_UNARY_OP(abs, int, int);", "\nREGISTER_UNARY_OP(round, float, float);\nREGISTER_UNARY_OP(round, half, half);\n\nREGISTER_UNARY_OP(abs, int, int);")
    edit(root, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(abs);\n", "REGISTER_UNARY_TI_DISPATCH(abs);\nREGISTER_UNARY_TI_DISPATCH(round);\n")
    # the practice nan_to_num (TensorCompare.mm) is the migration tests', not this fixture's
    (root / "aten/src/ATen/native/mps/operations/TensorCompare.mm").unlink(missing_ok=True)
    # (so are the practice reductions: this fixture's yaml has none of their rows)
    (root / "aten/src/ATen/native/mps/operations/ReduceOps.mm").unlink(missing_ok=True)
    # these ops run Metal kernels in 2.13: their expected failures are gone
    for entry in ('            "logaddexp": None,\n',):
        edit(root, COMMON_MPS, entry, "")
    return root


@pytest.fixture
def check_tree(tmp_path: Path, real_sources, release: str) -> Path:
    return build_check_tree(tmp_path / "pytorch", real_sources, release)

# sign.out moved to the shared line: its MPSGraph impl is dead (MPS007), its stub unregistered (MPS002)
def yaml_sign(root: Path) -> tuple[str, str]:
    """(old, new) text of sign.out's dispatch when MPS moves onto its shared line."""
    shared = shared_line(root, "sign_out")
    return shared + "    MPS: sign_out_mps\n", shared.replace(": sign_out", ", MPS: sign_out")


def check_in_fresh_process(then: str, *args: str):
    """Run ``mpsgen check --root ARGS...`` through cli_check.main in a new interpreter without
    site-packages (-S: nothing preloads a module, as in a fresh venv), then the Python code
    ``then`` (``code`` holds the exit status); the finished process."""
    import subprocess
    import sys

    repo = str(Path(__file__).resolve().parents[2])
    code = "import sys; sys.path.insert(0, sys.argv[1])\nfrom mpsgen.cli.check import main\ncode = main(['--root', *sys.argv[2:]])\n" + then
    return subprocess.run([sys.executable, "-S", "-c", code, repo, *args], capture_output=True, text=True)
