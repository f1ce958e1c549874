"""`mpsgen migrate-from-mpsgraph`: the planner, the listing and the command's contract."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git_init, only_on, shared_dispatch, snapshot, with_mps
from tests.releases import INSTALLED
from mpsgen.core.errors import Refused
from mpsgen.plan.migrate import guess_kind, list_candidates, plan_migrate
from mpsgen.spec.op import OpSpec, load_spec
from mpsgen.tree import PytorchTree
from tests.conftest import REAL

YAML = "aten/src/ATen/native/native_functions.yaml"
OPS = "aten/src/ATen/native/mps/operations"
UNARY_METAL = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
BINARY_METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
COMMON_MPS = "torch/testing/_internal/common_mps.py"


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    import difflib

    minus, plus = [], []
    for line in difflib.unified_diff(before.split("\n"), after.split("\n"), lineterm="", n=0):
        if line.startswith("-") and not line.startswith("---"):
            minus.append(line[1:])
        elif line.startswith("+") and not line.startswith("+++"):
            plus.append(line[1:])
    return minus, plus


MIGRATED_UPSTREAM = (
    "upstream migrated acosh, asinh and sigmoid_backward to Metal in 2.14: the same steps on 2.14.1's files are "
    "test_upstream_migrations.test_migrations_reproduce_the_2_14_1_yaml_byte_for_byte and the 2.14.1 practice tree"
)


# -- the real case: acosh ------------------------------------------------------------------


def test_acosh_end_to_end(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "acosh", "--unary", "--int2float", "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    after = snapshot(real_tree)

    # yaml: exactly the two dispatch lines of acosh.out become one
    minus, plus = changed_lines(before[YAML].decode(), after[YAML].decode())
    assert minus == ["    CPU, CUDA: acosh_out", "    MPS: acosh_out_mps"]
    assert plus == ["    CPU, CUDA, MPS: acosh_out"]

    # Metal: functor (from the shipped spec) and a line in the tree's bulk macro
    metal = read(real_tree, UNARY_METAL)
    assert "struct acosh_functor {" in metal and "precise::acosh" in metal
    assert "REGISTER_UNARY_OP(sigmoid, DTYPE1, DTYPE0);      \\\n  REGISTER_UNARY_OP(acosh, DTYPE1, DTYPE0)\n" in metal
    assert "REGISTER_UNARY_OP(acosh, float" not in metal  # no stray explicit lines

    # host: the tree's helper macro
    host = read(real_tree, f"{OPS}/UnaryKernel.mm")
    assert "REGISTER_UNARY_TI_DISPATCH(abs);\nREGISTER_UNARY_TI_DISPATCH(acosh);\n" in host

    # MPSGraph: the instance line and the include go, the macro stays for asinh/atanh
    ops = read(real_tree, f"{OPS}/UnaryOps.mm")
    assert "acosh" not in ops
    assert "#define CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(func_out, func_stub)" in ops
    assert "\nCREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(asinh_out_mps, asinh)\n" in ops
    assert "\n\n\n" not in ops
    old_ops = before[f"{OPS}/UnaryOps.mm"].decode()
    minus, plus = changed_lines(old_ops, ops)
    assert minus == ["#include <ATen/ops/acosh_native.h>", "CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(acosh_out_mps, acosh)"]
    assert plus == []

    # nothing else moved
    touched = {k for k in after if after[k] != before[k]}
    assert touched == {YAML, UNARY_METAL, f"{OPS}/UnaryKernel.mm", f"{OPS}/UnaryOps.mm"}


def test_acosh_rerun_is_a_no_op_and_strict_says_so(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    assert run("migrate-from-mpsgraph", "acosh", "--unary", "--int2float", "--allow-dtype-loss", "--root", real_tree).exit_code == 0
    before = snapshot(real_tree)
    again = run("migrate-from-mpsgraph", "acosh", "--unary", "--int2float", "--allow-dtype-loss", "--root", real_tree)
    assert again.exit_code == 0 and "nothing to do" in again.output
    strict = run("migrate-from-mpsgraph", "acosh", "--unary", "--int2float", "--strict", "--allow-dtype-loss", "--root", real_tree)
    assert strict.exit_code == 1
    assert snapshot(real_tree) == before


def test_shipped_spec_is_used_without_kind_flags(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    res = run("migrate-from-mpsgraph", "acosh", "--dry-run", "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "REGISTER_UNARY_OP(acosh, DTYPE1, DTYPE0)" in res.output
    assert "+    CPU, CUDA, MPS: acosh_out" in res.output


def test_patch_applies_and_reverses(real_tree: Path, run, tmp_path: Path, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    git_init(real_tree)
    base = snapshot(real_tree)
    patch = tmp_path / "acosh.patch"
    res = run("migrate-from-mpsgraph", "acosh", "--unary", "--int2float", "--patch", patch, "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert snapshot(real_tree) == base
    subprocess.run(["git", "-C", str(real_tree), "apply", str(patch)], check=True)
    direct = tmp_path / "direct"
    from mpsgen.report.practice import build_practice_tree

    build_practice_tree(direct, sources=REAL)
    assert run("migrate-from-mpsgraph", "acosh", "--unary", "--int2float", "--allow-dtype-loss", "--root", direct).exit_code == 0
    applied = snapshot(real_tree)
    assert {k: v for k, v in applied.items()} == snapshot(direct)
    subprocess.run(["git", "-C", str(real_tree), "apply", "-R", str(patch)], check=True)
    assert snapshot(real_tree) == base


# -- binary (TORCH_IMPL_FUNC block) and binary_alpha --------------------------------------


def test_sigmoid_backward_block_form(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    res = run(
        "migrate-from-mpsgraph", "sigmoid_backward", "--binary", "--expr", "a * (T(1) - b) * b", "--stub", "sigmoid_backward_stub",
        "--root", real_tree,
    )
    assert res.exit_code == 0, res.output
    act = read(real_tree, f"{OPS}/Activation.mm")
    assert "sigmoid_backward" not in act
    assert "static void run_two_input_graph(" in act  # tanh_backward and threshold still use it
    assert "TORCH_IMPL_FUNC(tanh_backward_out_mps)" in act and "\n\n\n" not in act
    assert "    CPU, CUDA, MPS: sigmoid_backward_out\n" in read(real_tree, YAML)
    metal = read(real_tree, BINARY_METAL)
    assert "struct sigmoid_backward_functor {" in metal
    assert "REGISTER_FLOAT_BINARY_OP(sigmoid_backward);" in metal
    host = read(real_tree, f"{OPS}/BinaryKernel.mm")
    assert 'lib.exec_binary_kernel(iter, "sigmoid_backward");' in host
    assert "REGISTER_DISPATCH(sigmoid_backward_stub, &sigmoid_backward_mps_kernel)" in host


def test_sub_runs_add_stub_so_it_is_refused_unless_the_stub_is_named(real_tree: Path, run):
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "sub", "--root", real_tree)  # specs/sub.yaml
    assert res.exit_code == 1
    assert "sub_out (aten/src/ATen/native/BinaryOps.cpp:" in res.output and "calls add_stub" in res.output
    assert "another op's stub" in res.output and "--stub" in res.output
    assert snapshot(real_tree) == before


def test_sub_binary_alpha(real_tree: Path, real_sources, run):
    res = run("migrate-from-mpsgraph", "sub", "--stub", "sub_stub", "--allow-dtype-loss", "--root", real_tree)  # specs/sub.yaml
    assert res.exit_code == 0, res.output
    assert "row sub.out runs add_stub, not the stub given (sub_stub)" in res.output
    metal = read(real_tree, BINARY_METAL)
    assert "struct sub_alpha_functor {" in metal
    assert "inline T operator()(const T a, const T b, const T alpha) {" in metal
    assert "struct sub_functor {" in metal  # the alpha-free functor is left alone
    for t in ("float", "half", "bfloat", "long", "int", "short", "uchar", "char"):
        assert f"REGISTER_BINARY_ALPHA_OP(sub_alpha, {t}, {t}, {t});" in metal
    assert "REGISTER_BINARY_ALPHA_OP(sub_alpha, bool" not in metal
    host = read(real_tree, f"{OPS}/BinaryKernel.mm")
    assert "static void sub_alpha_mps_kernel(TensorIteratorBase& iter, const Scalar& alpha) {" in host
    assert 'lib.exec_binary_kernel(iter, "sub_alpha", alpha);' in host
    assert "REGISTER_DISPATCH(sub_stub, &sub_alpha_mps_kernel)" in host
    ops = read(real_tree, f"{OPS}/BinaryOps.mm")
    assert "sub_out_mps" not in ops and "add_sub_lerp_template" not in ops and "sub_native.h" not in ops
    assert "static void binaryOpTensor(" in ops  # pow's macro still uses it (mps::binaryOp##other_type)
    assert "\n\n\n" not in ops
    text = read(real_tree, YAML)
    assert with_mps(real_sources, "sub_out") in text


def test_pow_two_rows_two_forms_and_the_macro_with_its_last_instance(real_tree: Path, real_sources, run):
    args = ("migrate-from-mpsgraph", "pow", "--binary", "--int2float", "--expr", "::metal::pow(a, b)", "--root", real_tree)
    refused = run(*args)  # pow.Scalar_out takes a Scalar self: not a two-tensor kernel's row
    assert refused.exit_code == 1 and "pow.Scalar_out" in refused.output and "1 tensor and 1 scalar" in refused.output
    res = run(*args, "--partial")
    assert res.exit_code == 0, res.output
    assert "pow_Tensor_Tensor_out (aten/src/ATen/native/Pow.cpp:" in res.output and "calls pow_tensor_tensor_stub" in res.output
    text = read(real_tree, YAML)
    assert with_mps(real_sources, "pow_Tensor_Tensor_out") in text and "    MPS: pow_Scalar_out_mps\n" in text
    assert "pow_tensor_tensor_out_mps" not in text
    ops = read(real_tree, f"{OPS}/BinaryOps.mm")
    assert "pow_tensor_tensor_out_mps" not in ops and "TORCH_IMPL_FUNC(pow_Scalar_out_mps)" in ops
    host = read(real_tree, f"{OPS}/BinaryKernel.mm")
    assert "REGISTER_DISPATCH(pow_tensor_tensor_stub, &pow_mps_kernel)" in host


# -- the other kinds, for both commands --------------------------------------------------

POINTWISE_MM = """\
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/addcmul_native.h>
#include <ATen/ops/logit_native.h>
#endif

