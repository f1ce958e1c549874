"""Fault injection for the Metal kernel and functor rules (mpsgen/check/rules/kernels.py: MPS003,
MPS004, MPS006, MPS012, MPS013): each fault in the consistent check tree is reported with its
code and line, and nothing else is."""

from __future__ import annotations

from pathlib import Path

from mpsgen.check import run_check
from mpsgen.tree import PytorchTree

from ..conftest import BINARY_METAL, BINARY_MM, UNARY_METAL, edit, found, line_of

def test_dropped_register_line_is_mps003_at_the_exec_call(check_tree):
    edit(check_tree, BINARY_METAL, "REGISTER_FLOAT_BINARY_OP(fmin);\n", "")
    assert found(check_tree) == [("MPS003", BINARY_MM, line_of(check_tree, BINARY_MM, 'exec_binary_kernel(iter, "fmin")'), 0)]


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


def test_duplicate_op_dtype_registration_is_mps006(check_tree):
    edit(check_tree, BINARY_METAL, "REGISTER_FLOAT_BINARY_OP(fmin);\n", "REGISTER_FLOAT_BINARY_OP(fmin);\nREGISTER_BINARY_OP(hypot, half, half);\n")
    assert found(check_tree) == [("MPS006", BINARY_METAL, line_of(check_tree, BINARY_METAL, "REGISTER_BINARY_OP(hypot, half, half);"), 0)]


def test_bulk_macro_instantiated_twice_is_one_mps006(check_tree):
    edit(check_tree, UNARY_METAL, "INSTANTIATE_UNARY_KERNELS2(float, long);\n", "INSTANTIATE_UNARY_KERNELS2(float, long);\nINSTANTIATE_UNARY_KERNELS2(half, half);\n")
    findings = run_check(PytorchTree(check_tree)).findings
    assert [(f.code, f.line) for f in findings] == [("MPS006", line_of(check_tree, UNARY_METAL, "INSTANTIATE_UNARY_KERNELS2(half, half);", nth=2))]
    assert "exp(half, half)" in findings[0].message


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
