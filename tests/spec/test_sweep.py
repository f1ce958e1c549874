"""Every spec mpsgen ships goes through the command `explain` names for it (new-op,
migrate-from-mpsgraph or new-kernel) as a dry run, on practice trees of both releases' real
files: as explain prints it, bare, with the kind flag that says the spec's kind, and with that
flag and the dtype flags of the spec's groups (as the README passes `--binary --integer` beside
a shipped spec). A flag that agrees with the spec changes nothing: each run shows the bare
run's change.

The practice sources hold most of what the commands read; what they lack for a spec's op (its
MPSGraph code, its CPU kernel's definition, or, where upstream already moved the op onto Metal,
its MPSGraph row) is added by :func:`prepare`, mpsgen's own text in the shapes upstream's files
have (a stub called directly, made by a macro, or passed to a helper). The same preparation
runs over real upstream .cpp files outside the repository (not committed): see
:func:`prepare`'s ``real_cpp``."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mpsgen.cli.app import app
from mpsgen.report.explain import explain_op
from mpsgen.core.resources import resource_dir
from mpsgen.spec.op import load_spec
from mpsgen.tree import NATIVE_DIR, NATIVE_FUNCTIONS, OPERATIONS_DIR, PytorchTree
from tests.releases import INSTALLED, NEWER

OP_SPECS = sorted(p.stem for p in resource_dir("specs").glob("*.yaml"))
KERNEL_SPECS = sorted(p.stem for p in (resource_dir("specs") / "kernels").glob("*.yaml"))
DTYPE_FLAGS = {"int2float": "--int2float", "integer": "--integer", "integer_no_bool": "--integer-no-bool", "complex": "--complex", "opmath": "--opmath"}

# ops whose rows the release already runs on Metal through their shared kernel line, which the
# practice sources (2.13's shape) do not hold: their MPSGraph row is put back, as the release
# before had it (`    CPU, CUDA, XPU: mish_out` + `    MPS: mish_out_mps`)
PUT_BACK = ("atan2", "conj_physical", "logical_not", "mish", "nan_to_num")

# MPSGraph code for the rows' MPS kernels, where the practice .mm files have none
_UNARY_OUT = """
Tensor& {k}(const Tensor& self, Tensor& output) {{
  mps::unary_op(self, output, "{k}", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {{
    return [mpsGraph {sel}WithTensor:inputTensor name:nil];
  }});
  return output;
}}
"""
_BINARY_OUT = """
Tensor& {k}(const Tensor& self, const Tensor& other, Tensor& output) {{
  mps::binaryOpTensor(self, other, output, "{k}", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x, MPSGraphTensor* y) {{
    return [mpsGraph {sel}WithPrimaryTensor:x secondaryTensor:y name:nil];
  }});
  return output;
}}
"""
MPSGRAPH = {
    "conj_physical_out_mps": ("UnaryOps.mm", _UNARY_OUT.format(k="conj_physical_out_mps", sel="conjugate")),
    "logical_not_out_mps": ("UnaryOps.mm", _UNARY_OUT.format(k="logical_not_out_mps", sel="not")),
    "logical_and_out_mps": ("BinaryOps.mm", _BINARY_OUT.format(k="logical_and_out_mps", sel="logicalAND")),
    "logical_or_out_mps": ("BinaryOps.mm", _BINARY_OUT.format(k="logical_or_out_mps", sel="logicalOR")),
    "logical_xor_out_mps": ("BinaryOps.mm", _BINARY_OUT.format(k="logical_xor_out_mps", sel="logicalXOR")),
    "atan2_out_mps": ("BinaryOps.mm", """
TORCH_IMPL_FUNC(atan2_out_mps)(const Tensor& self, const Tensor& other, const Tensor& output) {
  mps::binaryOpTensor(self, other, output, "atan2_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x, MPSGraphTensor* y) {
    return [mpsGraph atan2WithPrimaryTensor:x secondaryTensor:y name:nil];
  });
}
"""),
    "nan_to_num_out_mps": ("UnaryOps.mm", """