namespace at::native {

// self + value * tensor1 * tensor2 through one cached graph
TORCH_IMPL_FUNC(addcmul_out_mps)
(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value, const Tensor& output) {
  mps::three_input_graph(self, tensor1, tensor2, value, output, "addcmul");
}

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


@pytest.fixture
def pointwise_tree(real_tree: Path) -> Path:
    (real_tree / OPS / "PointwiseOps.mm").write_text(POINTWISE_MM, encoding="utf-8")
    return real_tree


def test_a_ternary_op_with_a_scalar_is_refused(pointwise_tree: Path, run):
    # addcmul_stub takes (iterator, Scalar value): a ternary kernel's host function takes the
    # iterator alone, so its REGISTER_DISPATCH would not compile (nor would the value reach it)
    before = snapshot(pointwise_tree)
    res = run(
        "migrate-from-mpsgraph", "addcmul", "--kind", "ternary", "--opmath", "--expr", "a + b * c", "--allow-dtype-loss",
        "--stub", "addcmul_stub", "--root", pointwise_tree,
    )
    assert res.exit_code == 1, res.output
    assert "addcmul_stub" in res.output and "REGISTER_DISPATCH would not compile" in res.output
    assert "no ternary alpha macro" in res.output
    assert snapshot(pointwise_tree) == before


def test_unary_alpha_migration_plain_functions_two_rows(pointwise_tree: Path, run):
    res = run(
        "migrate-from-mpsgraph", "logit", "--kind", "unary_alpha", "--int2float", "--expr", "::metal::log(x / (1 - x))",
        "--stub", "logit_stub", "--root", pointwise_tree,
    )
    assert res.exit_code == 0, res.output
    metal = read(pointwise_tree, UNARY_METAL)
    assert "inline T operator()(const T x, const U alpha) {" in metal
    assert "REGISTER_UNARY_ALPHA_OP(logit, float, float, float);" in metal
    assert "REGISTER_UNARY_ALPHA_OP(logit, long, float, float);" in metal
    host = read(pointwise_tree, f"{OPS}/UnaryKernel.mm")
    assert "static void logit_mps_kernel(TensorIteratorBase& iter, const Scalar& alpha) {" in host
    # the alpha is registered as float for half/bfloat/integer inputs: the host names it
    assert 'lib.exec_unary_kernel(iter, "logit", alpha, ScalarType::Float);' in host
    assert "REGISTER_DISPATCH(logit_stub, logit_mps_kernel);" in host
    text = read(pointwise_tree, YAML)
    assert "logit_mps" not in text and "logit_out_mps" not in text
    mm = read(pointwise_tree, f"{OPS}/PointwiseOps.mm")
    assert "logit" not in mm and "addcmul_out_mps" in mm


NEW_ROWS = """
- func: mpsgen_scale.out(Tensor self, Scalar alpha, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA: mpsgen_scale_out
  tags: pointwise

- func: mpsgen_axpy.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA: mpsgen_axpy_out
  tags: pointwise

- func: mpsgen_fma.out(Tensor self, Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA: mpsgen_fma_out
  tags: pointwise
"""


@pytest.mark.parametrize(
    "op,kind,expr,metal,line,host",
    [
        ("mpsgen_scale", "unary_alpha", "x * alpha", UNARY_METAL, "REGISTER_UNARY_ALPHA_OP(mpsgen_scale, half, float, half);",
         'lib.exec_unary_kernel(iter, "mpsgen_scale", alpha, ScalarType::Float);'),
        ("mpsgen_axpy", "binary_alpha", "alpha * a + b", BINARY_METAL, "REGISTER_BINARY_ALPHA_OP(mpsgen_axpy_alpha, half, half, half);",
         'lib.exec_binary_kernel(iter, "mpsgen_axpy_alpha", alpha);'),
        ("mpsgen_fma", "ternary", "a * b + c", BINARY_METAL, "REGISTER_TERNARY_OP(mpsgen_fma, bfloat, bfloat);",
         'lib.exec_ternary_kernel(iter, "mpsgen_fma");'),
    ],
)
def test_new_op_kinds(own_tree: Path, run, op, kind, expr, metal, line, host):
    with open(own_tree / YAML, "a", encoding="utf-8") as fh:
        fh.write(NEW_ROWS)
    refused = run("new-op", op, "--kind", kind, "--expr", expr, "--dry-run", "--root", own_tree)
    assert refused.exit_code == 1  # a made-up op: no stub is declared, so none can be registered
    assert f"cannot tell which dispatch stub {op} runs" in refused.output and f"tried {op}_stub" in refused.output
    with open(own_tree / "aten/src/ATen/native/BinaryOps.h", "a", encoding="utf-8") as fh:
        fh.write(f"DECLARE_DISPATCH(made_up_fn, {op}_stub)\n")
    guessed = run("new-op", op, "--kind", kind, "--expr", expr, "--dry-run", "--root", own_tree)
    assert guessed.exit_code == 1  # no .cpp defines {op}_out: the stub is only a guess by its name
    assert f"error: dispatch stub {op}_stub is chosen by its name alone (exact name)" in guessed.output
    res = run("new-op", op, "--kind", kind, "--expr", expr, "--stub", f"{op}_stub", "--dry-run", "--root", own_tree)
    assert res.exit_code == 0, res.output
    assert f"+    CPU, CUDA, MPS: {op}_out" in res.output
    assert line in res.output
    assert host in res.output


# -- refusals and bad input: exit code, message, nothing written -------------------------


@pytest.mark.parametrize(
    "args,code,words",
    [
        (["nosuch_op", "--unary"], 1, ["nosuch_op", "not in", "native_functions.yaml"]),
        (["xlogy", "--binary"], 1, ["already on Metal", "native_functions.yaml:"]),
        (["heaviside", "--binary"], 1, ["no MPS kernel to migrate", "new-op"]),
        (["logit_backward"], 1, ["cannot find the MPSGraph implementation of logit_backward_out_mps", "UnaryOps.mm", "Activation.mm"]),  # (MPS row in both releases, no code in the practice sources)
        (["frac", "--unary", "--row", "frac"], 1, ["row frac has no MPS kernel of its own"]),
        (["acosh", "--unary", "--row", "acosh.nope"], 1, ["not a row of acosh"]),
        (["equal"], 1, ["equal", "CPU and CUDA use different kernels"]),  # the kind from the schema: binary
        (["acossh"], 1, ["not in", "Did you mean acosh"]),
        (["clamp"], 1, ["takes 1 tensor and 2 scalars, which fits no kind"]),
        (["add"], 1, ["add_out_mps", "no row of it has a `CPU, CUDA:` kernel line"]),
        (["acosh", "--binary", "--expr", "a + b"], 1, ["--binary says acosh is `binary`, but its schema says `unary`"]),
        (["acosh", "--binary"], 2, ["--binary contradicts specs/acosh.yaml", "its kind is unary (--unary)"]),  # (the shipped spec's kind)
        (["acosh", "--unary", "--integer"], 2, ["--integer contradicts specs/acosh.yaml", "dtypes float, int2float, complex"]),
        ([], 2, ["give the op to migrate", "--list"]),
        (["acosh", "--unary", "--list"], 2, ["--list takes only", "OP", "--unary"]),
        (["acosh", "--unary", "--format", "json"], 2, ["--format applies to --list only"]),
        (["acosh", "--unary", "--dry-run", "--patch", "x.patch"], 2, ["mutually exclusive"]),
        (["acosh;", "--unary"], 2, ["not a C identifier"]),
        (["acosh", "--unary", "--binary"], 2, ["mutually exclusive"]),
        (["acosh", "--unary", "--int2float", "--integer"], 2, ["pick one"]),
        (["acosh", "--kind", "quaternary"], 2, ["kind"]),
        (["acosh", "--list", "--format", "xml"], 2, ["xml"]),
    ],
)
def test_errors(real_tree: Path, run, args, code, words):
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", *args, "--root", real_tree)
    assert res.exit_code == code, res.output
    for w in words:
        assert w in res.output, (w, res.output)
    assert "Traceback" not in res.output
    assert snapshot(real_tree) == before


def test_an_op_already_on_metal_names_the_mpsgraph_kernel_left_behind(real_tree: Path, run):
    # (a leftover PyTorch's build would reject: the practice sources hold none, so it is put here)
    mm = real_tree / OPS / "BinaryOps.mm"
    text = mm.read_text(encoding="utf-8")
    leftover = "TORCH_IMPL_FUNC(xlogy_out_mps)(const Tensor& self, const Tensor& other, const Tensor& output) {}\n\n"
    mm.write_text(text.replace("} // namespace at::native", leftover + "} // namespace at::native"), encoding="utf-8")
    line = mm.read_text(encoding="utf-8").split("\n").index(leftover.split("\n")[0]) + 1
    res = run("migrate-from-mpsgraph", "xlogy", "--binary", "--root", real_tree)
    assert res.exit_code == 1 and "already on Metal" in res.output
    assert f"BinaryOps.mm:{line}" in res.output and "delete it by hand" in " ".join(res.output.split())


def test_bad_root(tmp_path: Path, run):
    res = run("migrate-from-mpsgraph", "acosh", "--unary", "--root", tmp_path / "nope")
    assert res.exit_code == 2 and "no such directory" in res.output


def test_partial_migrates_what_it_can_and_names_the_rest(real_tree: Path, real_sources, run):
    yaml_path = real_tree / YAML
    text = yaml_path.read_text(encoding="utf-8")
    line = shared_dispatch(text, "pow_Scalar_out")  # `CPU, CUDA` (2.13), `CPU, CUDA, XPU` (2.14.1): split off CPU
    text = text.replace(line, "    CPU: pow_Scalar_out\n" + line.replace("CPU, ", "", 1), 1)  # fixed by Deliver 7? see test
    yaml_path.write_text(text, encoding="utf-8")
    before = snapshot(real_tree)
    args = ("migrate-from-mpsgraph", "pow", "--binary", "--integer", "--expr", "::metal::pow(a, b)", "--root", real_tree)
    refused = run(*args)
    assert refused.exit_code == 1 and "pow.Scalar_out" in refused.output and "--partial" in refused.output
    assert snapshot(real_tree) == before
    res = run(*args, "--partial")
    assert res.exit_code == 0, res.output
    assert "left pow.Scalar_out on pow_Scalar_out_mps" in res.output
    new = read(real_tree, YAML)
    assert with_mps(real_sources, "pow_Tensor_Tensor_out") in new and "    MPS: pow_Scalar_out_mps\n" in new
    ops = read(real_tree, f"{OPS}/BinaryOps.mm")
    assert "pow_tensor_tensor_out_mps" not in ops and "TORCH_IMPL_FUNC(pow_Scalar_out_mps)" in ops
    assert "pow_native.h" in ops  # pow_Scalar_out_mps still needs it
    after = snapshot(real_tree)
    again = run(*args, "--partial")
    assert again.exit_code == 0 and "nothing to do" in again.output and "left pow.Scalar_out" in again.output
    assert run(*args, "--partial", "--strict").exit_code == 1
    assert snapshot(real_tree) == after


def test_a_removed_function_still_called_elsewhere_is_refused(real_tree: Path, run):
    yaml_path = real_tree / YAML
    text = yaml_path.read_text(encoding="utf-8")
    line = shared_dispatch(text, "heaviside_out")
    yaml_path.write_text(text.replace(line, line + "    MPS: heaviside_out_mps\n", 1))
    path = real_tree / OPS / "BinaryOps.mm"
    text = path.read_text(encoding="utf-8").replace(
        "} // namespace at::native\n",
        "Tensor& heaviside_out_mps(const Tensor& self, const Tensor& values, Tensor& out) {\n  return out;\n}\n\n"
        "Tensor& heaviside_twice_mps(const Tensor& s, const Tensor& v, Tensor& r) {\n  return heaviside_out_mps(s, v, r);\n}\n\n"
        "} // namespace at::native\n",
    )
    path.write_text(text, encoding="utf-8")
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "heaviside", "--binary", "--expr", "a > b ? a : b", "--root", real_tree)
    assert res.exit_code == 1
    assert "BinaryOps.mm:" in res.output and "still calls heaviside_out_mps" in res.output
    assert snapshot(real_tree) == before


