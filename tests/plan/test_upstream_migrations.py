"""Real upstream migrations as golden cases: hypot, fmax and fmin ran on MPSGraph
(`MPS: <op>_out_mps`) before PyTorch moved them to Metal kernels. Put their old MPS line back
into a copy of torch 2.13's native_functions.yaml, give the practice tree an MPSGraph
implementation of each (mpsgen's own text), migrate, and the yaml and the test lists must
equal 2.13's files byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.tree import COMMON_METHODS, COMMON_MPS, NATIVE_FUNCTIONS
from tests.conftest import REAL, only_on
from tests.releases import INSTALLED

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


_LATER_KEYS = (
    "its lines of hypot, fmax and fmin read `CPU, CUDA, MPS, XPU` (XPU joined after these migrations), "
    "which no migration writes today; its own golden case is test_migrations_reproduce_the_2_14_1_yaml_byte_for_byte"
)


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
def test_migration_reproduces_upstream(real_tree: Path, run, op, release):
    only_on(release, INSTALLED, _LATER_KEYS)
    mm_before = (real_tree / OPS_MM).read_text(encoding="utf-8")
    _put_mpsgraph_back(real_tree, op)
    res = run("migrate-from-mpsgraph", op, "--binary", *DTYPES[op], "--stub", f"{op}_stub", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert (real_tree / NATIVE_FUNCTIONS).read_bytes() == REAL[NATIVE_FUNCTIONS].read_bytes()
    assert (real_tree / COMMON_MPS).read_bytes() == REAL[COMMON_MPS].read_bytes()
    assert (real_tree / COMMON_METHODS).read_bytes() == REAL[COMMON_METHODS].read_bytes()
    # the MPSGraph code and its include are gone again; the Metal side was already there
    assert (real_tree / OPS_MM).read_text(encoding="utf-8") == mm_before


def test_all_three_in_one_tree(real_tree: Path, run, release):
    only_on(release, INSTALLED, _LATER_KEYS)
    for op in UPSTREAM:
        _put_mpsgraph_back(real_tree, op)
    for op in UPSTREAM:
        res = run("migrate-from-mpsgraph", op, "--binary", *DTYPES[op], "--stub", f"{op}_stub", "--root", real_tree)
        assert res.exit_code == 0, res.output
    assert (real_tree / NATIVE_FUNCTIONS).read_bytes() == REAL[NATIVE_FUNCTIONS].read_bytes()


# -- torch 2.14.1: upstream migrated acosh, asinh, atanh and conj_physical between the releases,
# on lines that already had XPU; MPS was appended after every other key (`CPU, CUDA, XPU, MPS`).
# Put each op's pre-migration rows back into 2.14.1's own yaml, migrate, and the yaml must be
# 2.14.1's again, byte for byte.
NEWER_UNARY = ("acosh", "asinh", "atanh", "conj_physical")
CONJ_MPSGRAPH = """
Tensor& conj_physical_out_mps(const Tensor& self, Tensor& result) {
  TORCH_CHECK(self.is_complex(), "conj_physical_out_mps: expected a complex input");
  mps::unary_op(self, result, "conj_physical_out_mps", ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* t) {
    return [g conjugateWithTensor:t name:nil];
  });
  return result;
}
"""


MORE_UNARY_CPP = """\
namespace at::native {

#define ONE_INPUT_IMPL(kernel, stub) \\
  TORCH_IMPL_FUNC(kernel)(const Tensor& self, const Tensor& result) { stub(device_type(), *this); }

ONE_INPUT_IMPL(atanh_out, atanh_stub)

template <typename Stub>
static Tensor& through_iterator(Tensor& out, const Tensor& in, Stub& stub) {
  auto it = TensorIterator::unary_op(out, in);
  stub(it.device_type(), it);
  return out;
}

Tensor& conj_physical_out(const Tensor& self, Tensor& result) {
  return through_iterator(result, self, conj_physical_stub);
}

} // namespace at::native
"""


@pytest.fixture
def newer_tree(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    from mpsgen.report.practice import build_practice_tree
    from tests.releases import NEWER, release_sources

    sources, why = release_sources(NEWER)
    if sources is None:
        pytest.skip(why)
    root, used = build_practice_tree(tmp_path / "pytorch", sources=sources)
    assert used
    return root, sources


def test_migrations_reproduce_the_2_14_1_yaml_byte_for_byte(newer_tree, run):
    root, real = newer_tree
    yaml_path = root / NATIVE_FUNCTIONS
    text = yaml_path.read_text(encoding="utf-8")
    for op in NEWER_UNARY:
        line = f"    CPU, CUDA, XPU, MPS: {op}_out\n"
        assert text.count(line) == 1, op
        text = text.replace(line, f"    CPU, CUDA, XPU: {op}_out\n    MPS: {op}_out_mps\n")
    yaml_path.write_text(text, encoding="utf-8")
    mm = root / "aten/src/ATen/native/mps/operations/UnaryOps.mm"
    mm.write_text(mm.read_text(encoding="utf-8").replace("\n} // namespace at::native\n", CONJ_MPSGRAPH + "\n} // namespace at::native\n"), encoding="utf-8")
    # the practice tree's .cpp defines neither atanh_out nor conj_physical_out: ours, in upstream's
    # shapes (a macro instance; the stub handed to a helper, as 2.14.1's UnaryOps.cpp does)
    (root / "aten/src/ATen/native/MoreUnaryOps.cpp").write_text(MORE_UNARY_CPP)
    for op in NEWER_UNARY:
        res = run("migrate-from-mpsgraph", op, "--root", root)
        assert res.exit_code == 0, res.output
    assert yaml_path.read_bytes() == real[NATIVE_FUNCTIONS].read_bytes()


def test_2_14_1_keeps_a_line_upstream_wrote_another_way(newer_tree):
    """Written down, not papered over: logical_not's 2.13 line was `CPU, CUDA, MTIA` + `MPS:
    logical_not_out_mps`; 2.14.1 reads `CPU, CUDA, MPS, MTIA, XPU` (MPS put before MTIA when it
    was migrated, XPU added later), where nan_to_num's `CPU, CUDA, MTIA` became `CPU, CUDA, MTIA,
    XPU, MPS`. mpsgen appends (today's habit); a migration of logical_not's 2.13 line gives
    `CPU, CUDA, MTIA, MPS`."""
    from mpsgen.edits.native_functions import migrate_rows

    _root, real = newer_tree
    text = real[NATIVE_FUNCTIONS].read_text(encoding="utf-8")
    assert "    CPU, CUDA, MPS, MTIA, XPU: logical_not_out\n" in text
    assert "    CPU, CUDA, MTIA, XPU, MPS: nan_to_num_out\n" in text
    old = REAL[NATIVE_FUNCTIONS].read_text(encoding="utf-8")
    assert "    CPU, CUDA, MTIA: logical_not_out\n    MPS: logical_not_out_mps\n" in old
    assert "    CPU, CUDA, MTIA, MPS: logical_not_out\n" in migrate_rows(old, ["logical_not.out"])