Tensor& nan_to_num_out_mps(const Tensor& self,
                           std::optional<double> nan,
                           std::optional<double> pos_inf,
                           std::optional<double> neg_inf,
                           Tensor& result) {
  mps::unary_op(self, result, "nan_to_num_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x) {
    return [mpsGraph identityWithTensor:x name:nil];
  });
  return result;
}
"""),
    "logit_out_mps": ("UnaryOps.mm", """
Tensor& logit_out_mps(const Tensor& self, std::optional<double> eps, Tensor& result) {
  mps::unary_op(self, result, "logit_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x) {
    return [mpsGraph logarithmWithTensor:x name:nil];
  });
  return result;
}

Tensor logit_mps(const Tensor& self, std::optional<double> eps) {
  Tensor result = at::empty_like(self);
  logit_out_mps(self, eps, result);
  return result;
}
"""),
    "logit_backward_out_mps": ("UnaryOps.mm", """
TORCH_IMPL_FUNC(logit_backward_out_mps)
(const Tensor& grad_output, const Tensor& input, std::optional<double> eps, const Tensor& grad_input) {
  mps::unary_op(input, grad_input, "logit_backward_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x) {
    return x;
  });
}
"""),
    "mish_out_mps": ("Activation.mm", """
TORCH_IMPL_FUNC(mish_out_mps)(const Tensor& self, const Tensor& result) {
  mps::unary_op(self, result, "mish_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x) {
    MPSGraphTensor* softplus = [mpsGraph softPlusWithTensor:x name:nil];
    return [mpsGraph multiplicationWithPrimaryTensor:x secondaryTensor:[mpsGraph tanhWithTensor:softplus name:nil] name:nil];
  });
}
"""),
    "relu_mps": ("Activation.mm", """
Tensor relu_mps(const Tensor& self) {
  Tensor output = at::empty_like(self);
  mps::unary_op(self, output, "relu_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x) {
    return [mpsGraph reLUWithTensor:x name:nil];
  });
  return output;
}

Tensor& relu_mps_(Tensor& self) {
  mps::unary_op(self, self, "relu_out_mps_", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x) {
    return [mpsGraph reLUWithTensor:x name:nil];
  });
  return self;
}
"""),
}

# CPU kernels of the rows, where no .cpp of the tree defines them, in the shapes upstream's
# files have: the macro-made structured kernel, a direct call, and the stub passed to a helper
_UNARY_MACRO = """
#define UNARY_STRUCTURED_KERNEL(out_name, stub_name)                    \\
  TORCH_IMPL_FUNC(out_name)(const Tensor& self, const Tensor& result) { \\
    stub_name(device_type(), *this);                                    \\
  }
"""
CPP = {
    # (file, kernel): text; each file's texts are appended in this order
    ("UnaryOps.cpp", ""): _UNARY_MACRO + """
template <typename Stub>
static inline Tensor& unary_kernel_out(Tensor& result, const Tensor& self, Stub& stub) {
  auto iter = TensorIterator::unary_op(result, self);
  stub(iter.device_type(), iter);
  return result;
}

template <typename Stub, typename... Args>
static inline Tensor unary_float_kernel(const Tensor& self, Stub& stub, Args... args) {
  Tensor result;
  auto iter = TensorIterator::unary_float_op(result, self);
  stub(iter.device_type(), iter, args...);
  return iter.output();
}
""",
    ("UnaryOps.cpp", "atanh_out"): "UNARY_STRUCTURED_KERNEL(atanh_out, atanh_stub)\n",
    ("UnaryOps.cpp", "sign_out"): "UNARY_STRUCTURED_KERNEL(sign_out, sign_stub)\n",
    ("UnaryOps.cpp", "special_airy_ai_out"): "UNARY_STRUCTURED_KERNEL(special_airy_ai_out, special_airy_ai_stub)\n",
    ("UnaryOps.cpp", "special_log_ndtr_out"): "UNARY_STRUCTURED_KERNEL(special_log_ndtr_out, special_log_ndtr_stub)\n",
    ("UnaryOps.cpp", "sgn_out"): """
TORCH_IMPL_FUNC(sgn_out)(const Tensor& self, const Tensor& result) {
  if (self.is_complex()) {
    sgn_stub(device_type(), *this);
  } else {
    sign_stub(device_type(), *this);
  }
}
""",
    ("UnaryOps.cpp", "conj_physical_out"): """
