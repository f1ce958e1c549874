"""``mpsgen try`` of reduction specs: the generated kernels, built with each release's
c10/metal/reduction_utils.h and run threadgroup by threadgroup in mpsgen's model (fibers, real
barriers, SIMD-group functions over the active lanes, garbage where a kernel reads what nobody
wrote), match torch's CPU op on every case; and every mutant a reviewer would fear fails it."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import pytest

from mpsgen.core.errors import Refused
from mpsgen.spec.reduction import load_reduction_spec
from mpsgen.codegen.reduction import kernel_source, read_helpers
from mpsgen.shim.reduction_trial import SHAPES, Shape, for_model, run_reduction_trial
from mpsgen.core.resources import resource_dir

SPECS = resource_dir("specs") / "reductions"


@pytest.fixture(autouse=True)
def needs_a_compiler():
    if not any(shutil.which(c) for c in ("g++", "clang++", "c++")):
        pytest.fail("a C++ compiler must be installed for the tests (g++ or clang++)")


@pytest.mark.parametrize("op,stub,pairs", [("prod", "prod", 11), ("var", "std_var", 3), ("std_mean", "std_var", 3)])
def test_try_passes_every_case_of_the_shipped_specs(run, op, stub, pairs):
    res = run("try", op)
    assert res.exit_code == 0, res.output
    lines = res.output.strip().split("\n")
    assert lines[-1].startswith("ok: ") and lines[-1].endswith(", 0 failing."), lines[-1]
    rows = [ln for ln in lines if ln.startswith(f"{stub}_reduction_general_") and " input's real and imaginary parts" not in ln]
    assert len(rows) == pairs and all(ln.endswith("; 0 failing") for ln in rows), rows


def test_try_of_a_dtype_and_of_a_spec_file(run, tmp_path):
    res = run("try", "prod", "--dtypes", "int8,float16")
    assert res.exit_code == 0, res.output
    assert {ln.split(":")[0] for ln in res.output.splitlines() if ln.startswith("prod_reduction")} == {
        "prod_reduction_general_char_long", "prod_reduction_general_half_half", "prod_reduction_general_half_float",
    }
    res = run("try", "prod", "--dtypes", "complex64")
    assert res.exit_code == 2 and "no input type the spec registers" in res.output
    mine = tmp_path / "mine.yaml"
    mine.write_text((SPECS / "prod.yaml").read_text().replace("combine: \"a * b\"", "combine: \"a + b\""))
    res = run("try", mine, "--dtypes", "float32")
    assert res.exit_code == 1 and "FAILED" in res.output  # a sum is no product


def test_each_release_header_runs(real_sources):
    """The kernel written for the release's header, built with it: both Welford signatures."""
    header = real_sources["c10/metal/reduction_utils.h"]
    for stem, pairs in (("std_var", {("float", "float"), ("half", "half")}), ("prod", {("long", "long"), ("bfloat", "float")})):
        result = run_reduction_trial(load_reduction_spec(SPECS / f"{stem}.yaml"), header=header, pairs=pairs)
        assert not result.failures, [(c.what, c.detail) for c in result.failures][:3]
        assert len(result.cases) >= len(SHAPES) * len(pairs)


def test_the_cases_cover_what_the_issue_lists():
    labels = " | ".join(s.label() for s in SHAPES)
    for part in ("dims=all", "dims=0 ", "dims=0,2", "keepdim", "transposed", "sliced", "offset", "(4, 0)", "(1, 6, 1)", "(3, 1)",
                 "edges", "64 threads per threadgroup at most", "(2, 2500)", "transposed output", "sliced output"):
        assert part in labels, part


PROD_PAIRS = (("float", "float"), ("half", "half"), ("long", "long"), ("int", "long"), ("char", "long"))
# (what a reviewer fears, the kernel text it replaces, its replacement)
PROD_MUTANTS = [
    ("the padding lanes read threadgroup memory nobody wrote (no identity)",
     "simd_lane_id < nsimd ? shared[simd_lane_id] : Op::identity()", "shared[simd_lane_id]"),
    ("a partial first SIMD-group reduces the partials (#188333: simd_prod<long> reads lanes that take no part)",
     "if (simdgroup_id == 0) {\n    // every lane of the first SIMD-group takes part: those past the last\n"
     "    // partial load the identity (a 64-bit simd_* reads all 32 lanes)\n"
     "    acc = simd_lane_id < nsimd ? shared[simd_lane_id] : Op::identity();",
     "if (tid < nsimd) {\n    acc = shared[simd_lane_id];"),
    ("the barrier between the partials' writes and their reads removed",
     "  threadgroup_barrier(mem_flags::mem_threadgroup);\n", ""),
    ("half accumulated in half", "using TA = opmath_t<TO>;", "using TA = TO;"),
    ("integers accumulated in the input type (no long)", "using TA = opmath_t<TO>;", "using TA = TI;"),
    ("an off-by-one stride", "i += tptg)", "i += tptg + 1)"),
    ("an off-by-one bound", "i < params.reduction_size;", "i <= params.reduction_size;"),
    ("the accumulator starts at 0, not the identity", "TA acc = Op::identity();", "TA acc = TA(0);"),
    ("the output written at the output element's index, its strides ignored (an out= view)",
     "output[output_offset] = static_cast<TO>(acc);", "output[tgid] = static_cast<TO>(acc);"),
    ("the reduced elements' offset ignores a dim", "if (params.input_sizes[dim] != params.output_sizes[dim]) {\n      offset",
     "if (dim > 0 && params.input_sizes[dim] != params.output_sizes[dim]) {\n      offset"),
]


