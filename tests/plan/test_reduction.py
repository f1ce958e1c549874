"""migrate-from-mpsgraph of an op a reduction spec serves (prod): on practice trees of both
releases (their real yaml, test lists, ReduceOpsUtils.h, kernels/ReduceOps.h and
reduction_utils.h; mpsgen's own MPSGraph-shaped ReduceOps.mm)."""

from __future__ import annotations

import re

import pytest

from mpsgen.core.errors import Refused
from mpsgen.metal import SCALAR_TYPES
from mpsgen.plan.reduction import _drop_from_complex_set, complex_keys, routed_pairs

SAME = {(t, t) for t in ("float", "half", "bfloat", "long", "int", "short", "char", "uchar", "bool")}
YAML = "aten/src/ATen/native/native_functions.yaml"
MM = "aten/src/ATen/native/mps/operations/ReduceOps.mm"
METAL = "aten/src/ATen/native/mps/kernels/ReduceOps.metal"
HEADER = "aten/src/ATen/native/mps/kernels/ReduceOps.h"
COMMON = "torch/testing/_internal/common_mps.py"


def test_the_pairs_each_release_routes(release, real_sources):
    pairs = routed_pairs(real_sources["aten/src/ATen/native/ReduceOpsUtils.h"].read_text())
    if release == "2.13.0":  # the input is cast to the output type on MPS
        assert pairs == SAME
    else:  # 2.14.1 keeps half/bfloat beside float and integers beside long on MPS
        assert pairs == SAME | {("half", "float"), ("bfloat", "float")} | {(t, "long") for t in ("int", "short", "char", "uchar", "bool", "long")}


def test_a_clause_for_other_devices_routes_nothing_more():
    text = """inline TensorIterator make_reduction_from_out_ty(const Tensor& self, ScalarType out_dtype) {
  const bool lowp = (self.is_cuda() && (self.scalar_type() == kHalf) && out_dtype == kFloat);
  return make_reduction(self, lowp ? self.scalar_type() : out_dtype);
}"""
    assert routed_pairs(text) == SAME
    with pytest.raises(Refused, match="make_reduction_from_out_ty"):
        routed_pairs("inline int other() { return 0; }")
    with pytest.raises(Refused, match="ReduceOpsUtils.h"):
        routed_pairs(None)


def test_an_op_leaves_the_complex_set_and_nothing_else():
    text = 'SUPPORTED_COMPLEX_OPS = {\n    "pinverse",\n    "prod",\n    "prod_extra",\n}\nOTHER = ["prod"]\n'
    assert _drop_from_complex_set(text, ["prod"]) == 'SUPPORTED_COMPLEX_OPS = {\n    "pinverse",\n    "prod_extra",\n}\nOTHER = ["prod"]\n'


def test_the_masked_variant_leaves_the_complex_set_with_the_op():
    """torch.masked.prod reduces through prod: once prod's kernel serves no complex type, its
    complex OpInfo tests (masked.prod, as real common_mps.py of 2.14.1 lists it) fail too."""
    text = 'SUPPORTED_COMPLEX_OPS = {\n    "masked.cumprod",\n    "masked.prod",\n    "prod",\n}\n'
    assert complex_keys(text, "prod") == ["prod", "masked.prod"]
    assert _drop_from_complex_set(text, complex_keys(text, "prod")) == 'SUPPORTED_COMPLEX_OPS = {\n    "masked.cumprod",\n}\n'


def _findings(run, root) -> list[str]:
    res = run("check", "--root", root)
    # a finding without its line number (the yaml loses lines above later findings)
    return sorted(re.sub(r":\d+(:\d+)?:", ":", ln) for ln in res.output.splitlines() if re.search(r" MPS\d{3} (warning|error)", ln))


def test_prod_is_refused_where_it_would_lose_dtypes(run, real_tree):
    before = {rel: (real_tree / rel).read_bytes() for rel in (YAML, MM, COMMON)}
    metal = (real_tree / METAL).read_bytes() if (real_tree / METAL).exists() else None  # (2.14's has the dispatcher's kernels)
    res = run("migrate-from-mpsgraph", "prod", "--root", real_tree)
    assert res.exit_code != 0
    said = " ".join(res.output.split())
    assert "SUPPORTED_COMPLEX_OPS" in said and "int->int" in said and "--allow-dtype-loss" in said
    assert "Traceback" not in res.output
    assert {rel: (real_tree / rel).read_bytes() for rel in before} == before
    assert ((real_tree / METAL).read_bytes() if (real_tree / METAL).exists() else None) == metal