def test_conflict_recheck_writes_nothing(real_tree: Path, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    tree = PytorchTree(real_tree)
    changeset = plan_migrate(tree, load_spec(Path(__file__).resolve().parents[2] / "specs/acosh.yaml"), allow_dtype_loss=True)
    ops = real_tree / OPS / "UnaryOps.mm"
    ops.write_text(ops.read_text(encoding="utf-8") + "// edited meanwhile\n", encoding="utf-8")
    before = snapshot(real_tree)
    with pytest.raises(Refused, match="changed since mpsgen read it"):
        changeset.apply()
    assert snapshot(real_tree) == before


def test_read_only_target_writes_nothing(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    ops = real_tree / OPS / "UnaryOps.mm"
    ops.chmod(0o444)  # the mode bit is checked, so this holds for root too
    before = snapshot(real_tree)
    res = run("migrate-from-mpsgraph", "acosh", "--unary", "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 2 and "UnaryOps.mm is read-only" in res.output
    assert snapshot(real_tree) == before


def test_xfail_entries_leave_with_the_migration(own_tree: Path, run):
    before = read(own_tree, COMMON_MPS)
    assert '"frac": [torch.float16],' in before
    res = run("migrate-from-mpsgraph", "frac", "--unary", "--expr", "x - ::metal::trunc(x)", "--root", own_tree)
    assert res.exit_code == 0, res.output
    after = read(own_tree, COMMON_MPS)
    minus, plus = changed_lines(before, after)
    assert minus == ['            "frac": [torch.float16],'] and plus == []
    assert "frac" not in read(own_tree, f"{OPS}/UnaryOps.mm")


def test_static_helper_used_only_by_the_removed_kernel_goes(real_tree: Path, run):
    res = run(
        "migrate-from-mpsgraph", "sign", "--unary", "--integer", "--expr", "T(x > T(0)) - T(x < T(0))", "--stub", "sign_stub",
        "--root", real_tree,
    )
    assert res.exit_code == 0, res.output
    ops = read(real_tree, f"{OPS}/UnaryOps.mm")
    assert "sign_tensor" not in ops and "sign_out_mps" not in ops and "sign_native.h" not in ops
    assert "sgn_out_mps" in ops and "static bool is_empty_tensor(" in ops
    assert "\n\n\n" not in ops


# -- --list ------------------------------------------------------------------------------


def test_list_json_on_torch_2_13(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    res = run("migrate-from-mpsgraph", "--list", "--format", "json", "--root", real_tree)
    assert res.exit_code == 0, res.output
    data = {c["op"]: c for c in json.loads(res.stdout)}
    for op in ("acosh", "asinh", "atanh", "frac", "sgn", "sign", "signbit", "pow", "sigmoid_backward",
               "tanh_backward", "logit_backward", "threshold", "sub", "addcmul"):
        assert data[op]["elementwise"], op
    for op in ("mm", "sort", "cumsum"):
        assert not data[op]["elementwise"] and data[op]["kind"] == "other", op
    for op in ("argmax", "prod", "var", "std_mean", "mse_loss"):  # (they reduce: never an elementwise kind)
        assert not data[op]["elementwise"] and data[op]["kind"] == "reduction", op
    assert data["acosh"]["kind"] == "unary" and data["acosh"]["spec"] == "specs/acosh.yaml"
    assert data["acosh"]["rows"][0]["impl"] == {"file": f"{OPS}/UnaryOps.mm", "line": 60, "form": "macro_instance"}
    assert data["acosh"]["migratable"] and "pointwise" in data["acosh"]["tags"]
    assert data["sub"]["kind"] == "binary_alpha" and data["sub"]["rows"][0]["impl"]["line"] == 80
    assert data["sigmoid_backward"]["kind"] == "binary"
    assert data["sigmoid_backward"]["rows"][0]["impl"]["file"].endswith("Activation.mm")
    assert data["addcmul"]["kind"] == "ternary" and data["addcmul"]["rows"][0]["impl"] is None
    assert data["threshold"]["kind"] == "binary_params" and data["threshold"]["spec"] == "specs/threshold.yaml"
    assert data["softplus"]["kind"] == "unary_params"
    assert data["logit_backward"]["kind"] == "binary_alpha"
    assert {r["row"] for r in data["pow"]["rows"]} == {"pow.Tensor_Tensor_out", "pow.Scalar_out"}
    assert data["signbit"]["rows"][0]["problem"] is None  # split CPU/CUDA lines: MPS names their kernel
    assert "different kernels" in data["mm"]["rows"][0]["problem"]
    assert not data["relu"]["structured"]
    assert "xlogy" not in data and "exp" not in data  # already on the shared kernel


def test_list_table(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    res = run("migrate-from-mpsgraph", "--list", "--root", real_tree)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) <= 100, [line for line in lines if len(line) > 100]  # fits 100 columns
    assert lines[0].split() == ["OP", "KIND", "ROWS", "MPSGRAPH", "SPEC", "STATE"]
    acosh = next(line for line in lines if line.startswith("acosh "))
    assert "UnaryOps.mm:60" in acosh and " yes " in acosh and acosh.rstrip().endswith("ready")
    mm = next(line for line in lines if line.startswith("mm "))
    assert mm.endswith("not elementwise")
    # what an op needs is on the lines below it, whole
    atanh = lines.index(next(line for line in lines if line.startswith("atanh ")))
    assert lines[atanh].endswith("needs work") and lines[atanh + 1].startswith("    ")
    # every candidate's name is there, whole (a long one on a line of its own)
    names = {line.split()[0] for line in lines if line and not line.startswith(" ")}
    assert {c["op"] for c in json.loads(run("migrate-from-mpsgraph", "--list", "--format", "json", "--root", real_tree).stdout)} <= names
    summary = " ".join(res.stdout.rstrip().split("\n\n")[-1].split())  # (wrapped at 100 columns)
    assert "candidate(s)" in summary and summary.endswith("ready to migrate.")


def test_list_after_migration_drops_the_op(real_tree: Path):
    tree = PytorchTree(real_tree)
    spec = OpSpec(name="acosh", kind="unary", dtypes=("int2float",))
    plan_migrate(tree, spec, allow_dtype_loss=True).apply()
    assert "acosh" not in {c.op for c in list_candidates(PytorchTree(real_tree))}


@pytest.mark.parametrize(
    "func,kind",
    [
        ("acosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", "unary"),
        ("relu_(Tensor(a!) self) -> Tensor(a!)", "unary"),
        ("sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", "binary_alpha"),
        ("logit(Tensor self, float? eps=None) -> Tensor", "unary_alpha"),
        ("addcmul.out(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Tensor(a!) out) -> Tensor(a!)", "ternary"),
        ("threshold.out(Tensor self, Scalar threshold, Scalar value, *, Tensor(a!) out) -> Tensor(a!)", "unary_params"),
        ("softplus_backward.grad_input(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold, *, Tensor(a!) grad_input) -> Tensor(a!)", "binary_params"),
        ("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor", "unary_params"),
        ("clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)", "other"),
        ("gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)", "other"),
        ("pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)", "other"),
        ("cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", "other"),
        ("flip(Tensor self, int[] dims) -> Tensor", "other"),
    ],
)
def test_guess_kind(func, kind):
    assert guess_kind(func) == kind


def test_split_cpu_cuda_lines_migrate_by_pointing_mps_at_their_kernel(real_tree: Path, run, release):
    """signbit.out has `CPU: signbit_out` and `CUDA: signbit_out` on separate lines: the
    minimal edit names that kernel on the MPS line, nothing else in the entry moves."""
    only_on(release, INSTALLED, "2.14.1 dispatches signbit.out with one shared `CPU, CUDA, XPU` line: no split lines to keep")
    before = read(real_tree, YAML)
    assert "    CPU: signbit_out\n    CUDA: signbit_out\n    MPS: signbit_out_mps\n" in before
    res = run("migrate-from-mpsgraph", "signbit", "--unary", "--expr", "x < 0", "--allow-dtype-loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    after = read(real_tree, YAML)
    assert after == before.replace("    MPS: signbit_out_mps\n", "    MPS: signbit_out\n", 1)
    assert "signbit_out_mps" not in read(real_tree, f"{OPS}/UnaryOps.mm")
    again = run("migrate-from-mpsgraph", "signbit", "--unary", "--expr", "x < 0", "--allow-dtype-loss", "--root", real_tree)
    assert again.exit_code == 0 and "nothing to do" in again.output


# -- no silent regressions (issue: read what the tree really does) --------------------------


def test_asinh_would_lose_complex_so_it_is_refused(real_tree: Path, run, release):
    only_on(release, INSTALLED, MIGRATED_UPSTREAM)
    before = snapshot(real_tree)
    args = ("migrate-from-mpsgraph", "asinh", "--unary", "--int2float", "--expr", "::metal::precise::asinh(x)")
    res = run(*args, "--root", real_tree)
    assert res.exit_code == 1
    assert "complex" in res.output and "torch.complex64" in res.output and "--allow-dtype-loss" in res.output
    assert snapshot(real_tree) == before
    ok = run(*args, "--allow-dtype-loss", "--root", real_tree)
    assert ok.exit_code == 0, ok.output
    assert "would be lost (--allow-dtype-loss)" in ok.output
    # the MPS toleranceOverride that test_output_match needs stays, and the user is told
    cmi = read(real_tree, "torch/testing/_internal/common_methods_invocations.py")
    entry = cmi[cmi.index("UnaryUfuncInfo('asinh',") : cmi.index("UnaryUfuncInfo('atan',")]
    assert "toleranceOverride" in entry and 'device_type="mps"' in entry
    assert "kept: torch/testing/_internal/common_methods_invocations.py:" in ok.output and "tunes numerics" in ok.output


def test_removed_input_checks_are_listed(real_tree: Path, run):
    res = run("migrate-from-mpsgraph", "frac", "--unary", "--expr", "x - ::metal::trunc(x)", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "UnaryOps.mm:" in res.output and "TORCH_CHECK(isFloatingType(self.scalar_type())" in res.output
    assert "carry it over" in res.output


def test_integer_dtypes_mpsgraph_serves_are_not_dropped_silently(real_tree: Path, run):
    before = snapshot(real_tree)
    # a dtype flag (--opmath) makes the flags say the dtypes: float only, not what the OpInfo tests
    res = run("migrate-from-mpsgraph", "pow", "--binary", "--opmath", "--expr", "::metal::pow(a, b)", "--partial", "--root", real_tree)
    assert res.exit_code == 1
    assert "serves torch.bool, torch.int16, torch.int32, torch.int64, torch.int8, torch.uint8 today" in res.output
    assert "--allow-dtype-loss" in res.output
    assert snapshot(real_tree) == before
    # frac's MPSGraph code checks for floating inputs: a float-only kernel loses nothing
    ok = run("migrate-from-mpsgraph", "frac", "--unary", "--expr", "x - ::metal::trunc(x)", "--dry-run", "--root", real_tree)
    assert ok.exit_code == 0, ok.output
