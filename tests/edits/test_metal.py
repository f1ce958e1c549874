"""Golden tests for the .metal edit: functor placement, helper macros, bulk macros."""

from __future__ import annotations

from mpsgen.edits.metal import MetalAddition, add_op
from mpsgen.codegen.functor import render_functor
from mpsgen.report.practice import PRACTICE_TREE
from mpsgen.spec.registrations import plan_registrations
from mpsgen.spec.op import FunctorSource, OpSpec
from mpsgen.tree.metal import scan_metal
from tests.golden import assert_golden

KERNELS = PRACTICE_TREE / "aten/src/ATen/native/mps/kernels"
INDEXING = (PRACTICE_TREE / "c10/metal/indexing.h").read_text()
BASE = {n for n, d in scan_metal(INDEXING).macros.items() if n.startswith("REGISTER_") and d.params and d.params[0] == "NAME"}


def edit(file: str, spec: OpSpec) -> str:
    text = (KERNELS / file).read_text()
    plan = plan_registrations(spec, scan_metal(text), BASE, file)
    return add_op(text, MetalAddition(spec.name, render_functor(spec), plan))


def test_binary_float_and_integer_uses_file_helpers():
    spec = OpSpec("heaviside", "binary", FunctorSource(expr="a == T(0) ? b : static_cast<T>(a > T(0))"), ("integer",))
    out = edit("BinaryKernel.metal", spec)
    assert "REGISTER_FLOAT_BINARY_OP(heaviside);\nREGISTER_INTEGER_BINARY_OP(heaviside);\n" in out
    assert_golden("metal/binary_heaviside.metal", out)


def test_binary_int2float_and_complex_opmath():
    spec = OpSpec("atan2", "binary", FunctorSource(expr="::precise::atan2(float(a), float(b))"), ("int2float", "opmath", "complex"))
    out = edit("BinaryKernel.metal", spec)
    assert "REGISTER_OPMATH_FLOAT_BINARY_OP(atan2);\nREGISTER_INT2FLOAT_BINARY_OP(atan2);" in out
    # complex lines join the complex block, after its last op group
    assert "REGISTER_OPMATH_BINARY_OP(mul, half2, half2);\nREGISTER_OPMATH_BINARY_OP(atan2, float2, float2);\nREGISTER_OPMATH_BINARY_OP(atan2, half2, half2);" in out
    assert_golden("metal/binary_atan2_complex.metal", out)


def test_unary_float_int2float_goes_into_bulk_macro():
    spec = OpSpec("special_ndtri", "unary", FunctorSource(expr="x"), ("int2float",))
    out = edit("UnaryKernel.metal", spec)
    assert "  REGISTER_UNARY_OP(sigmoid, DTYPE1, DTYPE0);      \\\n  REGISTER_UNARY_OP(special_ndtri, DTYPE1, DTYPE0)\n" in out
    assert "REGISTER_UNARY_OP(special_ndtri, float" not in out  # nothing registered twice
    assert_golden("metal/unary_special_ndtri.metal", out)


def test_unary_float_only_gets_explicit_lines_not_the_bulk_macro():
    spec = OpSpec("frac", "unary", FunctorSource(expr="x - ::metal::trunc(x)"))
    out = edit("UnaryKernel.metal", spec)
    assert "REGISTER_UNARY_OP(frac, float, float);\nREGISTER_UNARY_OP(frac, half, half);\nREGISTER_UNARY_OP(frac, bfloat, bfloat);" in out
    assert "(frac, DTYPE1" not in out


def test_unary_complex_goes_into_vec2_bulk_macro():
    spec = OpSpec("asinh", "unary", FunctorSource(expr="x"), ("int2float", "complex"))
    out = edit("UnaryKernel.metal", spec)
    assert "REGISTER_UNARY_OP(asinh, DTYPE##2, DTYPE##2)" in out
    assert "REGISTER_UNARY_OP(asinh, DTYPE1, DTYPE0)" in out


def test_backslashes_realigned_when_new_line_is_longest():
    spec = OpSpec("a_rather_long_operator_name", "unary", FunctorSource(expr="x"), ("int2float",))
    out = edit("UnaryKernel.metal", spec)
    start = out.index("#define INSTANTIATE_UNARY_KERNELS2")
    block = out[start : out.index("\n\n", start)].split("\n")
    columns = {len(line) for line in block[:-1]}
    assert len(columns) == 1 and all(line.endswith(" \\") for line in block[:-1])
    assert block[-1] == "  REGISTER_UNARY_OP(a_rather_long_operator_name, DTYPE1, DTYPE0)"


def test_functor_never_inside_another_definition_and_placed_by_relation():
    spec = OpSpec("bitwise_andnot", "binary", FunctorSource(expr="a & ~b"), ("integer",))
    out = edit("BinaryKernel.metal", spec)
    # related functor (bitwise_and) is followed by ours
    assert out.index("struct bitwise_andnot_functor") > out.index("struct bitwise_and_functor")
    assert out.index("struct bitwise_andnot_functor") < out.index("struct add_alpha_functor")
    assert scan_metal(out).functors["bitwise_andnot"].start_line > 0


def test_scaffold_fails_to_compile_on_purpose():
    spec = OpSpec("heaviside", "binary")
    text = render_functor(spec)
    assert "static_assert(" in text and "sizeof(T) == 0" in text and "heaviside_functor" in text


def test_existing_registrations_are_not_repeated():
    spec = OpSpec("hypot", "binary", FunctorSource(expr="a"), ())
    text = (KERNELS / "BinaryKernel.metal").read_text()
    plan = plan_registrations(spec, scan_metal(text), BASE, "BinaryKernel.metal")
    assert plan.statements == () and plan.bulk_lines == ()