def test_migrate_prod(run, real_tree, release):
    findings = _findings(run, real_tree)
    res = run("migrate-from-mpsgraph", "prod", "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    yaml = (real_tree / YAML).read_text()
    shared = "CPU, CUDA, MPS" if release == "2.13.0" else "CPU, CUDA, XPU, MPS"
    assert f"    {shared}: prod\n" in yaml and f"    {shared}: prod_out\n" in yaml
    assert not re.search(r"\bprod(_out)?_mps\b", yaml)
    mm = (real_tree / MM).read_text()
    assert not re.search(r"\bprod(_out)?_mps\b", mm) and "prod_native.h" not in mm
    assert "all_dims" in mm  # (the var code still uses it)
    assert "trace_mps" in mm and "graph_reduce" in mm  # what other code uses stays
    assert "REGISTER_DISPATCH(prod_stub, &mps::prod_mps_kernel);" in mm
    assert "#include <ATen/native/mps/kernels/ReduceOps.h>" in mm
    assert len(re.findall(r"^static auto& lib = ", mm, re.M)) == 1
    assert "\n\n\n" not in mm
    assert max(len(ln) for ln in mm.splitlines()) <= 120
    metal = (real_tree / METAL).read_text()
    pairs = routed_pairs((real_tree / "aten/src/ATen/native/ReduceOpsUtils.h").read_text())
    spec_pairs = {p for p in [("float", "float"), ("half", "half"), ("bfloat", "bfloat"), ("half", "float"), ("bfloat", "float"),
                              ("long", "long"), ("int", "long"), ("short", "long"), ("char", "long"), ("uchar", "long"),
                              ("bool", "long")] if p in pairs}
    assert "#include <c10/metal/reduction_utils.h>" in metal
    if release == "2.13.0":  # no dispatcher of the file's own: the general kernel and its host
        registered = set(re.findall(r"^REGISTER_PROD_REDUCTION\((\w+), (\w+)\);", metal, re.M))
        assert registered == spec_pairs
        assert "struct ProdReductionParams" in (real_tree / HEADER).read_text()
        assert "reduction_dispatch_mps" not in mm
    else:  # 2.14's ReduceOps.mm dispatches by kernel prefix: prod's kernels are registered for it, and it runs them
        registered = set(re.findall(r'^REGISTER_VALUE_REDUCTION_IMPL\((\w+), (\w+), "prod", ProdReduceOp, IdentityLoad\);', metal, re.M))
        # (its value kernels accumulate in the output type: half and bfloat outputs go through float)
        assert registered == spec_pairs - {("half", "half"), ("bfloat", "bfloat")} and ("int", "long") in registered
        assert "struct ProdReduceOp" in metal and "prod_reduction_general" not in metal
        assert "ProdReductionParams" not in (real_tree / HEADER).read_text()
        host = mm[mm.index("static void prod_mps_kernel") :]
        assert "reduction_dispatch_mps(iter," in host and '.prefix = "prod_",' in host and '.pass2_prefix = "prod_",' in host
        assert "TensorIterator::reduce_op(accumulated, input)" in host and "dispatchThreads" not in host
        assert "TORCH_CHECK(!c10::isComplexType(input.scalar_type())" in host
    assert '"prod",' not in re.search(r"SUPPORTED_COMPLEX_OPS\s*=\s*\{(.*?)\}", (real_tree / COMMON).read_text(), re.S).group(1)
    assert _findings(run, real_tree) == findings  # check finds nothing new
    again = run("migrate-from-mpsgraph", "prod", "--allow-dtype-loss", "--root", real_tree)
    assert again.exit_code != 0 and "nothing to migrate" in again.output


# device checks in the forms ReduceOps.cpp has had (mpsgen's own text, upstream's shapes)
_CHECKED = """static Tensor& reduce_out(const char* name, Tensor& result, const Tensor& self) {{
  TORCH_CHECK({condition},
              name, " runs on a CPU, CUDA, or XPU device only, got: ", self.device().type());
  auto iter = make_reduction(name, result, self);
  the_stub(iter.device_type(), iter, 1.0, false);
  return result;
}}

static Tensor& other_out(Tensor& result, const Tensor& self) {{
  TORCH_CHECK(self.device().is_cpu(), "other: CPU only");
  return result;
}}
"""


@pytest.mark.parametrize(
    "condition, becomes",
    [
        ("self.device().is_cpu() || self.device().is_cuda() || self.device().is_xpu()",
         "self.device().is_cpu() || self.device().is_cuda() || self.device().is_xpu() || self.device().is_mps()"),
        ("self.device().is_cpu() || self.is_cuda() || self.is_xpu()", "self.device().is_cpu() || self.is_cuda() || self.is_xpu() || self.is_mps()"),
        ("self.device().is_cpu() || self.device().is_mps()", None),  # MPS there already: nothing to do
    ],
)
def test_mps_joins_the_device_check_before_the_stub(condition, becomes):
    from mpsgen.plan.reduction import device_check_edit

    text = _CHECKED.format(condition=condition)
    new, notes = device_check_edit(text, "the_stub")
    if becomes is None:
        assert new == text and notes == []
        return
    assert new == text.replace(condition, becomes).replace("CPU, CUDA, or XPU device", "CPU, CUDA, XPU, or MPS device")
    assert notes == ["aten/src/ATen/native/ReduceOps.cpp:2: MPS joins the device check before the_stub"]
    assert 'TORCH_CHECK(self.device().is_cpu(), "other: CPU only")' in new  # a function not reaching the stub keeps its check


def test_a_device_check_of_another_form_is_refused_with_its_line():
    from mpsgen.plan.reduction import device_check_edit

    text = _CHECKED.format(condition="self.device().type() == DeviceType::CPU || self.device().type() == DeviceType::CUDA")
    with pytest.raises(Refused, match=r"ReduceOps.cpp:2 checks the device before the_stub"):
        device_check_edit(text, "the_stub")


def test_migrate_var_std_var_mean_std_mean(run, real_tree, release):
    findings = _findings(run, real_tree)
    res = run("migrate-from-mpsgraph", "std_mean", "--root", real_tree)  # any op of the spec moves them all
    assert res.exit_code == 0, res.output
    yaml = (real_tree / YAML).read_text()
    shared = "CPU, CUDA, MPS" if release == "2.13.0" else "CPU, CUDA, XPU, MPS"
    for kernel in ("var", "std", "var_mean", "std_mean", "var_out", "std_out"):
        assert f"    {shared}: {kernel}\n" in yaml, kernel
    assert not re.search(r"\b(var|std|var_mean|std_mean)_mps\b", yaml)
    mm = (real_tree / MM).read_text()
    assert not re.search(r"\b(var|std|var_mean|std_mean)_mps\b|graph_std_var", mm)
    assert "prod_mps" in mm and "all_dims" in mm  # prod's MPSGraph code (and its helper) stays
    assert "REGISTER_DISPATCH(std_var_stub, &mps::std_var_mps_kernel);" in mm
    # 2.14's dispatcher folds one value of the output type: Welford's (mean, m2, count) keeps its own kernel, and says why
    assert ("// not through reduction_dispatch_mps: its Welford partials" in mm) == (release != "2.13.0")
    cpp = (real_tree / "aten/src/ATen/native/ReduceOps.cpp").read_text()
    assert cpp.count("|| self.device().is_mps()") == 2
    metal = (real_tree / METAL).read_text()
    assert set(re.findall(r"^REGISTER_STD_VAR_REDUCTION\((\w+), (\w+)\);", metal, re.M)) == {("float", "float"), ("half", "half"), ("bfloat", "bfloat")}
    assert _findings(run, real_tree) == findings
    # then prod joins the same files
    assert run("migrate-from-mpsgraph", "prod", "--allow-dtype-loss", "--root", real_tree).exit_code == 0
    mm = (real_tree / MM).read_text()
    assert len(re.findall(r"^static auto& lib = ", mm, re.M)) == 1 and "REGISTER_DISPATCH(prod_stub" in mm
    assert "#include <ATen/native/mps/kernels/ReduceOps.h>" in mm and mm.count("kernels/ReduceOps.h") == 1
    assert "all_dims" not in mm and "graph_reduce" in mm  # the helper nothing uses goes; trace's stays
    assert "\n\n\n" not in mm and max(len(ln) for ln in mm.splitlines()) <= 120
    assert _findings(run, real_tree) == findings


def test_check_reports_a_reduction_stub_left_without_its_kernel(run, real_tree):
    assert run("migrate-from-mpsgraph", "var", "--root", real_tree).exit_code == 0
    mm = real_tree / MM
    mm.write_text(mm.read_text().replace("REGISTER_DISPATCH(std_var_stub, &mps::std_var_mps_kernel);\n", ""))
    res = run("check", "--root", real_tree, "--select", "MPS002", "--strict")  # (a practice tree looks partial)
    assert res.exit_code == 1 and "std_var_stub" in res.output


def test_complex_reaches_var_as_its_parts_and_prod_whole(real_tree):
    from mpsgen.plan.reduction import whole_complex_callers

    cpp = (real_tree / "aten/src/ATen/native/ReduceOps.cpp").read_text()
    assert whole_complex_callers(cpp, "std_var_stub") == []  # std_var_out, std_var_mean_out: at::real / at::imag first
    assert [c.split(" ")[0] for c in whole_complex_callers(cpp, "prod_stub")] == ["impl_func_prod"]


def test_var_is_refused_where_the_shared_path_hands_the_stub_complex_whole(run, real_tree):
    cpp = real_tree / "aten/src/ATen/native/ReduceOps.cpp"
    text = cpp.read_text()
    start = text.index("  if (at::isComplexType(self.scalar_type())) {")
    end = text.index("    return result;\n  }\n", start) + len("    return result;\n  }\n")
    cpp.write_text(text[:start] + text[end:])  # std_var_out without its complex branch
    res = run("migrate-from-mpsgraph", "var", "--root", real_tree)
    said = " ".join(res.output.split())
    assert res.exit_code != 0 and "complex: parts" in said and "std_var_out (aten/src/ATen/native/ReduceOps.cpp:" in said, said
    assert "Traceback" not in res.output


def test_the_hosts_refuse_a_complex_tensor(run, real_tree):
    assert run("migrate-from-mpsgraph", "var", "--root", real_tree).exit_code == 0
    res = run("migrate-from-mpsgraph", "prod", "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    mm = (real_tree / MM).read_text()
    for function in ("std_var_mps_kernel", "prod_mps_kernel"):
        body = mm[mm.index(f"static void {function}(") :]
        body = body[: body.index("\n}\n")]
        guard = body.index("TORCH_CHECK(!c10::isComplexType(input.scalar_type())")
        assert guard < body.index("reduction_dispatch_mps(iter," if "reduction_dispatch_mps(iter," in body else "dispatchThreads"), function


def _accepted_by_host(mm: str, kernel: str) -> set[tuple[str, str]]:
    """The (input, output) pairs the host's `<kernel>_has_kernel` accepts, as Metal type names."""
    metal_of = {k: t for t, k in SCALAR_TYPES.items()}
    body = mm[mm.index(f"static bool {kernel}_has_kernel(") :]
    body = body[: body.index("\n}\n")]
    return {
        (metal_of[ti], metal_of[to])
        for ti, outs in re.findall(r"case (k\w+):\n\s+return ([^;]+);", body)
        for to in re.findall(r"output == (k\w+)", outs)
    }


def test_the_host_refuses_a_pair_no_kernel_is_registered_for(run, real_tree, release):
    """After --allow-dtype-loss prod registers no int->int kernel; the host says so with the
    dtypes (a TORCH_CHECK ahead of everything that asks the library for a kernel), and accepts
    exactly the pairs the .metal registers (on 2.14.1 also half and bfloat outputs, which it
    reduces through the float kernels)."""
    res = run("migrate-from-mpsgraph", "prod", "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    mm = (real_tree / MM).read_text()
    metal = (real_tree / METAL).read_text()
    accepted = _accepted_by_host(mm, "prod")
    if release == "2.13.0":
        registered = set(re.findall(r"^REGISTER_PROD_REDUCTION\((\w+), (\w+)\);", metal, re.M))
        assert accepted == registered
    else:
        registered = set(re.findall(r'^REGISTER_VALUE_REDUCTION_IMPL\((\w+), (\w+), "prod",', metal, re.M))
        assert accepted == registered | {("half", "half"), ("bfloat", "bfloat")}
    assert ("int", "int") not in accepted
    body = mm[mm.index("static void prod_mps_kernel(") :]
    check = body.index("TORCH_CHECK(prod_has_kernel(input.scalar_type(), output.scalar_type()),")
    asks = body.index("reduction_dispatch_mps(iter," if release != "2.13.0" else "getPipelineStateForFunc")
    assert check < asks and '"prod: no Metal kernel on MPS for ",' in body[check:asks]
