"""Fault injection: each fault in the consistent check tree is reported with its code and line,
and nothing else is."""

from __future__ import annotations

from pathlib import Path

from mpsgen.check import RULES, run_check
from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS, PytorchTree

from .conftest import BINARY_METAL, BINARY_MM, BINARY_OPS_MM, UNARY_METAL, UNARY_MM, UNARY_OPS_MM, edit, kernel_column, line_of, shared_line, without_mps

YAML = NATIVE_FUNCTIONS


def found(root: Path, paths=None, cwd=None) -> list[tuple[str, str, int, int]]:
    return [(f.code, f.path, f.line, f.col) for f in run_check(PytorchTree(root), paths, cwd).findings]


def test_clean_tree_reports_nothing(check_tree):
    assert found(check_tree) == []


def test_rule_codes_are_stable():
    assert list(RULES) == [f"MPS{i:03d}" for i in range(1, 20)]
    assert all(r.explanation and r.summary and r.name for r in RULES.values())


def test_deleted_register_dispatch_is_mps002_at_the_yaml_row(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    line = shared_line(check_tree, "hypot_out")
    row = line_of(check_tree, YAML, line.rstrip("\n"))
    assert found(check_tree) == [("MPS002", YAML, row, kernel_column(line))]


def test_deleted_helper_macro_dispatch_is_mps002(check_tree):
    edit(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(exp);\n", "")
    line = shared_line(check_tree, "exp_out")
    row = line_of(check_tree, YAML, line.rstrip("\n"))
    assert found(check_tree) == [("MPS002", YAML, row, kernel_column(line))]


# kernels defined as upstream's .cpp files write them (our own code in their shapes): the stub
# is tied to the row through them, so a deleted registration is still MPS002
KERNELS_CPP = "aten/src/ATen/native/KernelShapes.cpp"
KERNEL_SHAPES = """\
namespace at::native {

template <typename Stub>
static Tensor& fill_through(Tensor& out, const Tensor& in, Stub& stub, bool widen) {
  auto it = widen ? TensorIterator::unary_float_op(out, in) : TensorIterator::unary_op(out, in);
  stub(it.device_type(), it);
  return out;
}

// abs.out: the stub is handed to a helper, never called here
Tensor& abs_out(const Tensor& self, Tensor& result) {
  return fill_through(result, self, abs_stub, /*widen=*/false);
}

// another row's kernel of the same name, first in the file
Tensor& bitwise_and_out(const Tensor& self, const Scalar& other, Tensor& result) {
  return at::bitwise_and_out(result, self, wrap_scalar(other));
}

#define TWO_INPUT_KERNEL(name, stub)                                                 \\
  TORCH_IMPL_FUNC(name)(const Tensor& self, const Tensor& other, const Tensor& out) { \\
    stub(device_type(), *this);                                                      \\
  }

// bitwise_and.Tensor_out (structured): a macro instance beside the overload above
TWO_INPUT_KERNEL(bitwise_and_out, bitwise_and_stub)

} // namespace at::native
"""


def test_deleted_registration_of_a_stub_handed_to_a_helper_is_mps002(check_tree):
    (check_tree / KERNELS_CPP).write_text(KERNEL_SHAPES)
    assert found(check_tree) == []
    edit(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(abs);\n", "")
    line = shared_line(check_tree, "abs_out")
    assert found(check_tree) == [("MPS002", YAML, line_of(check_tree, YAML, line.rstrip("\n")), kernel_column(line))]


def test_deleted_registration_of_a_macro_made_kernel_beside_an_overload_is_mps002(check_tree):
    (check_tree / KERNELS_CPP).write_text(KERNEL_SHAPES)
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(bitwise_and_stub, &bitwise_and_mps_kernel)\n", "")
    line = shared_line(check_tree, "bitwise_and_out")
    assert found(check_tree) == [("MPS002", YAML, line_of(check_tree, YAML, line.rstrip("\n")), kernel_column(line))]


def test_renamed_functor_is_mps004_at_its_first_registration(check_tree):
    edit(check_tree, BINARY_METAL, "struct gcd_functor {", "struct gcd2_functor {")
    assert found(check_tree) == [("MPS004", BINARY_METAL, line_of(check_tree, BINARY_METAL, "REGISTER_INTEGER_BINARY_OP(gcd);"), 0)]


def test_renamed_functor_of_a_bulk_macro_op_is_reported_in_the_macro_body(check_tree):
    edit(check_tree, UNARY_METAL, "struct sin_functor {", "struct sine_functor {")
    assert found(check_tree) == [("MPS004", UNARY_METAL, line_of(check_tree, UNARY_METAL, "REGISTER_UNARY_OP(sin, DTYPE1, DTYPE0);"), 0)]


def test_functor_from_an_included_header_counts(check_tree):
    text = (check_tree / BINARY_METAL).read_text()
    start = text.index("struct gcd_functor {")
    end = text.index("\n};\n", start) + 4
    (check_tree / "c10/metal/gcd.h").write_text(text[start:end])
    (check_tree / BINARY_METAL).write_text("#include <c10/metal/gcd.h>\n" + text[:start] + text[end:])
    assert found(check_tree) == []


def test_dropped_register_line_is_mps003_at_the_exec_call(check_tree):
    edit(check_tree, BINARY_METAL, "REGISTER_FLOAT_BINARY_OP(fmin);\n", "")
    assert found(check_tree) == [("MPS003", BINARY_MM, line_of(check_tree, BINARY_MM, 'exec_binary_kernel(iter, "fmin")'), 0)]


def test_mps_row_pointing_at_a_deleted_impl_is_mps001(check_tree):
    text = (check_tree / UNARY_OPS_MM).read_text()
    start = text.index("TORCH_IMPL_FUNC(frac_out_mps)")
    end = text.index("\n}\n", start) + 3
    (check_tree / UNARY_OPS_MM).write_text(text[:start] + text[end:])
    row = line_of(check_tree, YAML, "    MPS: frac_out_mps")
    assert found(check_tree) == [("MPS001", YAML, row, 10)]


def test_deleted_macro_instance_impl_is_mps001(check_tree):
    edit(check_tree, BINARY_OPS_MM, "CREATE_MPS_STRUCTURED_BINARY_OP_FUNC(pow_tensor_tensor_out_mps, power, Tensor);\n", "")
    assert found(check_tree) == [("MPS001", YAML, line_of(check_tree, YAML, "    MPS: pow_tensor_tensor_out_mps"), 10)]


def test_yaml_migrated_but_not_the_host_code(check_tree):
    """sign.out moves to the shared line: its stub has no MPS kernel, and the MPSGraph code is dead."""
    shared = shared_line(check_tree, "sign_out")
    edit(check_tree, YAML, shared + "    MPS: sign_out_mps\n", shared.replace(": sign_out", ", MPS: sign_out"))
    line = shared_line(check_tree, "sign_out")
    row = line_of(check_tree, YAML, line.rstrip("\n"))
    assert found(check_tree) == [
        ("MPS007", UNARY_OPS_MM, line_of(check_tree, UNARY_OPS_MM, "TORCH_IMPL_FUNC(sign_out_mps)"), 0),
        ("MPS002", YAML, row, kernel_column(line)),
    ]


def test_dead_plain_function_is_mps007_unless_used_elsewhere(check_tree):
    # xlogy's rows name xlogy_out (its stub's Metal kernel): an MPSGraph xlogy_out_mps left behind is dead
    leftover = "Tensor& xlogy_out_mps(const Tensor& self, const Tensor& other, Tensor& output) {\n  return output;\n}\n\n"
    edit(check_tree, BINARY_OPS_MM, "} // namespace at::native", leftover + "} // namespace at::native")
    dead = ("MPS007", BINARY_OPS_MM, line_of(check_tree, BINARY_OPS_MM, "Tensor& xlogy_out_mps("), 0)
    assert dead in found(check_tree)
    # a caller elsewhere makes it a helper, not dead code
    edit(check_tree, BINARY_OPS_MM, "} // namespace at::native", "static void use_it(const Tensor& a, Tensor& r) {\n  xlogy_out_mps(a, a, r);\n}\n\n} // namespace at::native")
    assert dead not in found(check_tree)


def test_half_migrated_op_is_mps008_at_the_lagging_row(check_tree):
    line = shared_line(check_tree, "round_decimals_out")
    edit(check_tree, YAML, line, without_mps(line, "round_decimals_out"))
    edit(check_tree, UNARY_OPS_MM, "} // namespace at::native", "TORCH_IMPL_FUNC(round_decimals_out_mps)(const Tensor& self, int64_t decimals, const Tensor& output) {}\n\n} // namespace at::native")
    row = line_of(check_tree, YAML, "    MPS: round_decimals_out_mps")
    assert found(check_tree) == [("MPS008", YAML, row, 10)]


def test_duplicate_stub_registration_is_mps005(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(polar_stub, &polar_mps_kernel);\n", "REGISTER_DISPATCH(polar_stub, &polar_mps_kernel);\nREGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n")
    assert found(check_tree) == [("MPS005", BINARY_MM, line_of(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub", nth=2), 0)]


def test_duplicate_stub_through_a_helper_macro_is_mps005(check_tree):
    edit(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(abs);\n", "REGISTER_UNARY_TI_DISPATCH(abs);\nREGISTER_UNARY_TI_DISPATCH(exp);\n")
    assert found(check_tree) == [("MPS005", UNARY_MM, line_of(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(exp);", nth=2), 0)]


def test_duplicate_op_dtype_registration_is_mps006(check_tree):
    edit(check_tree, BINARY_METAL, "REGISTER_FLOAT_BINARY_OP(fmin);\n", "REGISTER_FLOAT_BINARY_OP(fmin);\nREGISTER_BINARY_OP(hypot, half, half);\n")
    assert found(check_tree) == [("MPS006", BINARY_METAL, line_of(check_tree, BINARY_METAL, "REGISTER_BINARY_OP(hypot, half, half);"), 0)]


def test_bulk_macro_instantiated_twice_is_one_mps006(check_tree):
    edit(check_tree, UNARY_METAL, "INSTANTIATE_UNARY_KERNELS2(float, long);\n", "INSTANTIATE_UNARY_KERNELS2(float, long);\nINSTANTIATE_UNARY_KERNELS2(half, half);\n")
    findings = run_check(PytorchTree(check_tree)).findings
    assert [(f.code, f.line) for f in findings] == [("MPS006", line_of(check_tree, UNARY_METAL, "INSTANTIATE_UNARY_KERNELS2(half, half);", nth=2))]
    assert "exp(half, half)" in findings[0].message


def test_stale_xfail_is_mps009(check_tree):
    edit(check_tree, COMMON_MPS, '            "cummax": None,\n', '            "cummax": None,\n            "hypot": None,\n            "exp": [torch.float16],\n            "fmin": [torch.float64],\n')
    assert found(check_tree) == [
        ("MPS009", COMMON_MPS, line_of(check_tree, COMMON_MPS, '"hypot": None'), 0),
        ("MPS009", COMMON_MPS, line_of(check_tree, COMMON_MPS, '"exp": [torch.float16]'), 0),
    ]


def test_commented_out_registration_does_not_count(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);", "// REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);")
    assert [c for c, *_ in found(check_tree)] == ["MPS002"]


def test_paths_report_only_findings_touching_them(check_tree, monkeypatch):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    edit(check_tree, UNARY_METAL, "struct sin_functor {", "struct sine_functor {")
    assert [c for c, *_ in found(check_tree)] == ["MPS004", "MPS002"]
    assert [c for c, *_ in found(check_tree, [BINARY_MM], cwd=check_tree)] == ["MPS002"]  # where the REGISTER_DISPATCH goes
    assert [c for c, *_ in found(check_tree, [str(check_tree / UNARY_METAL)])] == ["MPS004"]
    assert [c for c, *_ in found(check_tree, ["UnaryKernel.mm"], cwd=check_tree / "aten/src/ATen/native/mps/operations")] == []
    assert [c for c, *_ in found(check_tree, [YAML], cwd=check_tree)] == ["MPS002"]
    (check_tree / "README.md").write_text("not an MPS source\n")
    assert found(check_tree, ["README.md"], cwd=check_tree) == []


def _mps004(root: Path) -> list[tuple[str, str, int, int]]:
    return [f for f in found(root, [UNARY_METAL], cwd=root) if f[0] == "MPS004"]


def test_functor_made_by_a_macro_of_an_included_header_counts(real_tree: Path):
    """torch 2.13's c10/metal/indexing.h defines DEFINE_UNARY_FLOATING_FUNCTOR(NAME), which
    makes NAME_functor: a file using it defines erf_functor (no MPS004)."""
    metal = real_tree / UNARY_METAL
    regs = "REGISTER_UNARY_OP(erf, float, float);\nREGISTER_UNARY_OP(erf, half, half);\n"
    metal.write_text(metal.read_text() + "\n" + regs)
    assert [f[2] for f in _mps004(real_tree)] == [line_of(real_tree, UNARY_METAL, "REGISTER_UNARY_OP(erf, float")]
    metal.write_text(metal.read_text().replace(regs, "DEFINE_UNARY_FLOATING_FUNCTOR(erf);\n" + regs))
    assert _mps004(real_tree) == []
    # in a comment, the macro call defines nothing
    metal.write_text(metal.read_text().replace("DEFINE_UNARY_FLOATING_FUNCTOR(erf);", "// DEFINE_UNARY_FLOATING_FUNCTOR(erf);"))
    assert len(_mps004(real_tree)) == 1


def test_functor_defining_macro_found_through_nested_includes(real_tree: Path):
    helpers = real_tree / "aten/src/ATen/native/mps/kernels/functor_helpers.h"
    helpers.write_text('#pragma once\n#include "functor_macros.h"\n')
    (helpers.parent / "functor_macros.h").write_text(
        "#pragma once\n#define MAKE_IDENTITY_FUNCTOR(NAME) \\\n  struct NAME##_functor {          \\\n"
        "    template <typename T>          \\\n    inline T operator()(const T x) { \\\n      return x;                    \\\n    }                              \\\n  }\n"
    )
    metal = real_tree / UNARY_METAL
    text = metal.read_text()
    metal.write_text('#include "functor_helpers.h"\n' + text + "\nMAKE_IDENTITY_FUNCTOR(ident);\nREGISTER_UNARY_OP(ident, float, float);\n")
    assert _mps004(real_tree) == []
    metal.write_text(text + "\nMAKE_IDENTITY_FUNCTOR(ident);\nREGISTER_UNARY_OP(ident, float, float);\n")  # not included
    assert len(_mps004(real_tree)) == 1


def test_paths_keep_findings_by_location_never_by_word(real_tree: Path):
    """A comment naming trunc.out and code using std::string and std::max in UnaryOps.mm do not pull
    in the findings about the trunc.out row or max.dim_max (-> max_out_mps) of the whole-tree run."""
    whole = run_check(PytorchTree(real_tree), strict=True).findings
    assert any("max.dim_max" in f.message for f in whole) and any(f.message.startswith("trunc.out") for f in whole)

    def found(root, paths, cwd):
        return [(f.code, f.path, f.line) for f in run_check(PytorchTree(root), paths, cwd, strict=True).findings]

    before = found(real_tree, [UNARY_OPS_MM], cwd=real_tree)
    mm = real_tree / UNARY_OPS_MM
    mm.write_text(
        mm.read_text() + "\n// trunc.out, std and max are handled elsewhere\nstatic std::string describe_std(int x) { return std::to_string(std::max(x, 0)); }\n"
    )
    assert found(real_tree, [UNARY_OPS_MM], cwd=real_tree) == before


def test_findings_carry_symbols_and_locations(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    (f,) = run_check(PytorchTree(check_tree)).findings
    assert f.code == "MPS002" and f.symbols == ("hypot.out", "hypot_stub")
    paths = {p for p, _ in f.locations}
    # the stub's declaration, the Metal kernel's registrations and functor, and the host file paired with them
    assert {"aten/src/ATen/native/BinaryOps.h", BINARY_METAL, BINARY_MM} <= paths
    # a registration left in a comment is not a use of the stub
    edit(check_tree, BINARY_MM, "static void hypot_mps_kernel", "// REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\nstatic void hypot_mps_kernel")
    (g,) = run_check(PytorchTree(check_tree)).findings
    assert (BINARY_MM, line_of(check_tree, BINARY_MM, "// REGISTER_DISPATCH(hypot_stub")) not in g.locations


SIN_FLOAT = "  inline T operator()(const T x) {\n    return T(precise::sin(float(x)));\n  }\n  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>"


def test_nan_dropping_min_max_is_mps010_only_in_float_overloads(check_tree):
    edit(check_tree, UNARY_METAL, "    return T(precise::sin(float(x)));", "    return T(max(precise::sin(float(x)), -1.0f));")
    line = line_of(check_tree, UNARY_METAL, "return T(max(precise::sin")
    assert found(check_tree) == [("MPS010", UNARY_METAL, line, 0)]
    edit(check_tree, UNARY_METAL, "return T(max(precise::sin", "return T(metal::max(precise::sin")
    assert found(check_tree) == [("MPS010", UNARY_METAL, line, 0)]
    edit(check_tree, UNARY_METAL, "return T(metal::max(precise::sin", "return T(c10::metal::max(precise::sin")
    assert found(check_tree) == []
    # in the integer overload (and in a comment) a plain max is fine
    edit(check_tree, UNARY_METAL, "    return precise::sin(float(x));", "    // max(a, b) would drop NaN\n    return precise::sin(float(max(x, T(0))));")
    assert found(check_tree) == []


def test_fast_math_is_mps011(check_tree):
    edit(check_tree, UNARY_METAL, "    return T(precise::sin(float(x)));", "    return T(fast::sin(float(x)));")
    assert found(check_tree) == [("MPS011", UNARY_METAL, line_of(check_tree, UNARY_METAL, "return T(fast::sin"), 0)]


def test_int2float_registration_without_integer_overload_is_mps012(check_tree):
    text = (check_tree / UNARY_METAL).read_text()
    start = text.index("struct sin_functor {")
    integral = text.index("  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>", start)
    complex_ = text.index("  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>", integral)
    (check_tree / UNARY_METAL).write_text(text[:integral] + text[complex_:])
    codes = found(check_tree)
    assert [c for c, *_ in codes] == ["MPS012"]
    (finding,) = run_check(PytorchTree(check_tree)).findings
    assert "sin_functor" in finding.message and "no overload taking integers" in finding.message


def test_registration_no_overload_accepts_is_mps013(check_tree):
    text = (check_tree / UNARY_METAL).read_text()
    start = text.index("struct sin_functor {")
    complex_ = text.index("  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>", start)
    end = text.index("};", complex_)
    (check_tree / UNARY_METAL).write_text(text[:complex_] + text[end:])
    assert [c for c, *_ in found(check_tree)] == ["MPS013"]
    (finding,) = run_check(PytorchTree(check_tree)).findings
    assert "complex inputs" in finding.message and "sin, half2, half2" in finding.message


def test_functor_overload_constraints_are_read_conservatively():
    from mpsgen.tree.functors import ALL, COMPLEX, FLOAT, INT, accepted

    assert accepted("template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>") == {FLOAT}
    assert accepted("template <typename T, enable_if_t<!is_floating_point_v<T>, bool> = true>") == {INT}
    assert accepted("template <typename T, ::metal::enable_if_t<::metal::is_floating_point_v<T>, bool> = true>") == {FLOAT, COMPLEX}
    assert accepted("template <typename T, enable_if_t<is_scalar_integral_v<T> && !is_same_v<T, bool>, bool> = true>") == ALL
    assert accepted("template <typename T, enable_if_t<is_complex_v<T> || is_scalar_integral_v<T>, bool> = true>") == ALL
    assert accepted("template <typename T>") == ALL
    assert INT in ALL


def test_a_dispatch_key_named_twice_is_mps015(check_tree):
    """`--row X --row X` used to write `CPU, CUDA, MPS, MPS`; a merge can leave a second MPS line."""
    line = shared_line(check_tree, "hypot_out")
    edit(check_tree, YAML, line, line.replace(": hypot_out", ", MPS: hypot_out"))
    doubled = shared_line(check_tree, "hypot_out")
    assert found(check_tree) == [("MPS015", YAML, line_of(check_tree, YAML, doubled.rstrip("\n")), kernel_column(doubled))]
    edit(check_tree, YAML, doubled, line + "    MPS: hypot_out_mps\n")
    row = line_of(check_tree, YAML, "    MPS: hypot_out_mps")
    assert ("MPS015", YAML, row, len("    MPS: ") + 1) in found(check_tree)