Tensor& conj_physical_out(const Tensor& self, Tensor& result) {
  return unary_kernel_out(result, self, conj_physical_stub);
}
""",
    ("UnaryOps.cpp", "logit"): """
Tensor logit(const Tensor& self, std::optional<double> eps) {
  return unary_float_kernel(self, logit_stub, Scalar(eps ? eps.value() : -1.0));
}
""",
    ("UnaryOps.cpp", "logit_"): """
Tensor& logit_(Tensor& self, std::optional<double> eps) {
  return at::logit_out(self, self, eps);
}
""",
    ("UnaryOps.cpp", "logical_not_out"): """
Tensor& logical_not_out(const Tensor& self, Tensor& result) {
  TensorIterator iter = TensorIteratorConfig().check_all_same_dtype(false).add_output(result).add_const_input(self).build();
  logical_not_stub(iter.device_type(), iter);
  return result;
}
""",
    ("BinaryOps.cpp", ""): """
template <typename Stub>
static Tensor& predicate_out(Tensor& result, const Tensor& self, const Tensor& other, Stub& stub) {
  auto iter = TensorIterator::comparison_op(result, self, other);
  stub(iter.device_type(), iter);
  return result;
}
""",
    ("BinaryOps.cpp", "logical_and_out"): "Tensor& logical_and_out(const Tensor& self, const Tensor& other, Tensor& result) { return predicate_out(result, self, other, logical_and_stub); }\n",
    ("BinaryOps.cpp", "logical_or_out"): "Tensor& logical_or_out(const Tensor& self, const Tensor& other, Tensor& result) { return predicate_out(result, self, other, logical_or_stub); }\n",
    ("BinaryOps.cpp", "logical_xor_out"): "Tensor& logical_xor_out(const Tensor& self, const Tensor& other, Tensor& result) { return predicate_out(result, self, other, logical_xor_stub); }\n",
    ("BinaryOps.cpp", "sigmoid_backward_out"): """
TORCH_IMPL_FUNC(sigmoid_backward_out)(const Tensor& grad_output, const Tensor& output, const Tensor& result) {
  sigmoid_backward_stub(device_type(), *this);
}
""",
    ("BinaryOps.cpp", "tanh_backward_out"): """
TORCH_IMPL_FUNC(tanh_backward_out)(const Tensor& grad_output, const Tensor& output, const Tensor& result) {
  tanh_backward_stub(device_type(), *this);
}
""",
    ("BinaryOps.cpp", "logit_backward_out"): """
TORCH_IMPL_FUNC(logit_backward_out)(const Tensor& grad_output, const Tensor& input, std::optional<double> eps, const Tensor& result) {
  logit_backward_stub(device_type(), *this, Scalar(eps ? eps.value() : -1.0));
}
""",
    ("Activation.cpp", "mish_out"): """
