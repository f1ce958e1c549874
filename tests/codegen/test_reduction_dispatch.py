"""A tree's own reduction dispatcher (2.14's reduction_dispatch_mps) read from its ReduceOps.mm and
ReduceOps.metal: mpsgen's practice files in 2.14.1's shape (tests/practice_2_14_1) and variants of
them; what fits it and what does not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mpsgen.core.errors import Refused
from mpsgen.report.practice import PRACTICE_TREE
from mpsgen.spec.reduction import load_reduction_spec
from mpsgen.codegen.reduction_dispatch import dispatch_pairs, host_text, misfit, read_dispatcher, registration_lines
from mpsgen.core.resources import resource_dir

HERE = Path(__file__).resolve().parents[1] / "practice_2_14_1"
MM, METAL = (HERE / "ReduceOps.mm").read_text(), (HERE / "ReduceOps.metal").read_text()
SPECS = resource_dir("specs") / "reductions"


def read(mm: str = MM, metal: str | None = METAL):
    return read_dispatcher(mm, metal, "operations/ReduceOps.mm", "kernels/ReduceOps.metal")


def test_the_dispatcher_is_read_from_the_tree():
    disp = read()
    assert (disp.function, disp.options, disp.macro, disp.load) == ("reduction_dispatch_mps", "ReductionDispatch", "REGISTER_VALUE_REDUCTION_IMPL", "IdentityLoad")
    assert disp.fields == ("prefix", "input_kernel_dtype", "output_kernel_dtype", "partial_dtype", "pass2_prefix", "has_strided_pass1")
    assert disp.variants == ("", "inner", "flat") and disp.params == ("TI", "TO", "NAME", "OP", "LOAD")
    assert disp.accumulates_in_output and disp.where.startswith("operations/ReduceOps.mm:")
    assert disp.kernel_names("prod_", "int", "long") == ["prod_reduction_int_long", "prod_reduction_inner_int_long", "prod_reduction_flat_int_long"]


def test_2_13s_file_has_none():
    assert read((PRACTICE_TREE / "aten/src/ATen/native/mps/operations/ReduceOps.mm").read_text(), None) is None


def test_a_dispatcher_mpsgen_cannot_call_is_refused_with_its_line():
    with pytest.raises(Refused, match=r"ReduceOps.mm:\d+: reduction_dispatch_mps's ReductionDispatch has chunk_rows without a default"):
        read(MM.replace("  std::string pass2_prefix;", "  std::string pass2_prefix;\n  uint32_t chunk_rows;"))
    # (a field of class type needs no value: 2.14.1's `std::optional<float> divisor;`)
    assert read(MM.replace("  std::string pass2_prefix;", "  std::string pass2_prefix;\n  std::optional<float> divisor;")).fields[5] == "divisor"
    with pytest.raises(Refused, match="lacks pass2_prefix"):
        read(MM.replace("  std::string pass2_prefix; // the op that folds the partials\n", ""))
    with pytest.raises(Refused, match="asks for outer kernels that REGISTER_VALUE_REDUCTION_IMPL"):
        read(MM.replace('"{}reduction_inner_{}_{}"', '"{}reduction_outer_{}_{}"'))
    with pytest.raises(Refused, match="has no kernels/ReduceOps.metal"):
        read(metal=None)
    with pytest.raises(Refused, match="no load struct"):
        read(metal=METAL.replace("return static_cast<TA>(v);", "return v;"))


def test_a_macro_expanding_another_adds_its_variants():
    metal = METAL.replace("#define REGISTER_VALUE_REDUCTION_IMPL(", "#define REGISTER_VALUE_BASE(") + (
        '\n#define REGISTER_VALUE_CHUNK(TI, TO, NAME, OP, LOAD) \\\n'
        '  template [[host_name(NAME "_reduction_inner_chunk_" #TI "_" #TO)]] \\\n'
        '  kernel void value_chunk<OP, LOAD, TI, TO>(constant TI * input [[buffer(0)]]);\n'
        '#define REGISTER_VALUE_REDUCTION_IMPL(TI, TO, NAME, OP, LOAD) \\\n'
        '  REGISTER_VALUE_CHUNK(TI, TO, NAME, OP, LOAD)                 \\\n'
        '  REGISTER_VALUE_BASE(TI, TO, NAME, OP, LOAD)\n')
    disp = read(metal=metal)
    assert disp.macro == "REGISTER_VALUE_REDUCTION_IMPL" and set(disp.variants) == {"inner_chunk", "", "inner", "flat"}


def test_what_fits_it():
    prod = load_reduction_spec(SPECS / "prod.yaml")
    var = load_reduction_spec(SPECS / "std_var.yaml")
    assert misfit(prod) is None
    assert "Welford" in misfit(var)
    assert "correction, take_sqrt" in misfit(replace(var, reduce="MaxOp"))
    assert "load struct" in misfit(replace(prod, load="x * x"))
    disp = read()
    registered, widened = dispatch_pairs(prod, prod.dtypes, disp)
    assert widened == (("half", "half"), ("bfloat", "bfloat")) and ("half", "float") in registered
    with pytest.raises(Refused, match="half->float"):
        dispatch_pairs(prod, (("half", "half"), ("float", "float")), disp)
    with pytest.raises(Refused, match="long->long"):
        dispatch_pairs(prod, (("int", "long"),), disp)
    assert registration_lines(prod, disp, (("int", "long"),)) == 'REGISTER_VALUE_REDUCTION_IMPL(int, long, "prod", ProdReduceOp, IdentityLoad);'
    host = host_text(prod, disp, widened)
    assert "output.fill_(1);" in host and "if (output.scalar_type() == kBFloat16 || output.scalar_type() == kHalf) {" in host
    # the options in the struct's order, only those without a default
    assert host.index(".prefix") < host.index(".input_kernel_dtype") < host.index(".pass2_prefix") and "has_strided_pass1" not in host
