"""The reduction spec (specs/reductions/, ``kind: reduction``) and the Metal it writes: every
problem of a spec located at its line; the kernel written against the reduction helpers each
release's c10/metal/reduction_utils.h has (its op structs, simd_prod, the two signatures of
threadgroup_welford_combine); a spec needing what the header lacks is refused with the reason."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpsgen.core.errors import Refused, SpecErrors
from mpsgen.spec.reduction import OwnOp, load_reduction_spec, parse_reduction_spec_text, shipped_reduction_spec
from mpsgen.codegen.reduction import helper_problems, kernel_source, params_header, read_helpers, registrations, threadgroup_size
from mpsgen.core.resources import resource_dir

SPECS = resource_dir("specs") / "reductions"
PROD = (SPECS / "prod.yaml").read_text()


def header_of(real_sources) -> str:
    return real_sources["c10/metal/reduction_utils.h"].read_text()


def test_the_shipped_specs_load():
    prod = load_reduction_spec(SPECS / "prod.yaml")
    assert prod.stub == "prod_stub" and isinstance(prod.reduce, OwnOp) and prod.reduce.simd == "simd_prod"
    assert ("int", "long") in prod.dtypes and ("bool", "long") in prod.dtypes and prod.empty == "1"
    var = load_reduction_spec(SPECS / "std_var.yaml")
    assert var.welford and [p.name for p in var.params] == ["correction", "take_sqrt"] and len(var.outputs) == 2
    assert var.empty == "nan" and var.accumulate == "float"


@pytest.mark.parametrize("op,stem", [("prod", "prod"), ("var", "std_var"), ("std", "std_var"), ("var_mean", "std_var"), ("std_mean", "std_var")])
def test_an_op_finds_the_spec_of_its_stub(op, stem):
    assert shipped_reduction_spec(op) == SPECS / f"{stem}.yaml"


def test_shipped_reduction_spec_of_an_op_without_one():
    assert shipped_reduction_spec("cumsum") is None


@pytest.mark.parametrize(
    "old,new,where,said",
    [
        ("stub: prod_stub", "stub: prod", 2, "names a DECLARE_DISPATCH stub"),
        ('reduce: {identity: "1", combine: "a * b", simd: simd_prod}', "reduce: SumOfSquares", 9, "one of the tree's op structs"),
        ('combine: "a * b"', 'combine: "threadgroup_barrier(a)"', 9, "the kernel template owns"),
        ('simd: simd_prod', 'simd: prod', 9, "SIMD-group helper"),
        ("load: x", "load: x * (x", 10, "unbalanced bracket"),
        ("accumulate: opmath", "accumulate: double", 11, "'accumulate' is opmath"),
        ("outputs: [acc]", "outputs: [acc, acc, acc]", 12, "one or two output values"),
        ("  - [bool, long]", "  - [bool, complex]", 17, "[input, output] type pairs"),
        ("  - [bool, long]", "  - [float, float]", 17, "once each"),
        ('empty: "1"', "empty: 2", 28, "nan, 0, 1, inf or -inf"),
        ("  - {call: prod, dims: one}", "  - {call: prod, dims: two}", 30, "each try entry"),
        ("kind: reduction", "kind: kernel", 3, "kind: reduction"),
    ],
)
def test_a_bad_spec_is_refused_at_its_line(old, new, where, said):
    assert old in PROD
    _spec, problems = parse_reduction_spec_text(PROD.replace(old, new), "prod.yaml")
    assert problems, new
    (loc, msg), *_ = problems
    assert said in msg, msg
    assert (loc.path, loc.line) == ("prod.yaml", where)


def test_an_unknown_key_and_a_missing_one():
    _spec, problems = parse_reduction_spec_text(PROD.replace("empty:", "emptiness:"), "p.yaml")
    said = " ".join(m for _l, m in problems)
    assert "unknown key 'emptiness'" in said and "missing required key 'empty'" in said


def test_welford_accumulates_in_float():
    text = (SPECS / "std_var.yaml").read_text().replace("accumulate: float", "accumulate: opmath")
    _spec, problems = parse_reduction_spec_text(text, "v.yaml")
    assert any("welford reduction accumulates in float" in m for _l, m in problems)


def test_a_missing_file(tmp_path):
    with pytest.raises(SpecErrors):
        load_reduction_spec(tmp_path / "nothing.yaml")


def test_the_helpers_each_release_has(release, real_sources):
    helpers = read_helpers(header_of(real_sources))
    assert {"simd_prod", "simd_sum", "welford_combine", "threadgroup_welford_combine"} <= helpers.functions
    assert {"MaxOp", "MinOp"} <= helpers.structs
    # 2.13.0: (data, size), every thread folding the partials; 2.14.1: (data, idx, size), a tree
    assert helpers.welford_takes_index is (release != "2.13.0")
    # calls are not definitions: the header calls ::metal::simd_shuffle_and_fill_down, defines none
    assert "simd_shuffle_and_fill_down" not in helpers.functions


def test_the_kernel_follows_the_release_header(release, real_sources):
    helpers = read_helpers(header_of(real_sources))
    var = load_reduction_spec(SPECS / "std_var.yaml")
    text = kernel_source(var, helpers)
    call = "threadgroup_welford_combine(shared, nsimd)" if release == "2.13.0" else "threadgroup_welford_combine(shared, tid, nsimd)"
    assert call in text
    assert "welford_combine(acc, simd_shuffle_down(acc, shift))" in text
    assert "if (params.noutputs > 1) {\n      output1[output1_offset] = static_cast<TO>(mean);" in text
    prod = kernel_source(load_reduction_spec(SPECS / "prod.yaml"), helpers)
    assert "struct ProdReduceOp {" in prod and "return c10::metal::simd_prod(val);" in prod
    assert "acc = simd_lane_id < nsimd ? shared[simd_lane_id] : Op::identity();" in prod
    assert "using TA = opmath_t<TO>;" in prod and "threadgroup_barrier(mem_flags::mem_threadgroup);" in prod


def test_registrations_and_params():
    prod = load_reduction_spec(SPECS / "prod.yaml")
    regs = registrations(prod)
    assert regs.count("REGISTER_PROD_REDUCTION(") == len(prod.dtypes) + 1  # (+ the #define)
    assert 'template [[host_name("prod_reduction_general_" #TI "_" #TO)]] kernel void' in regs
    assert "REGISTER_PROD_REDUCTION(int, long);" in regs
    var = load_reduction_spec(SPECS / "std_var.yaml")
    header = params_header(var)
    assert re.search(r"uint32_t reduction_size;\n  uint32_t ndim;", header)
    assert "output1_strides;" in header and "float correction;" in header and "bool take_sqrt;" in header
    assert "output1_strides" not in params_header(prod) and "noutputs" not in params_header(prod)


def test_what_the_header_lacks_is_refused_with_the_reason(real_sources):
    helpers = read_helpers(header_of(real_sources))
    prod = load_reduction_spec(SPECS / "prod.yaml")
    summed = replace(prod, reduce="SumOp")  # upstream's newest tree has SumOp; neither release does
    assert helper_problems(summed, helpers, "c10/metal/reduction_utils.h") == [
        "c10/metal/reduction_utils.h has no op struct SumOp (it has: MaxOp, MinOp); give the op's identity and combine in the spec instead"
    ]
    with pytest.raises(Refused, match="no simd_product_of_squares"):
        kernel_source(replace(prod, reduce=OwnOp("1", "a * b", "simd_product_of_squares")), helpers)
    no_welford = read_helpers(re.sub(r"welford", "w", header_of(real_sources)))
    with pytest.raises(Refused, match="no welford_combine"):
        kernel_source(load_reduction_spec(SPECS / "std_var.yaml"), no_welford)


@pytest.mark.parametrize("n,limit,threads", [(0, 1024, 32), (1, 1024, 32), (33, 1024, 64), (1024, 1024, 1024), (5000, 1024, 1024), (300, 64, 64)])
def test_threads_per_threadgroup(n, limit, threads):
    assert threadgroup_size(n, limit) == threads


def test_the_host_function_reads_the_reduction_iterator():
    from mpsgen.codegen.reduction import host_text

    prod = host_text(load_reduction_spec(SPECS / "prod.yaml"))
    assert prod.startswith("namespace mps {\n") and prod.endswith("REGISTER_DISPATCH(prod_stub, &mps::prod_mps_kernel);")
    assert "static void prod_mps_kernel(TensorIterator& iter) {" in prod
    assert "const Tensor& input = iter.input(0);\n  const Tensor& output = iter.output(0);" in prod
    assert "output.fill_(1);" in prod  # what impl_func_prod fills
    assert 'tensors with 2^32 elements or more are not supported on MPS' in prod and "last_offset" in prod
    assert "params.reduction_size = safe_downcast<uint32_t, int64_t>(input.numel() / output.numel());" in prod
    assert "c10::metal::round_up(params.reduction_size, 32u)" in prod  # as try dispatches (threadgroup_size)
    assert 'fmt::format("prod_reduction_general_{}_{}", scalarToMetalTypeString(input), scalarToMetalTypeString(output));' in prod
    assert "auto pso = lib.getPipelineStateForFunc(kernel_name);" in prod
    assert "mtl_setArgs(computeEncoder, input, output, params);" in prod and "noutputs" not in prod
    var = host_text(load_reduction_spec(SPECS / "std_var.yaml"))
    assert "static void std_var_mps_kernel(TensorIterator& iter, double correction, bool take_sqrt) {" in var
    assert "const Tensor& output1 = iter.noutputs() > 1 ? iter.output(1) : output;" in var
    assert "params.noutputs = iter.noutputs();" in var and "params.take_sqrt = take_sqrt;" in var
    assert "output.fill_(std::numeric_limits<double>::quiet_NaN());" in var  # what std_var_out fills
    assert "mtl_setArgs(computeEncoder, input, output, output1, params);" in var
    assert var.endswith("REGISTER_DISPATCH(std_var_stub, &mps::std_var_mps_kernel);")
    assert max(len(line) for line in (prod + var).splitlines()) <= 120  # PyTorch's .mm column limit


def test_spec_validate_knows_reduction_specs(run, tmp_path):
    res = run("spec", "validate", SPECS / "prod.yaml", SPECS / "std_var.yaml")
    assert res.exit_code == 0, res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(PROD.replace('empty: "1"', "empty: 7"))
    res = run("spec", "validate", bad)
    assert res.exit_code == 2 and f"{bad}:28:8: 'empty' is what the CPU path fills" in res.output
    bad.write_text(PROD.replace("load: x\n", "load: x * y\n"))
    res = run("spec", "validate", bad)
    assert res.exit_code == 2 and "the reduction kernel does not compile against mpsgen's Metal model" in res.output
    assert "'y' was not declared" in res.output.replace("‘", "'").replace("’", "'")


@pytest.mark.parametrize(
    "line",
    ["params: 5", "try: 5", "load: [1]", "finalize: {a: 1}", "max_dims: true", "outputs: [[1]]", "reduce: 5", "ops: 5",
     "kernel: 5", "file: [x]", "empty: !!python/name:os.system ''"],
)
def test_a_value_of_the_wrong_shape_is_a_problem_not_a_traceback(line):
    key = line.split(":")[0]
    text = re.sub(rf"^{key}:.*(\n  .*)*", line, PROD, flags=re.M) if re.search(rf"^{key}:", PROD, re.M) else PROD + line + "\n"
    spec, problems = parse_reduction_spec_text(text, "p.yaml")
    assert spec is None and problems


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(PROD)), st.text(max_size=12))
def test_any_edit_of_a_spec_is_read_or_refused(at, inserted):
    text = PROD[:at] + inserted + PROD[at:]
    spec, problems = parse_reduction_spec_text(text, "p.yaml")
    assert (spec is None) == bool(problems)