TORCH_IMPL_FUNC(mish_out)(const Tensor& self, const Tensor& result) {
  mish_stub(device_type(), *this);
}
""",
}


# refusals that are right on these trees, with what they must say
REFUSED = {
    "pow": "serves torch.bool",  # the shipped spec leaves bool out (the CPU op has no bool kernel)
    "sub": "runs another op's stub",  # 2.13's sub_out calls add_stub with -alpha (specs/sub.yaml says so)
    # relu and relu_ are clamp_min(self, 0) on CPU and CUDA: no stub for a Metal kernel to serve
    "relu": "cannot tell which dispatch stub relu runs",
}
REFUSED_IN = {
    # upstream's own NanToNumParams (kernels/UnaryKernel.h), which the spec's struct differs from
    (NEWER, "nan_to_num"): "already defines struct NanToNumParams",
}


def _defined(root: Path, folder: str, suffix: str, name: str) -> bool:
    return any(re.search(rf"\b{re.escape(name)}\b", p.read_text(encoding="utf-8", errors="replace")) for p in (root / folder).glob(f"*{suffix}"))


def prepare(root: Path, *, real_cpp: dict[str, bytes] | None = None) -> None:
    """Give the practice tree at ``root`` what the specs' commands read that its sources lack:
    the MPSGraph rows (put back), MPSGraph code and CPU kernels; ``real_cpp`` (file name ->
    bytes) first puts upstream's .cpp files in place of the practice ones."""
    for name, data in (real_cpp or {}).items():
        (root / NATIVE_DIR / name).write_bytes(data)
    yaml_path = root / NATIVE_FUNCTIONS
    text = yaml_path.read_text(encoding="utf-8")
    for op in PUT_BACK:

        def back(m: re.Match) -> str:
            keys = ", ".join(k for k in m.group(1).split(", ") if k != "MPS")
            return f"    {keys}: {m.group(2)}\n    MPS: {m.group(2)}_mps\n"

        text = re.sub(rf"^    ([A-Za-z, ]*\bMPS\b[A-Za-z, ]*): ({op}_out)\n", back, text, flags=re.M)
    yaml_path.write_text(text, encoding="utf-8")
    for kernel, (mm, code) in MPSGRAPH.items():
        if not _defined(root, OPERATIONS_DIR, ".mm", kernel):
            path = root / OPERATIONS_DIR / mm
            src = path.read_text(encoding="utf-8")
            assert src.count("\n} // namespace at::native") == 1, path
            path.write_text(src.replace("\n} // namespace at::native", code + "\n} // namespace at::native"), encoding="utf-8")
    added: dict[str, list[str]] = {}
    for (cpp, kernel), code in CPP.items():
        if not kernel or not _defined(root, NATIVE_DIR, ".cpp", kernel):
            added.setdefault(cpp, []).append(code)
    for cpp, codes in added.items():
        if codes == [CPP.get((cpp, ""))]:
            continue  # (only the helpers: nothing uses them)
        path = root / NATIVE_DIR / cpp
        path.write_text(path.read_text(encoding="utf-8") + "\nnamespace at::native {\n" + "".join(codes) + "\n} // namespace at::native\n", encoding="utf-8")


@pytest.fixture(scope="module")
def sweep_tree(release_template: Path, tmp_path_factory) -> Path:
    root = Path(shutil.copytree(release_template, tmp_path_factory.mktemp("sweep") / "pytorch", symlinks=True))
    prepare(root)
    return root


def kind_flags(kind: str) -> list[str]:
    return [f"--{kind}"] if kind in ("unary", "binary") else ["--kind", kind]


def op_commands(tree: PytorchTree, op: str) -> tuple[str, list[list[str]]]:
    """(what explain says next, the commands to run: explain's, the bare one, with the kind
    flag, with the kind and dtype flags)."""
    spec = load_spec(resource_dir("specs") / f"{op}.yaml")
    report = explain_op(tree, op)
    if report.command is not None:
        verb = report.command.split()[1]
    else:  # (a refusal: the command its status calls for)
        verb = "migrate-from-mpsgraph" if any(r.status == "mps-kernel" for r in report.rows) else "new-op"
    bare = [verb, op, "--dry-run"]
    runs = [shlex.split(report.command)[1:]] if report.command is not None and report.command.split()[2:3] == [op] else []
    runs += [bare, bare + kind_flags(spec.kind)]
    dtype_flags = [DTYPE_FLAGS[g] for g in spec.dtypes if g in DTYPE_FLAGS]
    if dtype_flags:
        runs.append(bare + kind_flags(spec.kind) + dtype_flags)
    return report.next_step, runs


def run_dry(args: list[str], root: Path):
    return CliRunner().invoke(app, [*args, "--root", str(root)], catch_exceptions=False)


def errors_of(res) -> list[str]:
    return [line for line in res.stderr.splitlines() if line.startswith(("error:", "refused:"))]


# ops whose change needs another op's first: threshold_backward runs threshold's kernel
# (`kernel: threshold`); sgn_out calls sign_stub for real inputs, which must have its Metal
# kernel before MPS joins sgn's shared line
FIRST = {"sgn": "sign"}


def first_of(op: str) -> str | None:
    return FIRST.get(op) or load_spec(resource_dir("specs") / f"{op}.yaml").kernel_of or None