@pytest.mark.parametrize("why,old,new", PROD_MUTANTS, ids=[m[0][:40] for m in PROD_MUTANTS])
def test_a_prod_mutant_fails(why, old, new):
    spec = replace(load_reduction_spec(SPECS / "prod.yaml"), dtypes=PROD_PAIRS)
    from mpsgen.shim.reduction_trial import installed_header
    from mpsgen.shim.trial import import_torch

    text = kernel_source(spec, read_helpers(installed_header(import_torch()).read_text()))
    assert old in text, why
    result = run_reduction_trial(spec, kernel=text.replace(old, new))
    assert result.failures, why


def test_padding_threads_that_return_before_the_barrier_are_reported():
    spec = replace(load_reduction_spec(SPECS / "prod.yaml"), dtypes=(("float", "float"),))
    from mpsgen.shim.reduction_trial import installed_header
    from mpsgen.shim.trial import import_torch

    text = kernel_source(spec, read_helpers(installed_header(import_torch()).read_text()))
    old = "  acc = Op::simd_reduce(acc);\n  threadgroup"
    assert old in text
    with pytest.raises(Refused, match="returned while others wait at threadgroup_barrier"):
        run_reduction_trial(spec, kernel=text.replace(old, "  if (tid >= params.reduction_size) {\n    return;\n  }\n" + old))


VAR_MUTANTS = [
    ("Welford's identity is not count 0", "float3 acc = float3(0.0f, 0.0f, 0.0f);", "float3 acc = float3(0.0f, 0.0f, 1.0f);"),
    ("the SIMD-group's partials never combined",
     "    acc = welford_combine(acc, simd_shuffle_down(acc, shift));\n", ""),
    ("the count kept in the mean's place", "const float mean = acc.x;", "const float mean = acc.z;"),
]


@pytest.mark.parametrize("why,old,new", VAR_MUTANTS, ids=[m[0][:40] for m in VAR_MUTANTS])
def test_a_var_mutant_fails(why, old, new):
    spec = replace(load_reduction_spec(SPECS / "std_var.yaml"), dtypes=(("float", "float"),))
    from mpsgen.shim.reduction_trial import installed_header
    from mpsgen.shim.trial import import_torch

    text = kernel_source(spec, read_helpers(installed_header(import_torch()).read_text()))
    assert old in text, why
    assert run_reduction_trial(spec, kernel=text.replace(old, new)).failures, why


def test_a_barrier_missing_from_the_tree_helper_fails(tmp_path):
    """2.14.1's threadgroup_welford_combine without the barrier of its tree's steps: a thread
    reads a partial another has not written yet (the model runs threads in shuffled order)."""
    from tests.releases import NEWER, release_sources

    sources, why = release_sources(NEWER)
    if sources is None:
        pytest.skip(why)
    text = sources["c10/metal/reduction_utils.h"].read_text()
    loop = re.search(r"for \(stride >>= 1; stride > 0; stride >>= 1\) \{\n\s*::metal::threadgroup_barrier\(::metal::mem_flags::mem_threadgroup\);\n", text)
    assert loop, "2.14.1's threadgroup_welford_combine changed shape"
    broken = tmp_path / "reduction_utils.h"
    broken.write_text(text.replace(loop.group(0), "for (stride >>= 1; stride > 0; stride >>= 1) {\n"))
    spec = replace(load_reduction_spec(SPECS / "std_var.yaml"), dtypes=(("float", "float"),))
    shapes = (Shape((2, 2500), (1,), values="near1"), Shape((3, 300), (1,), limit=128), Shape((4, 200), (1,)))
    assert run_reduction_trial(spec, header=broken, shapes=shapes).failures
    assert not run_reduction_trial(spec, header=sources["c10/metal/reduction_utils.h"], shapes=shapes).failures


def test_threadgroup_arrays_become_shared_storage():
    text = "  threadgroup TA shared[1024 / simdgroup_size];\n  threadgroup float3 w[32];\nvoid f(threadgroup T* data);\n#include <x>\n"
    assert for_model(text) == (
        "  MPSGEN_TG_ARRAY(shared, 1024 / simdgroup_size, TA);\n  MPSGEN_TG_ARRAY(w, 32, float3);\nvoid f(threadgroup T* data);\n\n"
    )


