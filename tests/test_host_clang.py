"""What mpsgen writes into .mm files, and the practice tree's own .mm files, are type-checked by a
real clang against each release's real headers (tests/host_clang.py): the wheel's torch/include,
the ATen/ops headers torchgen makes from the tree's own yaml after the change, and mpsgen's model
of the Apple SDK (tests/apple_sdk). A host function calling a helper with the wrong arguments, a
TORCH_IMPL_FUNC for a kernel the yaml does not declare, a missing include or a made-up MPSGraph
method fails here as it would fail PyTorch's build."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.tree import NATIVE_FUNCTIONS
from mpsgen.tree.aoti import TAGS_YAML
from tests.conftest import snapshot
from tests.host_clang import ops_headers, operators_included, type_check, zig_clang
from tests.releases import INSTALLED, extracted

OPS = "aten/src/ATen/native/mps/operations"


@pytest.fixture(scope="module")
def clang() -> list[str]:
    cmd, why = zig_clang()
    if cmd is None:
        pytest.skip(why)
    return cmd


def wheel(release: str) -> Path:
    """The folder holding the release's torch/ (headers) and torchgen/."""
    if release == INSTALLED:
        import torchgen

        return Path(torchgen.__file__).parent.parent
    site, why = extracted(release)
    if site is None:
        pytest.skip(why)
    return site


def errors(clang: list[str], root: Path, release: str, files: list[Path], work: Path) -> list[str]:
    """clang's errors for ``files`` of the tree at ``root``, built as an MPS build of it would be."""
    site = wheel(release)
    ops = ops_headers(site, root / NATIVE_FUNCTIONS, root / TAGS_YAML,
                      operators_included([f.read_text(encoding="utf-8") for f in files]))
    include = site / "torch" / "include"
    work.mkdir(parents=True, exist_ok=True)
    return type_check(clang, files, [root / "aten/src", ops, include, include / "torch/csrc/api/include"], work)


# the MPSGraph logit of a tree, as PointwiseOps.mm held it before upstream moved logit to Metal
# (two plain functions over a static graph helper), for the unary_alpha migration
POINTWISE_MM = """\
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/empty_like.h>
#include <ATen/ops/logit_native.h>
#endif

namespace at::native {
namespace mps {

// log(x / (1 - x)); x is clamped to [eps, 1 - eps] first when eps is given
static void logit_graph(const Tensor& self, std::optional<double> eps, const Tensor& result) {
  @autoreleasepool {
    const std::string key = "logit" + std::to_string(eps.value_or(-1.0)) + getTensorsStringKey({self});
    auto graph = LookUpOrCreateCachedGraph<MPSUnaryCachedGraph>(key, [&](auto* g, auto* entry) {
      entry->inputTensor_ = mpsGraphRankedPlaceHolder(g, self);
      MPSGraphTensor* x = entry->inputTensor_;
      if (eps.has_value()) {
        x = [g clampWithTensor:x
                minValueTensor:[g constantWithScalar:*eps dataType:[x dataType]]
                maxValueTensor:[g constantWithScalar:1.0 - *eps dataType:[x dataType]]
                          name:nil];
      }
      MPSGraphTensor* one = [g constantWithScalar:1.0 dataType:[x dataType]];
      MPSGraphTensor* rest = [g subtractionWithPrimaryTensor:one secondaryTensor:x name:nil];
      MPSGraphTensor* odds = [g divisionWithPrimaryTensor:x secondaryTensor:rest name:nil];
      entry->outputTensor_ = [g logarithmWithTensor:odds name:nil];
    });
    auto input = Placeholder(graph->inputTensor_, self);
    auto output = Placeholder(graph->outputTensor_, result);
    runMPSGraph(getCurrentMPSStream(), graph->graph(), dictionaryFromPlaceholders(input), output);
  }
}

} // namespace mps

Tensor& logit_out_mps(const Tensor& self, std::optional<double> eps, Tensor& result) {
  mps::logit_graph(self, eps, result);
  return result;
}

Tensor logit_mps(const Tensor& self, std::optional<double> eps) {
  Tensor result = at::empty_like(self);
  logit_out_mps(self, eps, result);
  return result;
}

} // namespace at::native
"""

