"""The params kinds on the real files of both releases: softplus, softplus_backward, threshold
and threshold_backward migrate off MPSGraph with their shipped specs; the params struct goes
to the header the kernel file shares with its host code (or a new one), the host fills it
from the stub's arguments and names its Metal type as the .metal registers it; check accepts
the result, clang-format leaves it as it is, and what cannot be written is refused."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpsgen.check import run_check
from mpsgen.codegen.params import param_type_of, stub_mismatch
from mpsgen.spec.op import OpSpec, Param, parse_spec_text
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from tests.conftest import snapshot, with_mps

KERNELS = "aten/src/ATen/native/mps/kernels"
OPS = "aten/src/ATen/native/mps/operations"
STYLE = Path(__file__).parents[1] / "clang-format.yaml"


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def test_the_activation_ops_migrate_with_their_shipped_specs(real_tree: Path, real_sources, run):
    for op in ("threshold", "threshold_backward", "softplus", "softplus_backward"):
        res = run("migrate-from-mpsgraph", op, "--root", real_tree)
        assert res.exit_code == 0, (op, res.output)
        assert "warning:" not in res.output and "error:" not in res.output, (op, res.output)
    header = read(real_tree, f"{KERNELS}/Activation.h")
    for struct, fields in (("ThresholdParams", ("threshold", "value")), ("SoftplusParams", ("beta", "threshold")),
                           ("SoftplusBackwardParams", ("beta", "threshold"))):
        assert f"template <typename T>\nstruct {struct} {{\n" + "".join(f"  T {f};\n" for f in fields) + "};" in header
    assert "struct ELUParams" in header  # what the header had stays
    metal = read(real_tree, f"{KERNELS}/ActivationKernel.metal")
    for t in ("float", "half", "bfloat", "long", "int", "short", "uchar", "char", "bool"):
        assert f"typedef ThresholdParams<c10::metal::opmath_t<{t}>> ThresholdParams_{t};" in metal
        assert f"REGISTER_BINARY_ALPHA_OP(threshold, {t}, ThresholdParams_{t}, {t});" in metal
    assert "REGISTER_UNARY_ALPHA_OP(softplus, half, SoftplusParams_half, half);" in metal
    assert "threshold_backward_functor" not in metal  # it runs threshold's kernel
    host = read(real_tree, f"{OPS}/ActivationKernel.mm")
    assert (
        "static void threshold_mps_kernel(TensorIteratorBase& iter, const c10::Scalar& threshold, const c10::Scalar& value) {\n"
        '  AT_DISPATCH_ALL_TYPES_AND3(kBool, kHalf, kBFloat16, iter.common_dtype(), "threshold_mps_kernel", [&]() {\n'
        "    using opmath_t = at::opmath_type<scalar_t>;\n"
        "    const ThresholdParams<opmath_t> params{threshold.to<opmath_t>(), value.to<opmath_t>()};\n"
    ) in host
    assert 'fmt::format("SoftplusParams_{}", mps::scalarToMetalTypeString(iter.common_dtype()))' in host
    assert host.count("REGISTER_DISPATCH(threshold_stub,") == 1
    for include in ("ATen/OpMathType.h", "ATen/native/mps/kernels/Activation.h", "ATen/native/Activation.h"):
        assert f"#include <{include}>" in host
    yaml = read(real_tree, NATIVE_FUNCTIONS)
    for kernel in ("threshold_out", "threshold_backward_out", "softplus_out", "softplus_backward_out"):
        assert with_mps(real_sources, kernel) in yaml
        assert f"MPS: {kernel}_mps" not in yaml
    graph = read(real_tree, f"{OPS}/Activation.mm")
    for impl in ("threshold_out_mps", "threshold_backward_out_mps", "softplus_out_mps", "softplus_backward_out_mps"):
        assert impl not in graph
    for gone in ("softplus_native.h", "softplus_backward_native.h", "threshold_native.h", "threshold_backward_native.h"):
        assert gone not in graph
    assert "tanh_backward_out_mps" in graph  # the rest stays
    # the _refs xfails for what the MPSGraph kernel did (2.13: its srcBuf assertion; 2.14.1:
    # "MPS threshold maps NaN to `value`") go: the Metal kernel keeps NaN as CPU does (try)
    opinfo = read(real_tree, "torch/testing/_internal/common_methods_invocations.py")
    ref = opinfo[opinfo.index('"_refs.nn.functional.threshold"'):][:800]
    assert "device_type='mps'" not in ref[: ref.index("PythonRefInfo(") if "PythonRefInfo(" in ref else None]
    codes = {(f.code, f.path) for f in run_check(PytorchTree(real_tree)).findings}
    mine = {c for c in codes if "Activation" in c[1] or c[0] in ("MPS010", "MPS011", "MPS012", "MPS013", "MPS015")}
    assert not mine, mine


def test_what_is_written_is_a_clang_format_fixed_point(real_tree: Path, run, tmp_path: Path):
    exe = shutil.which("clang-format")
    assert exe, "clang-format must be installed for the tests (pip install -e '.[test]')"
    for op in ("threshold", "softplus", "softplus_backward"):
        assert run("migrate-from-mpsgraph", op, "--root", real_tree).exit_code == 0
    (tmp_path / ".clang-format").write_text(STYLE.read_text())
    for rel, name in ((f"{KERNELS}/ActivationKernel.metal", "x.cpp"), (f"{OPS}/ActivationKernel.mm", "x.mm")):
        text = read(real_tree, rel)
        out = subprocess.run([exe, f"--assume-filename={tmp_path / name}", "--style=file"], input=text,
                             capture_output=True, text=True, check=True, cwd=tmp_path).stdout
        assert out == text, rel


def test_threshold_backward_needs_threshold_s_kernel_first(real_tree: Path, run):
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "threshold_backward", "--root", real_tree)
    assert res.exit_code == 1 and "mpsgen migrate-from-mpsgraph threshold --dry-run" in res.output, res.output
    assert snapshot(real_tree) == before


def test_a_kernel_file_without_a_params_header_gets_one(real_tree: Path, run, tmp_path: Path, release):
    # softplus into UnaryKernel.metal: 2.13 has no kernels/UnaryKernel.h (2.14.1 brought one, for nan_to_num)
    spec = tmp_path / "softplus.yaml"
    text = (Path(__file__).resolve().parents[2] / "specs" / "softplus.yaml").read_text()
    spec.write_text(text.replace("ActivationKernel.metal", "UnaryKernel.metal").replace("ActivationKernel.mm", "UnaryKernel.mm"))
    existed = (real_tree / f"{KERNELS}/UnaryKernel.h").exists()
    res = run("migrate-from-mpsgraph", "softplus", "--spec", spec, "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    if existed:
        assert f"--- a/{KERNELS}/UnaryKernel.h" in res.stdout and "struct NanToNumParams" in read(real_tree, f"{KERNELS}/UnaryKernel.h")
    else:
        assert f"new file mode 100644\n--- /dev/null\n+++ b/{KERNELS}/UnaryKernel.h\n@@ -0,0 +1,7 @@\n+#pragma once\n" in res.stdout
    assert f"+#include <ATen/native/mps/kernels/UnaryKernel.h>" in res.stdout
    assert run("migrate-from-mpsgraph", "softplus", "--spec", spec, "--root", real_tree).exit_code == 0
    assert "struct SoftplusParams" in read(real_tree, f"{KERNELS}/UnaryKernel.h")
    assert "#include <ATen/native/mps/kernels/UnaryKernel.h>" in read(real_tree, f"{OPS}/UnaryKernel.mm")


def test_params_that_do_not_match_the_stub_are_refused(real_tree: Path, run, tmp_path: Path):
    spec = tmp_path / "softplus.yaml"
    text = (Path(__file__).resolve().parents[2] / "specs" / "softplus.yaml").read_text()
    spec.write_text(text.replace("  threshold: scalar\n", "  threshold: scalar\n  extra: bool\n"))
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "softplus", "--spec", spec, "--root", real_tree)
    assert res.exit_code == 1 and "takes const c10::Scalar&, const c10::Scalar& after the iterator" in res.output, res.output
    assert snapshot(real_tree) == before


def test_params_read_from_the_schema_when_the_spec_gives_none(real_tree: Path, run, tmp_path: Path):
    res = run(
        "migrate-from-mpsgraph", "softplus", "--kind", "unary_params", "--dry-run",
        "--expr", "x * beta > threshold ? x : c10::metal::log1p(::metal::exp(x * beta)) / beta", "--root", real_tree,
    )
    assert res.exit_code == 0, res.output
    assert "struct SoftplusParams {\n+  T beta;\n+  T threshold;\n+};" in res.stdout


@pytest.mark.parametrize(
    "cpp, kind",
    [("const c10::Scalar&", "scalar"), ("const Scalar& value", "scalar"), ("std::optional<double>", "optional_float"),
     ("double", "float"), ("const double scale", "float"), ("bool", "bool"), ("GeluType", None), ("int64_t", None)],
)
def test_stub_parameter_types(cpp: str, kind: str | None):
    assert param_type_of(cpp) == kind


def test_a_stub_without_an_iterator_or_with_other_arguments_is_named():
    spec = OpSpec("softplus", "unary_params", params=(Param("beta", "scalar"), Param("threshold", "scalar")), stub="softplus_stub")
    assert stub_mismatch(spec, ["TensorIteratorBase&", "const c10::Scalar&", "const c10::Scalar&"], "h:1") is None
    why = stub_mismatch(spec, ["TensorIteratorBase&", "GeluType"], "h:1")
    assert "takes GeluType after the iterator" in why and "unsupported argument type(s): GeluType" in why
    assert "TensorIteratorBase" in stub_mismatch(spec, ["const TensorBase&", "double"], "h:1")


@pytest.mark.parametrize(
    "text, words",
    [
        ("name: x\nkind: unary\nparams: {a: scalar}\n", "'params' is for the unary_params and binary_params kinds"),
        ("name: x\nkind: unary_params\nparams: {x: scalar, b: scalar}\n", "param 'x': the functor's operands are x"),
        ("name: x\nkind: unary_params\nparams: {a: scalar, a: scalar}\n", "named twice"),
        ("name: x\nkind: unary_params\nparams: {a: int, b: scalar}\n", "unknown type 'int'"),
        ("name: x\nkind: unary_params\nparams: {a: scalar, b: scalar}\ntry_params: [{a: null, b: 1}]\n", "cannot be left out"),
        ("name: x\nkind: unary_params\nparams: {a: scalar, b: scalar}\ntry_params: [{c: 1}]\n", "'c' is not a param"),
        ("name: x\nkind: unary_params\ndtypes: [complex]\n", "do not apply to a unary_params op"),
        ("name: x\nkind: binary_params\noperands: [self]\n", "a binary_params functor takes 2"),
        ("name: x\nkind: binary_params\nparams: {a: scalar, b: scalar}\nfixed: {c: 0}\n", "fixed.c is not a param"),
    ],
)
def test_spec_params_problems_are_located(text: str, words: str):
    spec, problems = parse_spec_text(text, "s.yaml")
    assert spec is None and any(words in why for node_location, why in problems), problems
    assert all(str(loc).startswith("s.yaml:") for loc, _why in problems)


def test_the_driver_and_the_kernel_file_agree_on_the_params_type():
    """The typedef names the .metal registers are the names the host asks for."""
    from mpsgen.codegen.functor import render_functor
    from mpsgen.spec.registrations import required_calls
    from mpsgen.spec.op import load_spec

    spec = load_spec(Path(__file__).resolve().parents[2] / "specs" / "threshold.yaml")
    functor = render_functor(spec)
    for _macro, (t_in, params_type, _t_out) in required_calls(spec):
        assert re.search(rf"typedef ThresholdParams<c10::metal::opmath_t<{t_in}>> {params_type};", functor)


def test_nan_to_num_migrates_as_upstream_did_in_2_14(real_tree: Path, real_sources, run, release):
    from tests.conftest import only_on
    from tests.releases import INSTALLED

    if release != INSTALLED:  # 2.14.1 has it on the shared line already: nothing to migrate
        res = run("migrate-from-mpsgraph", "nan_to_num", "--dry-run", "--root", real_tree)
        assert res.exit_code == 1 and "nan_to_num is already on Metal" in res.output, res.output
        return
    only_on(release, INSTALLED, "")
    res = run("migrate-from-mpsgraph", "nan_to_num", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "warning:" not in res.output and "kept:" not in res.output, res.output
    assert "serves integer and bool inputs before it calls nan_to_num_stub" in res.output
    header = read(real_tree, f"{KERNELS}/UnaryKernel.h")
    assert header.startswith("#pragma once\n\ntemplate <typename T>\nstruct NanToNumParams {\n  T nan;\n  T posinf;\n  T neginf;\n"
                             "  bool has_nan;\n  bool has_posinf;\n  bool has_neginf;\n};\n")
    host = read(real_tree, f"{OPS}/UnaryKernel.mm")
    assert "static void nan_to_num_mps_kernel(TensorIteratorBase& iter,\n" in host
    assert "REGISTER_DISPATCH(nan_to_num_stub, nan_to_num_mps_kernel);" in host
    assert "    CPU, CUDA, MTIA, MPS: nan_to_num_out\n" in read(real_tree, NATIVE_FUNCTIONS)
    assert "nan_to_num" not in read(real_tree, f"{OPS}/TensorCompare.mm")
    # the two out= xfails upstream removed with its own migration (2.14.1's OpInfo has neither)
    opinfo = read(real_tree, "torch/testing/_internal/common_methods_invocations.py")
    entry = opinfo[opinfo.index("UnaryUfuncInfo('nan_to_num'"):][:3000]
    assert "'test_out', device_type='mps'" not in entry and "'test_out_warning', device_type='mps'" not in entry


def test_gelu_keeps_its_row_and_calls_its_stub_which_picks_the_kernel(real_tree: Path, run, tmp_path: Path):
    yaml_before = read(real_tree, NATIVE_FUNCTIONS)
    for op in ("gelu", "gelu_backward"):
        res = run("migrate-from-mpsgraph", op, "--root", real_tree)
        assert res.exit_code == 0, (op, res.output)
        assert "warning:" not in res.output and "error:" not in res.output, res.output
    assert read(real_tree, NATIVE_FUNCTIONS) == yaml_before  # CPU and CUDA differ: MPS keeps its row
    graph = read(real_tree, f"{OPS}/Activation.mm")
    assert (
        "TORCH_IMPL_FUNC(gelu_out_mps)(const Tensor& self, std::string_view approximate, const Tensor& output) {\n"
        "  GeluKernel(kMPS, *this, get_gelutype_enum(approximate));\n}\n"
    ) in graph
    assert "  GeluBackwardKernel(kMPS, *this, get_gelutype_enum(approximate));\n" in graph
    assert "normal_cdf" not in graph  # the helper only the old bodies used
    host = read(real_tree, f"{OPS}/ActivationKernel.mm")
    assert 'lib.exec_unary_kernel(iter, approximate == GeluType::None ? "gelu" : "gelu_tanh");' in host
    assert "static void gelu_backward_mps_kernel(TensorIteratorBase& iter, GeluType approximate) {" in host
    assert "REGISTER_DISPATCH(GeluKernel, gelu_mps_kernel);" in host
    metal = read(real_tree, f"{KERNELS}/ActivationKernel.metal")
    for kernel in ("gelu", "gelu_tanh", "gelu_backward", "gelu_tanh_backward"):
        assert f"struct {kernel}_functor {{" in metal
    assert "REGISTER_BINARY_OP(gelu_tanh_backward, half, half);" in metal
    codes = {(f.code, f.path) for f in run_check(PytorchTree(real_tree)).findings if "Activation" in f.path}
    assert not codes, codes
    # a re-run has nothing left to do
    res = run("migrate-from-mpsgraph", "gelu", "--root", real_tree)
    assert res.exit_code == 0 and "nothing to do" in res.output, res.output
    exe = shutil.which("clang-format")
    (tmp_path / ".clang-format").write_text(STYLE.read_text())
    for rel, name in ((f"{KERNELS}/ActivationKernel.metal", "x.cpp"), (f"{OPS}/ActivationKernel.mm", "x.mm"), (f"{OPS}/Activation.mm", "x.mm")):
        text = read(real_tree, rel)
        out = subprocess.run([exe, f"--assume-filename={tmp_path / name}", "--style=file"], input=text,
                             capture_output=True, text=True, check=True, cwd=tmp_path).stdout
        assert out == text, rel


def test_a_selector_whose_type_is_not_the_stub_s_is_refused(real_tree: Path, run, tmp_path: Path):
    spec = tmp_path / "gelu.yaml"
    spec.write_text((Path(__file__).resolve().parents[2] / "specs" / "gelu.yaml").read_text().replace("type: GeluType", "type: int64_t"))
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "gelu", "--spec", spec, "--root", real_tree)
    assert res.exit_code == 1 and "GeluKernel" in res.output and "would not compile" in res.output, res.output
    assert snapshot(real_tree) == before


@pytest.mark.parametrize(
    "text, words",
    [
        ("name: g\nkind: unary\nselector: {argument: a, parse: p, type: T, cases: [{value: x, enumerator: E::X, kernel: k}]}\n"
         "functors: {k: 'template <typename T> inline T operator()(const T x) { return x; }'}\n", "two or more"),
        ("name: g\nkind: unary\nselector: {argument: a, parse: p, type: T, cases: [{value: x, enumerator: E::X, kernel: k},"
         " {value: y, enumerator: E::Y, kernel: m}]}\nfunctors: {k: 'template <typename T> inline T operator()(const T x) { return x; }'}\n",
         "exactly the cases' kernels"),
        ("name: g\nkind: ternary\nselector: {argument: a, parse: p, type: T, cases: [{value: x, enumerator: E::X, kernel: k},"
         " {value: y, enumerator: E::Y, kernel: m}]}\n", "for unary and binary ops"),
    ],
)
def test_selector_problems_are_located(text: str, words: str):
    spec, problems = parse_spec_text(text, "s.yaml")
    assert spec is None and any(words in why for node_location, why in problems), problems


def test_a_kind_whose_kernel_reads_other_inputs_than_the_meta_function_builds_is_refused(real_tree: Path, run):
    """threshold's schema has one tensor, but its meta function builds a (self, self)
    iterator: a unary kernel given by hand for it is refused; the shipped spec's binary one
    is what it takes."""
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "threshold", "--kind", "unary_params", "--expr", "x", "--root", real_tree)
    assert res.exit_code == 1, res.output
    assert "meta function of threshold.out" in res.output and "builds an iterator of 2 input(s)" in res.output
    assert snapshot(real_tree) == before
    assert run("migrate-from-mpsgraph", "threshold", "--dry-run", "--root", real_tree).exit_code == 0


def test_meta_function_inputs_are_read_from_the_tree(real_tree: Path):
    from mpsgen.tree.resolver import StubResolver

    resolver = StubResolver.of(PytorchTree(real_tree))
    assert resolver.meta_inputs("threshold")[0] == 2
    assert resolver.meta_inputs("softplus")[0] == 1  # build_unary_op
    assert resolver.meta_inputs("no_such_op") is None