def sweep_op(root: Path, op: str, release: str) -> list[str]:
    """The problems of ``op``'s runs on the tree at ``root`` (empty: each went through, or was
    refused as expected, and every run showed the same change); the migration ``op`` needs
    first is written to that tree."""
    if (first := first_of(op)) is not None:
        res = CliRunner().invoke(app, ["migrate-from-mpsgraph", first, "--root", str(root)], catch_exceptions=False)
        assert res.exit_code == 0, res.output[-600:]
    step, runs = op_commands(PytorchTree(root), op)
    refused = REFUSED_IN.get((release, op)) or REFUSED.get(op)
    problems = []
    diffs = set()
    for args in runs:
        res = run_dry(args, root)
        shown = f"`mpsgen {' '.join(args)}` -> exit {res.exit_code}: {' | '.join(errors_of(res))[:400]}"
        if refused is not None:
            if res.exit_code != 1 or refused not in res.stderr:
                problems.append(f"expected a refusal saying {refused!r}: {shown}")
            continue
        if res.exit_code != 0 or errors_of(res) or "Traceback" in res.output:
            problems.append(shown)
            continue
        diffs.add(res.stdout)
    if refused is None and not problems and len(diffs) != 1:
        problems.append(f"the runs show {len(diffs)} different changes: {[' '.join(a) for a in runs]}")
    if refused is None and not step.startswith(("mpsgen ", "nothing to add")):
        problems.append(f"explain names no command: {step[:300]}")
    return problems


@pytest.mark.parametrize("op", OP_SPECS)
def test_every_op_spec_goes_through_its_bare_and_flagged_commands(sweep_tree: Path, release: str, op: str, tmp_path: Path):
    root = sweep_tree
    if first_of(op) is not None:  # (another op's migration is written first)
        root = Path(shutil.copytree(sweep_tree, tmp_path / "pytorch", symlinks=True))
    problems = sweep_op(root, op, release)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("op", KERNEL_SPECS)
def test_every_kernel_spec_goes_through_new_kernel(sweep_tree: Path, op: str):
    report = explain_op(PytorchTree(sweep_tree), op)
    assert report.command == f"mpsgen new-kernel {op}", report.next_step
    res = run_dry(["new-kernel", op, "--dry-run"], sweep_tree)
    assert res.exit_code == 0 and not errors_of(res), res.output[-800:]
    spec_dtypes = ",".join(load_spec_dtypes(op))
    again = run_dry(["new-kernel", op, "--dtypes", spec_dtypes, "--dry-run"], sweep_tree)  # the spec's own dtypes: the same change
    assert again.exit_code == 0 and again.stdout == res.stdout, again.output[-800:]


def load_spec_dtypes(op: str) -> tuple[str, ...]:
    from mpsgen.spec.kernel import load_kernel_spec

    return load_kernel_spec(resource_dir("specs") / "kernels" / f"{op}.yaml").dtypes


def test_the_sweep_covers_both_releases_and_every_spec():
    from tests.conftest import RELEASES

    assert set(RELEASES) == {INSTALLED, NEWER} or len(RELEASES) == 1  # (MPSGEN_TEST_RELEASES picks one)
    assert len(OP_SPECS) >= 30 and len(KERNEL_SPECS) >= 3
    assert set(REFUSED) <= set(OP_SPECS)


def test_a_kernel_that_also_calls_a_stub_mps_lacks_is_blocked(sweep_tree: Path):
    """sgn_out runs sgn_stub for complex inputs and sign_stub for the rest (upstream's
    UnaryOps.cpp): while sign is on MPSGraph, giving MPS sgn's shared line would send real
    inputs to a stub with no MPS kernel. The blocker names the stub and the way out."""
    res = run_dry(["migrate-from-mpsgraph", "sgn", "--dry-run"], sweep_tree)
    assert res.exit_code == 1, res.output[-800:]
    assert "error: sgn_out (aten/src/ATen/native/UnaryOps.cpp:" in res.stderr
    assert "also calls sign_stub, which no .mm of this tree registers for MPS" in res.stderr
    assert "mpsgen migrate-from-mpsgraph sgn" not in explain_op(PytorchTree(sweep_tree), "sgn").next_step
