"""Every spec mpsgen ships passes `mpsgen try` against torch 2.13's CPU op, and the bare
commands take kind, dtypes and functor from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.core.resources import resource_dir
from mpsgen.spec.op import load_spec
from mpsgen.shim.trial import run_trial
from tests.conftest import only_on, snapshot, with_mps
from tests.releases import INSTALLED

SPECS = sorted(resource_dir("specs").glob("*.yaml"))


def test_the_library_has_specs():
    assert len(SPECS) >= 13


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_shipped_spec_matches_the_cpu_op(path: Path):
    result = run_trial(load_spec(path), samples=32)
    compared = [r for r in result.results if not r.skipped]
    assert compared, "no dtype compared"
    bad = [f"{r.metal_in}->{r.metal_out}: {r.mismatches} mismatches, e.g. {r.examples[:1]}" for r in result.results if not r.ok]
    assert not bad, bad


def test_bare_new_op_takes_everything_from_the_shipped_spec(real_tree: Path, run):
    before = snapshot(real_tree)
    res = run("new-op", "heaviside", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "REGISTER_INTEGER_BINARY_OP(heaviside)" in res.stdout  # the spec's integer group
    assert "static_assert" not in res.stdout  # no scaffold
    assert snapshot(real_tree) == before


# mpsgen's own MPSGraph code for logit and logit_backward, in upstream's shape (the practice
# tree's UnaryOps.mm has none): what a 2.13 checkout holds for the two migrations below
_LOGIT_MPSGRAPH = """
Tensor& logit_out_mps(const Tensor& self, std::optional<double> eps, Tensor& result) {
  mps::unary_op(self, result, "logit_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    return [mpsGraph logarithmWithTensor:inputTensor name:nil];
  });
  return result;
}

Tensor logit_mps(const Tensor& self, std::optional<double> eps) {
  Tensor result = at::empty_like(self);
  logit_out_mps(self, eps, result);
  return result;
}