def test_a_host_that_does_not_round_up_to_whole_simd_groups_fails_on_long(monkeypatch):
    """Threads per threadgroup = the reduced extent (no padding threads): the last SIMD-group is
    partial, and simd_prod<long> (shuffles over all 32 lanes) reads lanes that do not exist;
    float's native simd_product reduces the lanes that exist, and stays right."""
    import mpsgen.shim.reduction_trial as trial

    monkeypatch.setattr(trial, "threadgroup_size", lambda n, limit=1024: max(1, min(n, limit)))
    spec = replace(load_reduction_spec(SPECS / "prod.yaml"), dtypes=(("long", "long"), ("float", "float")))
    result = run_reduction_trial(spec)
    failing = {c.pair for c in result.failures}
    assert failing == {"long->long"}, [(c.pair, c.what, c.detail) for c in result.failures][:4]


# the op struct written for a tree's reduction dispatcher (2.14's value kernels run it)
DISPATCH_MUTANTS = [
    ("the first SIMD-group's lanes past the last partial read what nobody wrote (no identity)",
     "simd_reduce(tid < nsimd ? shared[tid] : identity())", "simd_reduce(shared[tid])"),
    ("only the lanes holding a partial reduce them (#188333 again: simd_prod<long> reads every lane)",
     "if (tid < simdgroup_size) {", "if (tid < nsimd) {"),
    ("the barrier between the partials' writes and their reads removed",
     "    }\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n    if (tid < simdgroup_size) {", "    }\n    if (tid < simdgroup_size) {"),
    ("the identity of a sum", "return static_cast<T>(1);", "return static_cast<T>(0);"),
]


@pytest.mark.parametrize("why,old,new", DISPATCH_MUTANTS, ids=[m[0][:40] for m in DISPATCH_MUTANTS])
def test_a_mutant_of_the_dispatcher_op_fails_in_the_dispatchers_kernels(why, old, new):
    from mpsgen.codegen.reduction_dispatch import op_struct

    spec = replace(load_reduction_spec(SPECS / "prod.yaml"), dtypes=(("long", "long"), ("int", "long"), ("float", "float")))
    text = op_struct(spec)
    assert old in text, why
    result = run_reduction_trial(spec, dispatch_op=text.replace(old, new))
    assert result.failures and all(c.route == "dispatcher" for c in result.failures), why


def test_try_prod_runs_the_dispatcher_op_too_and_var_does_not(run):
    res = run("try", "prod", "--dtypes", "int64,float16")
    assert res.exit_code == 0, res.output
    rows = [ln.split(":")[0] for ln in res.output.splitlines() if "dispatcher's value kernels" in ln]
    # (a half output goes through the float kernels in the dispatcher's tree: its pair is half->float's)
    assert sorted(rows) == [f"ProdReduceOp in the dispatcher's value kernels, {p}" for p in ("half->float", "long->long")]
    res = run("try", "var", "--dtypes", "float32")
    assert res.exit_code == 0 and "dispatcher" not in res.output


def test_try_var_runs_complex_inputs_through_their_parts(run, tmp_path):
    res = run("try", "var", "--dtypes", "float32")
    assert res.exit_code == 0, res.output
    row = next(ln for ln in res.output.splitlines() if "complex64 input's real and imaginary parts" in ln)
    assert row.startswith("std_var_reduction_general_float_float on a complex64") and row.endswith("; 0 failing")
    assert int(row.split(": ")[1].split(" ")[0]) >= 40
    # a spec without `complex: parts` is not run on complex inputs
    mine = tmp_path / "mine.yaml"
    mine.write_text((SPECS / "std_var.yaml").read_text().replace("complex: parts\n", ""))
    res = run("try", mine, "--dtypes", "float32")
    assert res.exit_code == 0 and "complex64" not in res.output



def test_a_cached_run_compares_without_torch(monkeypatch, tmp_path):
    """The cases (programs' inputs, torch's outputs) are made once and kept in try's cache: a
    later run, a mutant's too, never imports torch; another seed makes its own."""
    import mpsgen.shim.reduction_trial as trial

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    spec = replace(load_reduction_spec(SPECS / "prod.yaml"), dtypes=(("int", "long"), ("long", "long")))
    shapes = SHAPES[:4]
    first = run_reduction_trial(spec, shapes=shapes)
    assert not first.failures and first.cases

    def no_torch():
        raise AssertionError("torch imported")

    monkeypatch.setattr(trial, "import_torch", no_torch)
    again = run_reduction_trial(spec, shapes=shapes)
    assert [(c.pair, c.what, c.ok, c.route) for c in again.cases] == [(c.pair, c.what, c.ok, c.route) for c in first.cases]
    text = kernel_source(spec, read_helpers(trial.installed_header().read_text()))
    assert run_reduction_trial(spec, shapes=shapes, kernel=text.replace("TA acc = Op::identity();", "TA acc = TA(0);")).failures
    with pytest.raises(AssertionError, match="torch imported"):
        run_reduction_trial(spec, shapes=shapes, seed=1)
