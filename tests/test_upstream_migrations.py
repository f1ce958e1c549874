"""Real upstream migrations as golden cases: hypot, fmax and fmin ran on MPSGraph
(`MPS: <op>_out_mps`) before PyTorch moved them to Metal kernels. Put their old MPS line back
into a copy of torch 2.13's native_functions.yaml, give the practice tree an MPSGraph
implementation of each (mpsgen's own text), migrate, and the yaml and the test lists must
equal 2.13's files byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.tree import COMMON_METHODS, COMMON_MPS, NATIVE_FUNCTIONS
from tests.conftest import REAL

OPS_MM = "aten/src/ATen/native/mps/operations/BinaryOps.mm"
UPSTREAM = ("hypot", "fmax", "fmin")

MPSGRAPH_IMPL = """
TORCH_IMPL_FUNC({op}_out_mps)(const Tensor& self, const Tensor& other, const Tensor& output) {{
  mps::binaryOpTensor(
      self, other, output, "{op}_out_mps", ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x, MPSGraphTensor* y) {{
        return [g {selector}WithPrimaryTensor:x secondaryTensor:y name:nil];
      }});
}}
"""
# fmax/fmin's OpInfos test integers and bool on MPS: the kernel must keep serving them
DTYPES = {"hypot": (), "fmax": ("--integer",), "fmin": ("--integer",)}
SELECTORS = {"hypot": "hypot", "fmax": "maximumWithNaNPropagation", "fmin": "minimumWithNaNPropagation"}


def _put_mpsgraph_back(root: Path, op: str) -> None:
    yaml_path = root / NATIVE_FUNCTIONS
    text = yaml_path.read_text(encoding="utf-8")
    line = f"    CPU, CUDA, MPS: {op}_out\n"
    assert text.count(line) == 1, op
    yaml_path.write_text(text.replace(line, f"    CPU, CUDA: {op}_out\n    MPS: {op}_out_mps\n"), encoding="utf-8")
    mm = root / OPS_MM
    src = mm.read_text(encoding="utf-8")
    src = src.replace("#include <ATen/ops/pow_native.h>\n", f"#include <ATen/ops/pow_native.h>\n#include <ATen/ops/{op}_native.h>\n", 1)
    src = src.replace("\n} // namespace at::native\n", MPSGRAPH_IMPL.format(op=op, selector=SELECTORS[op]) + "\n} // namespace at::native\n")
    mm.write_text(src, encoding="utf-8")


@pytest.mark.parametrize("op", UPSTREAM)
def test_migration_reproduces_upstream(real_tree: Path, run, op):
    mm_before = (real_tree / OPS_MM).read_text(encoding="utf-8")
    _put_mpsgraph_back(real_tree, op)
    res = run("migrate-from-mpsgraph", op, "--binary", *DTYPES[op], "--stub", f"{op}_stub", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert (real_tree / NATIVE_FUNCTIONS).read_bytes() == REAL[NATIVE_FUNCTIONS].read_bytes()
    assert (real_tree / COMMON_MPS).read_bytes() == REAL[COMMON_MPS].read_bytes()
    assert (real_tree / COMMON_METHODS).read_bytes() == REAL[COMMON_METHODS].read_bytes()
    # the MPSGraph code and its include are gone again; the Metal side was already there
    assert (real_tree / OPS_MM).read_text(encoding="utf-8") == mm_before


def test_all_three_in_one_tree(real_tree: Path, run):
    for op in UPSTREAM:
        _put_mpsgraph_back(real_tree, op)
    for op in UPSTREAM:
        res = run("migrate-from-mpsgraph", op, "--binary", *DTYPES[op], "--root", real_tree)
        assert res.exit_code == 0, res.output
    assert (real_tree / NATIVE_FUNCTIONS).read_bytes() == REAL[NATIVE_FUNCTIONS].read_bytes()