TORCH_IMPL_FUNC(logit_backward_out_mps)
(const Tensor& grad_output, const Tensor& input, std::optional<double> eps, const Tensor& grad_input) {
  mps::unary_op(input, grad_input, "logit_backward_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* x) {
    return x;
  });
}
"""


@pytest.mark.parametrize(
    "op, expected",
    [
        ("logit", ["yaml:logit", "yaml:logit_out", "yaml:logit_", "REGISTER_UNARY_ALPHA_OP(logit, half, float, half);",
                   'lib.exec_unary_kernel(iter, "logit", alpha, ScalarType::Float);', "REGISTER_DISPATCH(logit_stub, logit_mps_kernel);"]),
        ("logit_backward", ["yaml:logit_backward_out", "REGISTER_BINARY_ALPHA_OP(logit_backward_alpha, half, half, half);",
                            "REGISTER_DISPATCH(logit_backward_stub, &logit_backward_alpha_mps_kernel)"]),
    ],
)
def test_bare_migration_of_an_alpha_op_takes_everything_from_the_shipped_spec(real_tree: Path, real_sources, run, op: str, expected: list[str]):
    from mpsgen.tree import OPERATIONS_DIR

    mm = real_tree / OPERATIONS_DIR / "UnaryOps.mm"
    mm.write_text(mm.read_text().replace("\n} // namespace at::native", _LOGIT_MPSGRAPH + "\n} // namespace at::native"))
    # (no .cpp of the practice tree defines the kernel: the stub, chosen by its name, must be named)
    res = run("migrate-from-mpsgraph", op, "--stub", f"{op}_stub", "--root", real_tree)
    assert res.exit_code == 0, res.output
    text = "\n".join(p.read_text() for p in (real_tree / "aten").rglob("*") if p.suffix in (".yaml", ".metal", ".mm"))
    for line in expected:  # yaml:K: the release's shared line of kernel K, MPS appended
        line = with_mps(real_sources, line[5:]) if line.startswith("yaml:") else line
        assert line in text, line
    assert f"TORCH_IMPL_FUNC({op}_out_mps)" not in text and f"{op}_out_mps(" not in text
    assert "static_assert" not in text  # no scaffold
    assert run("check", "--root", real_tree, "--select", "MPS001,MPS002,MPS003,MPS004").exit_code in (0, 1)


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "specs").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_worked_examples_match_the_cpu_op_too(path: Path):
    """examples/specs teach the kinds; what they teach must be right."""
    result = run_trial(load_spec(path), samples=16)
    assert [r for r in result.results if not r.skipped] and all(r.ok for r in result.results), [
        (r.metal_in, r.examples[:1]) for r in result.results if not r.ok
    ]


def test_bare_acosh_migration_keeps_complex64(real_tree: Path, run, release):
    """acosh is in 2.13's complex-supporting set (common_mps.py): its spec's complex functor
    lets the bare migration through without --allow-dtype-loss, with float2/half2 registered
    through the tree's complex bulk macro."""
    only_on(release, INSTALLED, "upstream migrated acosh in 2.14 (test_upstream_migrations checks mpsgen redoes it)")
    res = run("migrate-from-mpsgraph", "acosh", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "would be lost" not in res.output
    metal = (real_tree / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal").read_text()
    assert "REGISTER_UNARY_OP(acosh, DTYPE##2, DTYPE##2)" in metal and "enable_if_t<is_complex_v<T>, bool> = true" in metal
    assert "CPU, CUDA, MPS: acosh_out" in (real_tree / "aten/src/ATen/native/native_functions.yaml").read_text()


@pytest.mark.parametrize("library", ["specs", "examples/specs"])
def test_the_library_passes_mpsgen_s_own_functor_lints(real_tree: Path, library: str):
    """What mpsgen writes for a shipped spec must not draw a warning from `mpsgen check`:
    every spec's functor and registrations, written into the tree's kernel files, give no
    MPS010-MPS013 finding (NaN-dropping min/max, fast math, missing integer overload,
    registration no overload accepts)."""
    from mpsgen.check import run_check
    from mpsgen.codegen.functor import render_functor
    from mpsgen.spec.registrations import required_calls
    from mpsgen.tree import KERNELS_DIR, PytorchTree

    added: dict[str, list[str]] = {"UnaryKernel.metal": [], "BinaryKernel.metal": []}
    for path in SPECS if library == "specs" else EXAMPLES:
        spec = load_spec(path)
        lines = [render_functor(spec)] + [f"{macro}({spec.kernel}, {', '.join(args)});" for macro, args in required_calls(spec)]
        added["UnaryKernel.metal" if spec.arity == 1 else "BinaryKernel.metal"] += lines
    for name, lines in added.items():
        metal = real_tree / KERNELS_DIR / name
        metal.write_text(metal.read_text() + "\n" + "\n".join(lines) + "\n")
    result = run_check(PytorchTree(real_tree), codes=frozenset({"MPS010", "MPS011", "MPS012", "MPS013"}))
    assert not result.findings, [f"{f.path}:{f.line}: {f.code} {f.message}" for f in result.findings]
    # and the check is not vacuous: a NaN-dropping max written the same way is reported
    metal = real_tree / KERNELS_DIR / "UnaryKernel.metal"
    metal.write_text(metal.read_text() + "struct bad_functor {\n  template <typename T>\n  inline T operator()(const T x) {\n    return ::metal::max(x, T(0));\n  }\n};\nREGISTER_UNARY_OP(bad, float, float);\n")
    result = run_check(PytorchTree(real_tree), codes=frozenset({"MPS010"}))
    assert [f.code for f in result.findings] == ["MPS010"]


@pytest.mark.parametrize("name", ["special_laguerre_polynomial_l", "special_legendre_polynomial_p"])
def test_polynomial_degrees_try_leaves_out_give_what_the_spec_says(name: str):
    """The degrees the two polynomial specs keep out of try (see their headers): NaN and
    degrees >= 2^63 give NaN, every negative one 0, and a huge degree ends (2^23 steps at
    most) in the CPU's NaN where the recurrence overflows, else NaN for "not computed"."""
    import subprocess

    import torch

    from mpsgen.shim.trial import tensor_from_bytes, tensor_bytes, build, compiler

    spec = load_spec(resource_dir("specs") / f"{name}.yaml")
    binary, _ = build(spec, [("float", "float")], compiler())
    nan, inf = float("nan"), float("inf")
    cases = {  # (x, n): expected
        (0.5, nan): nan, (0.5, inf): nan, (0.5, 2.0**63): nan, (0.5, 1e30): nan,
        (0.5, -inf): 0.0, (0.5, -1e30): 0.0, (0.5, -0.5): 1.0, (nan, 0.0): 1.0, (nan, 5.0): nan,
        (0.5, 1e9): nan, (-3.0, 1e9): nan, (200.0, 1e9): nan,
    }
    if name == "special_legendre_polynomial_p":
        cases.update({(-1.0, 1e9): 1.0, (-1.0, 2.0**62): 1.0, (-1.0, 7.9): -1.0, (1.5, 1e9): nan})
    else:
        cases.update({(0.0, 1e9): 1.0, (-0.0, 2.0**62): 1.0, (-1.0, 1e9): nan})
    x, n = (torch.tensor(v, dtype=torch.float32) for v in zip(*cases))
    proc = subprocess.run([str(binary), "0", str(len(x))], input=tensor_bytes(torch, x) + tensor_bytes(torch, n), capture_output=True, timeout=60, check=True)
    got = tensor_from_bytes(torch, proc.stdout, torch.float32)
    torch.testing.assert_close(got, torch.tensor(list(cases.values())), equal_nan=True, rtol=0, atol=0)