def _without_macro(text: str, name: str) -> str:
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith(f"#define {name}("))
    end = start
    while lines[end].rstrip().endswith("\\"):
        end += 1
    return "\n".join(lines[:start] + lines[end + 1 :])


def test_only_macros_the_tree_defines_are_emitted():
    text = (KERNELS / "BinaryKernel.metal").read_text()
    text = _without_macro(text, "REGISTER_FLOAT_BINARY_OP")
    spec = OpSpec("heaviside", "binary", FunctorSource(expr="a"), ("integer",))
    plan = plan_registrations(spec, scan_metal(text), BASE, "BinaryKernel.metal")
    assert plan.statements == (
        "REGISTER_BINARY_OP(heaviside, float, float);",
        "REGISTER_BINARY_OP(heaviside, half, half);",
        "REGISTER_BINARY_OP(heaviside, bfloat, bfloat);",
        "REGISTER_INTEGER_BINARY_OP(heaviside);",
    )


def test_a_base_macro_missing_from_indexing_h_is_refused():
    import pytest

    from mpsgen.core.errors import Refused

    text = (KERNELS / "BinaryKernel.metal").read_text()
    spec = OpSpec("atan2", "binary", FunctorSource(expr="a"), ("opmath",))
    with pytest.raises(Refused, match="REGISTER_OPMATH_BINARY_OP"):
        plan_registrations(spec, scan_metal(text), BASE - {"REGISTER_OPMATH_BINARY_OP"}, "BinaryKernel.metal")


def test_real_indexing_h_base_macros(real_sources):
    from mpsgen.tree import INDEXING_HEADER

    real = scan_metal(real_sources[INDEXING_HEADER].read_text()).macros
    base = {n for n, d in real.items() if n.startswith("REGISTER_") and d.params and d.params[0] == "NAME"}
    assert {"REGISTER_UNARY_OP", "REGISTER_BINARY_OP", "REGISTER_OPMATH_BINARY_OP", "REGISTER_BINARY_ALPHA_OP", "REGISTER_TERNARY_OP"} <= base
    spec = OpSpec("heaviside", "binary", FunctorSource(expr="a"), ("integer",))
    text = (KERNELS / "BinaryKernel.metal").read_text()
    plan = plan_registrations(spec, scan_metal(text), base, "BinaryKernel.metal")
    assert plan.statements == ("REGISTER_FLOAT_BINARY_OP(heaviside);", "REGISTER_INTEGER_BINARY_OP(heaviside);")


def test_upstream_quirks_interleaved_instances_functor_macros_and_blank_continuations():
    """Shapes seen in upstream trees: ops registered between bulk-macro instances, functors
    defined through a macro from a header, and a bulk macro with an empty continuation line."""
    text = (KERNELS / "UnaryKernel.metal").read_text()
    text = text.replace(
        "INSTANTIATE_UNARY_KERNELS2(bfloat, bfloat);\n",
        "INSTANTIATE_UNARY_KERNELS2(bfloat, bfloat);\nREGISTER_UNARY_OP(neg, bfloat, bfloat);\nREGISTER_UNARY_OP(abs, bfloat, bfloat);\n",
    )
    text = text.replace(
        "  REGISTER_UNARY_OP(exp, DTYPE##2, DTYPE##2); \\\n",
        "  REGISTER_UNARY_OP(exp, DTYPE##2, DTYPE##2); \\\n                                              \\\n",
    )
    first_reg = text.index("REGISTER_UNARY_OP(neg, int, int);")
    text = text[:first_reg] + "DEFINE_UNARY_FLOATING_FUNCTOR(erf);\nDEFINE_UNARY_FLOATING_FUNCTOR(erfc);\n\n" + text[first_reg:]

    spec = OpSpec("acosh", "unary", FunctorSource(expr="x"), ("int2float", "complex"))
    plan = plan_registrations(spec, scan_metal(text), BASE, "UnaryKernel.metal")
    out = add_op(text, MetalAddition(spec.name, render_functor(spec), plan))
    source = scan_metal(out)
    # the functor sits with the other structs, before the functor-defining macro lines
    assert source.functors["acosh"].end_line < out[: out.index("DEFINE_UNARY_FLOATING_FUNCTOR(erf)")].count("\n")
    # both bulk macros took a line; nothing registered at top level, nothing twice
    assert "REGISTER_UNARY_OP(acosh, DTYPE1, DTYPE0)" in out and "REGISTER_UNARY_OP(acosh, DTYPE##2, DTYPE##2)" in out
    assert not [c for c in source.calls if c.args and c.args[0] == "acosh"]
    vec2 = source.macros["INSTANTIATE_UNARY_KERNELS_VEC2"]
    block = out.split("\n")[vec2.start_line : vec2.end_line + 1]
    assert len({len(line) for line in block[:-1]}) == 1  # still one backslash column


def test_float_only_unary_next_to_a_real_block_not_between_instances():
    text = (KERNELS / "UnaryKernel.metal").read_text().replace(
        "INSTANTIATE_UNARY_KERNELS2(bfloat, bfloat);\n",
        "INSTANTIATE_UNARY_KERNELS2(bfloat, bfloat);\nREGISTER_UNARY_OP(neg, bfloat, bfloat);\n",
    )
    spec = OpSpec("frac", "unary", FunctorSource(expr="x"))
    plan = plan_registrations(spec, scan_metal(text), BASE, "UnaryKernel.metal")
    out = add_op(text, MetalAddition(spec.name, render_functor(spec), plan))
    at = out.index("REGISTER_UNARY_OP(frac, float, float);")
    assert out.index("REGISTER_UNARY_OP(abs, bfloat, bfloat);") < at < out.index("#define INSTANTIATE_UNARY_KERNELS2")