# a ternary op of one's own: its rows, and its stub beside the tree's binary ones
FMA_ROW = """
- func: mpsgen_fma(Tensor self, Tensor a, Tensor b) -> Tensor
  structured_delegate: mpsgen_fma.out
  tags: pointwise

- func: mpsgen_fma.out(Tensor self, Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA: mpsgen_fma_out
  tags: pointwise
"""
FMA_STUB = "using mpsgen_fma_fn = void (*)(TensorIteratorBase&);\nDECLARE_DISPATCH(mpsgen_fma_fn, mpsgen_fma_stub)\n"

# every host shape mpsgen writes, by the command that writes it; (command, what the .mm then holds)
SHAPES = [
    # params kinds: a params struct filled from the stub's arguments (binary_params, unary_params)
    (("migrate-from-mpsgraph", "threshold"), "const ThresholdParams<opmath_t> params{"),
    (("migrate-from-mpsgraph", "threshold_backward"), "REGISTER_DISPATCH(threshold_stub,"),
    (("migrate-from-mpsgraph", "softplus"), 'fmt::format("SoftplusParams_{}"'),
    (("migrate-from-mpsgraph", "softplus_backward"), 'fmt::format("SoftplusBackwardParams_{}"'),
    # a selector: the stub's enum argument picks the kernel; the structured row calls the stub
    (("migrate-from-mpsgraph", "gelu"), "REGISTER_DISPATCH(GeluKernel, gelu_mps_kernel);"),
    (("migrate-from-mpsgraph", "gelu_backward"), "GeluBackwardKernel(kMPS, *this, get_gelutype_enum(approximate));"),
    # migrations of unary ops (a TORCH_IMPL_FUNC block goes, a helper-macro line comes)
    (("migrate-from-mpsgraph", "frac"), "REGISTER_UNARY_TI_DISPATCH(frac);"),
    (("migrate-from-mpsgraph", "signbit"), "REGISTER_UNARY_TI_DISPATCH(signbit);"),
    # binary_alpha, and a two-row op whose other row stays on MPSGraph
    (("migrate-from-mpsgraph", "sub", "--stub", "sub_stub", "--allow-dtype-loss"), 'lib.exec_binary_kernel(iter, "sub_alpha", alpha);'),
    (("migrate-from-mpsgraph", "pow", "--binary", "--int2float", "--expr", "::metal::pow(a, b)", "--partial"),
     "REGISTER_DISPATCH(pow_tensor_tensor_stub, &pow_mps_kernel)"),
    # unary_alpha: two plain functions and their static graph helper go
    (("migrate-from-mpsgraph", "logit", "--kind", "unary_alpha", "--int2float", "--expr", "::metal::log(x / (1 - x))",
      "--stub", "logit_stub"), 'lib.exec_unary_kernel(iter, "logit", alpha, ScalarType::Float);'),
    # new ops: binary, unary (the file's helper macro), a binary op whose stub is named otherwise
    (("new-op", "heaviside"), 'lib.exec_binary_kernel(iter, "heaviside");'),
    (("new-op", "special_ndtri"), "REGISTER_UNARY_TI_DISPATCH(special_ndtri);"),
    (("new-op", "special_laguerre_polynomial_l"), "REGISTER_DISPATCH(laguerre_polynomial_l_stub,"),
    (("new-op", "mpsgen_fma", "--kind", "ternary", "--expr", "a * b + c", "--stub", "mpsgen_fma_stub"),
     'lib.exec_ternary_kernel(iter, "mpsgen_fma");'),
    # new kernels of their own: functional rows (Distance.mm joined), a structured row (a new file)
    (("new-kernel", "_pdist_forward"), "Tensor _pdist_forward_mps(const Tensor& self, double p) {"),
    (("new-kernel", "_pdist_backward"), "mps::pdist_backward_kernel("),
    (("new-kernel", "adaptive_max_pool3d_backward"), "TORCH_IMPL_FUNC(adaptive_max_pool3d_backward_out_mps)"),
    # reductions through their shared stubs: the general kernel's host (one output; two for var_mean/std_mean)
    (("migrate-from-mpsgraph", "prod", "--allow-dtype-loss"), "REGISTER_DISPATCH(prod_stub, &mps::prod_mps_kernel);"),
    (("migrate-from-mpsgraph", "var"), "REGISTER_DISPATCH(std_var_stub, &mps::std_var_mps_kernel);"),
]
# 2.13's MPSGraph kernels that 2.14.1 has on Metal already (a macro instance's line, a plain
# function in a file of its own)
SHAPES_2_13 = [
    (("migrate-from-mpsgraph", "acosh"), "REGISTER_UNARY_TI_DISPATCH(acosh);"),
    (("migrate-from-mpsgraph", "asinh"), "REGISTER_UNARY_TI_DISPATCH(asinh);"),
    (("migrate-from-mpsgraph", "nan_to_num"), 'fmt::format("NanToNumParams_{}"'),
]


