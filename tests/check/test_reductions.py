"""MPS019: a reduction stub's MPS registration against the kernels its host asks for.

On practice trees of both releases after ``migrate-from-mpsgraph prod`` and ``var`` (clean), then
broken as a change could break them (the kernel's registrations deleted, the host asking for
another name, a registration of a function that does not exist); and on a dispatcher of mpsgen's
own in upstream's shape (ReduceOps.mm of 2.14.1: a kernel prefix handed down through a static
helper, a struct's designated initializer and a lambda, to ``fmt::format("{}...", prefix)``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.check.conftest import edit, line_of

MM = "aten/src/ATen/native/mps/operations/ReduceOps.mm"
METAL = "aten/src/ATen/native/mps/kernels/ReduceOps.metal"
RULES = ("--select", "MPS017,MPS018,MPS019")


def _check(run, root: Path) -> list[str]:
    res = run("check", "--root", root, "--strict", *RULES)
    return [ln for ln in res.output.splitlines() if re.search(r" MPS\d{3} (error|warning):", ln)]


@pytest.fixture
def migrated(run, real_tree: Path) -> Path:
    for args in (("prod", "--allow-dtype-loss"), ("var",)):
        res = run("migrate-from-mpsgraph", *args, "--root", real_tree)
        assert res.exit_code == 0, res.output
    return real_tree


def test_what_the_reduction_migrations_write_is_clean(run, migrated: Path):
    assert _check(run, migrated) == []


def _dispatched(tree: Path) -> bool:
    """prod written for the tree's own reduction dispatcher (2.14.1's shape): an op struct and
    REGISTER_VALUE_REDUCTION_IMPL lines; the host hands the dispatcher the prefix "prod_"."""
    return "REGISTER_VALUE_REDUCTION_IMPL(float, float, \"prod\"" in (tree / METAL).read_text()


def test_a_deleted_kernel_is_reported_at_the_stubs_registration(run, migrated: Path):
    metal = migrated / METAL
    if _dispatched(migrated):
        metal.write_text(re.sub(r'^REGISTER_VALUE_REDUCTION_IMPL\(\w+, \w+, "prod", .*\n', "", metal.read_text(), flags=re.M))
        found = [ln for ln in _check(run, migrated) if " MPS019 " in ln]
        line = line_of(migrated, MM, "REGISTER_DISPATCH(prod_stub, &mps::prod_mps_kernel);")
        # (one finding per kernel name the dispatcher may make of the prefix)
        assert found and all(f.startswith(f"{MM}:{line}: MPS019 error:") for f in found), found
        assert all('"prod_"' in f and "prod_stub's ops fail on MPS at run time" in f for f in found), found
        return
    metal.write_text(re.sub(r"^REGISTER_PROD_REDUCTION\(\w+, \w+\);\n", "", metal.read_text(), flags=re.M))
    found = [ln for ln in _check(run, migrated) if " MPS019 " in ln]
    line = line_of(migrated, MM, "REGISTER_DISPATCH(prod_stub, &mps::prod_mps_kernel);")
    asked = line_of(migrated, MM, "lib.getPipelineStateForFunc(kernel_name)")  # (prod's host comes first)
    assert len(found) == 1 and found[0].startswith(f"{MM}:{line}: MPS019 error:"), found
    assert "`prod_reduction_general_{}_{}`" in found[0] and f"(ReduceOps.mm:{asked})" in found[0]
    assert "prod_stub's ops fail on MPS at run time" in found[0]


def test_a_kernel_block_deleted_whole_is_reported(run, migrated: Path):
    """The var kernel, its macro and its registrations gone (prod's stay)."""
    metal = migrated / METAL
    text = metal.read_text()
    start = text.index("#define REGISTER_STD_VAR_REDUCTION")
    end = text.index("REGISTER_STD_VAR_REDUCTION(bfloat, bfloat);\n") + len("REGISTER_STD_VAR_REDUCTION(bfloat, bfloat);\n")
    metal.write_text(text[:start] + text[end:])
    found = [ln for ln in _check(run, migrated) if " MPS019 " in ln]
    line = line_of(migrated, MM, "REGISTER_DISPATCH(std_var_stub, &mps::std_var_mps_kernel);")
    assert len(found) == 1 and found[0].startswith(f"{MM}:{line}: MPS019 error:") and "`std_var_reduction_general_{}_{}`" in found[0]


def test_a_host_asking_for_another_prefix_is_reported(run, migrated: Path):
    if _dispatched(migrated):  # the prefix the host hands the dispatcher
        text = (migrated / MM).read_text()
        n = text.count('"prod_"')
        assert n >= 1
        edit(migrated, MM, '"prod_"', '"prd_"', count=n)
        want = '"prd_"'
    else:
        edit(migrated, MM, '"prod_reduction_general_{}_{}"', '"prd_reduction_general_{}_{}"')
        want = "`prd_reduction_general_{}_{}`"
    found = [ln for ln in _check(run, migrated) if " MPS019 " in ln]
    line = line_of(migrated, MM, "REGISTER_DISPATCH(prod_stub, &mps::prod_mps_kernel);")
    assert found and all(f.startswith(f"{MM}:{line}: MPS019 error:") and want in f for f in found), found
    assert len(found) == 1 or _dispatched(migrated)  # (the dispatcher's kernel names: one finding each)


@pytest.mark.parametrize("function", ["std_var_mps_kernel_v2", "std_var_kernel_mps"])
def test_a_registration_of_a_function_that_does_not_exist_is_reported(run, migrated: Path, function: str):
    edit(migrated, MM, "REGISTER_DISPATCH(std_var_stub, &mps::std_var_mps_kernel);", f"REGISTER_DISPATCH(std_var_stub, &mps::{function});")
    found = [ln for ln in _check(run, migrated) if " MPS019 " in ln]
    line = line_of(migrated, MM, f"REGISTER_DISPATCH(std_var_stub, &mps::{function});")
    assert found == [
        (f"{MM}:{line}: MPS019 error: REGISTER_DISPATCH(std_var_stub, &mps::{function}) registers {function}, which no file "
         f"under aten/src/ATen/native/mps defines: the build fails (mpsgen check --explain MPS019)")
    ]


# -- a dispatcher in upstream's shape (mpsgen's own text) ---------------------------------------
FOLD_MM = """\
#include <ATen/native/ReduceOps.h>
#include <ATen/native/mps/OperationUtils.h>
#include <fmt/format.h>

namespace at::native {

static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();

// which kernels a fold runs: the prefix of its first pass and of its second
struct FoldRoute {
  std::string head;
  std::string second_head;
  ScalarType in_type;
};

static void fold_dispatch(TensorIterator& iter, const FoldRoute& route) {
  const auto in_name = scalarToMetalTypeString(route.in_type);
  auto launch = [&](const Tensor& t, const std::string& head, const char* variant) {
    auto name = fmt::format("{}fold_{}_{}", head, variant, in_name);
    auto pso = lib.getPipelineStateForFunc(name);
    (void)pso;
    (void)t;
  };
  if (iter.output(0).numel() > 1) {
    launch(iter.input(0), route.head, "rows");
    return;
  }
  launch(iter.input(0), route.head, "flat");
  launch(iter.output(0), route.second_head, "flat");
  auto last = fmt::format("{}fold_{}", route.head, in_name);
  auto pso = lib.getPipelineStateForFunc(last);
  (void)pso;
}

static void fold_kernel_mps(TensorIterator& iter, const std::string& head) {
  fold_dispatch(iter, FoldRoute{.head = head, .second_head = "psum_", .in_type = iter.input(0).scalar_type()});
}

static void and_kernel_mps(TensorIterator& iter) {
  fold_kernel_mps(iter, "psum_");
}

static void or_kernel_mps(TensorIterator& iter) {
  const bool skip_nan = isFloatingType(iter.input(0).scalar_type());
  fold_kernel_mps(iter, skip_nan ? "pnansum_" : "psum_");
}

static void pxor_launch(const Tensor& input) {
  auto pso = lib.getPipelineStateForFunc(fmt::format("pxor_fold_{}", scalarToMetalTypeString(input)));
  (void)pso;
}

static void xor_sum_kernel_mps(TensorIterator& iter) {
  const Tensor& input = iter.input(0);
  TORCH_CHECK(input.scalar_type() == kFloat || input.scalar_type() == kHalf, "pxor: unsupported dtype ", input.scalar_type());
  pxor_launch(input);
}

REGISTER_DISPATCH(and_stub, &and_kernel_mps)
REGISTER_DISPATCH(or_stub, &or_kernel_mps)
REGISTER_DISPATCH(xor_sum_stub, &xor_sum_kernel_mps)

} // namespace at::native
"""

# its kernels: registrations through macros that call macros, the prefix a string argument
FOLD_METAL = """\
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void fold(constant T* input [[buffer(0)]], device T* output [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  output[i] = input[i];
}

#define FOLD_ONE(T, HEAD, VARIANT)                                   \\
  template [[host_name(HEAD "fold_" VARIANT "_" #T)]] kernel void fold<T>( \\
      constant T * input [[buffer(0)]],                              \\
      device T * output [[buffer(1)]],                               \\
      uint i [[thread_position_in_grid]]);

#define FOLD_ALL(T, HEAD)                                    \\
  FOLD_ONE(T, HEAD, "rows")                                  \\
  FOLD_ONE(T, HEAD, "flat")                                  \\
  template [[host_name(HEAD "fold_" #T)]] kernel void fold<T>( \\
      constant T * input [[buffer(0)]],                      \\
      device T * output [[buffer(1)]],                       \\
      uint i [[thread_position_in_grid]]);

#define PSUM(T) FOLD_ALL(T, "psum_")
#define PNANSUM(T) FOLD_ALL(T, "pnansum_")

PSUM(float);
PSUM(half);
PNANSUM(float);

template [[host_name("pxor_fold_float")]] kernel void fold<float>(
    constant float* input [[buffer(0)]],
    device float* output [[buffer(1)]],
    uint i [[thread_position_in_grid]]);
"""

FOLD_MM_REL = "aten/src/ATen/native/mps/operations/Fold.mm"
FOLD_METAL_REL = "aten/src/ATen/native/mps/kernels/Fold.metal"


@pytest.fixture
def fold_tree(real_tree: Path) -> Path:
    (real_tree / FOLD_MM_REL).write_text(FOLD_MM)
    (real_tree / FOLD_METAL_REL).write_text(FOLD_METAL)
    return real_tree


def _mps019(run, root: Path) -> list[str]:
    return [ln for ln in _check(run, root) if " MPS019 " in ln]


def test_a_prefix_handed_down_to_the_dispatcher_is_followed(run, fold_tree: Path):
    # pxor's dtype check accepts half, which no .metal registers (MPS017 says so at the request)
    found = _check(run, fold_tree)
    xor_line = line_of(fold_tree, FOLD_MM_REL, "REGISTER_DISPATCH(xor_sum_stub")
    assert [ln for ln in found if " MPS019 " in ln] == [
        (f"{FOLD_MM_REL}:{xor_line}: MPS019 error: REGISTER_DISPATCH(xor_sum_stub, &xor_sum_kernel_mps): xor_sum_kernel_mps asks the "
         f"shader library for `pxor_fold_half` (Fold.mm:{line_of(fold_tree, FOLD_MM_REL, 'pxor_fold_{}')}, through pxor_launch) "
         "(its dtype check accepts half), which no kernels/*.metal registers with [[host_name(...)]]: xor_sum_stub's ops fail "
         "on MPS at run time (mpsgen check --explain MPS019)")
    ]
    assert [ln.split(": ", 1)[0] for ln in found if " MPS019 " not in ln] == [f"{FOLD_MM_REL}:{line_of(fold_tree, FOLD_MM_REL, 'pxor_fold_{}')}"]


def test_a_prefix_with_no_kernels_is_reported_through_the_chain(run, fold_tree: Path):
    edit(fold_tree, FOLD_MM_REL, 'fold_kernel_mps(iter, "psum_");', 'fold_kernel_mps(iter, "pmax_");')
    found = [ln for ln in _mps019(run, fold_tree) if "and_stub" in ln]
    line = line_of(fold_tree, FOLD_MM_REL, "REGISTER_DISPATCH(and_stub")
    assert all(ln.startswith(f"{FOLD_MM_REL}:{line}: MPS019 error:") for ln in found)
    asked = sorted(re.search(r"for `([^`]*)`", ln).group(1) for ln in found)
    assert asked == ["pmax_fold_{}", "pmax_fold_{}_{}"]
    launch = line_of(fold_tree, FOLD_MM_REL, "lib.getPipelineStateForFunc(name)")
    assert any(f'with the prefix "pmax_" (Fold.mm:{launch}, through fold_kernel_mps -> fold_dispatch -> launch)' in ln for ln in found)


def test_each_literal_that_may_reach_the_prefix_needs_its_kernels(run, fold_tree: Path):
    """or's prefix is `skip_nan ? "pnansum_" : "psum_"`: with pnansum's registrations gone its
    first pass has no kernel; and its second pass's "psum_" still has. MPS017 cannot tell: the
    name it reads starts with a hole."""
    edit(fold_tree, FOLD_METAL_REL, "PNANSUM(float);\n", "")
    found = _check(run, fold_tree)
    line = line_of(fold_tree, FOLD_MM_REL, "REGISTER_DISPATCH(or_stub")
    ours = [ln for ln in found if " MPS019 " in ln and "or_stub" in ln]
    assert sorted(re.search(r"for `([^`]*)`", ln).group(1) for ln in ours) == ["pnansum_fold_{}", "pnansum_fold_{}_{}"]
    assert all(ln.startswith(f"{FOLD_MM_REL}:{line}: ") for ln in ours)
    assert not [ln for ln in found if " MPS019 " in ln and "and_stub" in ln]
    assert not [ln for ln in found if " MPS017 " in ln and "fold_{}" in ln and "pxor" not in ln]


def test_a_prefix_computed_at_run_time_is_not_guessed(run, fold_tree: Path):
    edit(fold_tree, FOLD_MM_REL, 'fold_kernel_mps(iter, "psum_");', "fold_kernel_mps(iter, std::string(iter.dtype().name()));")
    assert not [ln for ln in _mps019(run, fold_tree) if "and_stub" in ln]


def test_a_registered_lambda_is_not_called_undefined(run, fold_tree: Path):
    edit(fold_tree, FOLD_MM_REL, "REGISTER_DISPATCH(and_stub, &and_kernel_mps)",
         "REGISTER_DISPATCH(and_stub, [](TensorIterator& iter) { and_kernel_mps(iter); })")
    assert not [ln for ln in _mps019(run, fold_tree) if "and_stub" in ln]