# host code that looks right but would not build, each on a line of its own
BROKEN = [
    "REGISTER_DISPATCH(hardtanh_stub, &fmin_mps_kernel);",  # no such stub (hardtanh runs clamp_stub)
    "TORCH_IMPL_FUNC(heaviside_out_mps)(const Tensor& self, const Tensor& other, const Tensor& out) {}",  # no MPS row
    "Tensor& heaviside_out_mps(const Tensor& self, const Tensor& other, Tensor& out) { return out; }",  # nor a plain one
    'static void one(TensorIteratorBase& iter) { lib.exec_unary_kernel("one"); }',  # the iterator left out
    'static void two(TensorIteratorBase& iter) { lib.exec_binary_kernel(iter, "two", iter); }',  # not a Scalar
    "static MPSGraphTensor* three(MPSGraph* g, MPSGraphTensor* x) { return [g powWithPrimaryTensor:x secondaryTensor:x name:nil]; }",
    "static void four(MPSStream* s) { [s->commandEncoder() dispatchThreads:MTLSizeMake(1, 1, 1)]; }",
    "static void five(const Tensor& t) { mps::mtl_setArgs(t); }",
]


def test_the_practice_tree_and_every_host_shape_mpsgen_writes(clang, real_tree: Path, release: str, run, tmp_path: Path):
    """One tree a release, one precompiled OperationUtils.h for its clang runs: its own .mm
    files as they are (no error), a copy of one with the BROKEN lines (an error at each), then
    every .mm file that the SHAPES commands change or write (no error)."""
    work = tmp_path / "clang"
    (real_tree / OPS / "PointwiseOps.mm").write_text(POINTWISE_MM, encoding="utf-8")
    own = sorted((real_tree / OPS).glob("*.mm"))
    assert len(own) >= 8
    broken = tmp_path / "Broken.mm"  # (outside the tree: mpsgen never sees it)
    text = (real_tree / OPS / "BinaryKernel.mm").read_text(encoding="utf-8")
    end = text.rindex("} // namespace at::native")
    broken.write_text(text[:end] + "\n".join(BROKEN) + "\n" + text[end:], encoding="utf-8")
    found = errors(clang, real_tree, release, own, work)
    assert not found, "\n".join(found)
    found = errors(clang, real_tree, release, [broken], work)
    lines = broken.read_text(encoding="utf-8").split("\n")
    at = {int(e.split(":")[1]) for e in found if e.startswith(f"{broken}:")}
    for code in BROKEN:
        assert lines.index(code) + 1 in at, (code, found)

    with open(real_tree / NATIVE_FUNCTIONS, "a", encoding="utf-8") as fh:
        fh.write(FMA_ROW)
    header = real_tree / "aten/src/ATen/native/BinaryOps.h"
    text = header.read_text(encoding="utf-8")
    end = text.rindex("} // namespace at::native")
    header.write_text(text[:end] + FMA_STUB + text[end:], encoding="utf-8")
    before = snapshot(real_tree)
    shapes = SHAPES + (SHAPES_2_13 if release == INSTALLED else [])
    for args, _ in shapes:
        res = run(*args, "--root", real_tree)
        if res.exit_code != 0 or "nothing to do" in res.output:
            pytest.fail(f"mpsgen {' '.join(args)}: {res.output}")
    after = snapshot(real_tree)
    hosts = sorted(real_tree / p for p, data in after.items() if p.endswith(".mm") and before.get(p) != data)
    written = "\n".join(p.read_text(encoding="utf-8") for p in hosts)
    for args, piece in shapes:
        assert piece in written, (args, piece)
    found = errors(clang, real_tree, release, hosts, work)
    assert not found, "\n".join(found)
