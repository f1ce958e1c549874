"""MPS017/MPS018: the pipeline names host code asks for and the host_names .metal files
register, read in the forms upstream writes them (mpsgen's own fixtures in those shapes), and
a mismatch injected into the pair new-kernel writes found on both sides."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.check import run_check
from mpsgen.tree import PytorchTree
from mpsgen.tree.pipelines import host_names, may_match, pipeline_requests

HOST = r'''
#include <ATen/native/mps/OperationUtils.h>
namespace at::native {
static void scatter_rows(const Tensor& out, const Tensor& src) {
  auto pso = lib.getPipelineStateForFunc(fmt::format("scatter_rows_{}", scalarToMetalTypeString(src)));
}
static void gather_cols(const Tensor& out, const Tensor& src, bool wide) {
  const auto name = fmt::format("gather_cols_{}_{}", wide ? "long" : "int", scalarToMetalTypeString(src));
  id<MTLComputePipelineState> pso = lib.getPipelineStateForFunc(name);
}
static void fill_ones(const Tensor& out) {
  auto pso = lib.getPipelineStateForFunc("fill_ones_" + scalarToMetalTypeString(out));
  auto other = lib.getPipelineStateForFunc("fill_ones_float");
  // lib.getPipelineStateForFunc("commented_out_{}")
}
} // namespace at::native
'''

KERNELS = r'''
#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void scatter_rows(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {}

#define REGISTER_SCATTER_ROWS(DTYPE)                   \
  template [[host_name("scatter_rows_" #DTYPE)]] kernel void \
  scatter_rows<DTYPE>(device DTYPE * out [[buffer(0)]], uint i [[thread_position_in_grid]])

REGISTER_SCATTER_ROWS(float);
REGISTER_SCATTER_ROWS(half);

#define REGISTER_GATHER(T, I)                             \
  template                                                \
  [[host_name("gather_cols_" #I "_" #T)]] kernel void     \
  gather_cols<T, I>(device T*, constant I*, uint)
#define REGISTER_GATHER_ALL(T) \
  REGISTER_GATHER(T, int);     \
  REGISTER_GATHER(T, long)
REGISTER_GATHER_ALL(float);

template [[host_name("fill_ones_float")]] kernel void fill_ones<float>(device float*, uint);
'''


def parts(items):
    return sorted("".join(p if p is not None else "{}" for p in i.parts) for i in items)


def test_requests_are_read_in_every_form_upstream_writes():
    found = pipeline_requests("operations/X.mm", HOST)
    assert parts(found) == ["fill_ones_float", "fill_ones_{}", "gather_cols_{}_{}", "scatter_rows_{}"]
    by_name = {"".join(p or "{}" for p in r.parts): r for r in found}
    assert by_name["gather_cols_{}_{}"].dtype_hole == 1  # the second field is the dtype
    assert by_name["scatter_rows_{}"].line == 5


def test_inline_shader_files_are_left_out():
    text = 'static MetalShaderLibrary lib(R"METAL(kernel void k() {})METAL");\nlib.getPipelineStateForFunc("k");\n'
    assert pipeline_requests("operations/Old.mm", text) is None


def test_host_names_are_expanded_per_instantiation_or_kept_as_patterns():
    names = host_names("kernels/X.metal", KERNELS)
    shown = sorted(n.shown for n in names)
    assert "scatter_rows_float" in shown and "scatter_rows_half" in shown
    assert "fill_ones_float" in shown
    # instantiated through another macro: the names its instantiations make
    assert "gather_cols_int_float" in shown and "gather_cols_long_float" in shown
    assert not [s for s in shown if "*" in s]


def test_matching_is_permissive_where_both_sides_are_computed():
    assert may_match(("scatter_rows_", None), ("scatter_rows_float",))
    assert not may_match(("scatter_row_", None), ("scatter_rows_float",))
    assert may_match(("gather_cols_", None, "_", None), ("gather_cols_", None, "_", None))
    assert may_match(("gather_cols_", None, "_float"), ("gather_cols_", None, "_", None))


def new_kernel_pair(real_tree: Path, run) -> tuple[Path, Path]:
    assert run("new-kernel", "_pdist_forward", "--root", real_tree, "--dtypes", "float,half,bfloat").exit_code == 0
    return (real_tree / "aten/src/ATen/native/mps/operations/Distance.mm",
            real_tree / "aten/src/ATen/native/mps/kernels/Distance.metal")


def findings(root: Path, codes=("MPS017", "MPS018")):
    result = run_check(PytorchTree.locate(root), codes=frozenset(codes))
    return sorted((f.code, f.path.rpartition("/")[2], f.message) for f in result.findings)


def test_the_pair_new_kernel_writes_is_clean(real_tree: Path, run):
    new_kernel_pair(real_tree, run)
    assert findings(real_tree) == []


def test_a_typo_in_the_host_name_is_found_on_both_sides(real_tree: Path, run):
    mm, _metal = new_kernel_pair(real_tree, run)
    mm.write_text(mm.read_text().replace('fmt::format("pdist_forward_{}"', 'fmt::format("pdist_foward_{}"'))
    got = findings(real_tree)
    assert ("MPS017", "Distance.mm", "asks the shader library for `pdist_foward_{}`, which no kernels/*.metal "
            "registers with [[host_name(...)]]") in got
    assert sum(code == "MPS018" for code, _p, _m in got) == 3  # each dtype's kernel is now asked for by nobody


def test_a_typo_in_the_registration_is_found(real_tree: Path, run):
    _mm, metal = new_kernel_pair(real_tree, run)
    metal.write_text(metal.read_text().replace('[[host_name("pdist_forward_" #DTYPE)]]', '[[host_name("pdist_forwad_" #DTYPE)]]'))
    got = findings(real_tree)
    assert [c for c, p, _m in got if p == "Distance.mm"] == ["MPS017"]
    assert sorted(m for c, p, m in got if c == "MPS018") == [
        f"registers `pdist_forwad_{d}`, which no host code asks for (operations/*.mm's getPipelineStateForFunc names)"
        for d in ("bfloat", "float", "half")
    ]


def test_a_dtype_the_host_accepts_but_the_shader_lacks_is_found(real_tree: Path, run):
    _mm, metal = new_kernel_pair(real_tree, run)
    metal.write_text(metal.read_text().replace("REGISTER_PDIST_FORWARD_OP(half);\n", ""))
    assert findings(real_tree) == [
        ("MPS017", "Distance.mm", "accepts half (its dtype check) but no kernels/*.metal registers `pdist_forward_half`")
    ]


def test_a_registration_for_a_dtype_the_host_refuses_is_found(real_tree: Path, run):
    _mm, metal = new_kernel_pair(real_tree, run)
    metal.write_text(metal.read_text().replace("REGISTER_PDIST_FORWARD_OP(half);\n", "REGISTER_PDIST_FORWARD_OP(half);\nREGISTER_PDIST_FORWARD_OP(int);\n"))
    got = findings(real_tree)
    assert len(got) == 1 and got[0][:2] == ("MPS018", "Distance.metal")
    assert got[0][2].startswith("registers `pdist_forward_int`, but the host asking for `pdist_forward_{}` (Distance.mm:")
    assert got[0][2].endswith("accepts only float, half, bfloat: nothing runs it")


@pytest.mark.parametrize(
    "host,expected",
    [
        # built up after its assignment: not read (a wildcard, so no registration is called unrequested)
        ('std::string k = "foo_";\nk += scalarToMetalTypeString(t);\nauto p = lib.getPipelineStateForFunc(k);\n', ["{}"]),
        # an equality test is no assignment: the name read is the one assigned
        ('const auto k = fmt::format("pdist_fwd_{}", scalarToMetalTypeString(t));\nTORCH_CHECK(!(k == ""));\n'
         "auto p = lib.getPipelineStateForFunc(k);\n", ["pdist_fwd_{}"]),
        ('auto f = lib.getKernelFunction(fmt::format("bar_{}", scalarToMetalTypeString(t)));\n', ["bar_{}"]),
    ],
)
def test_request_forms_that_are_easy_to_misread(host, expected):
    assert parts(pipeline_requests("operations/Y.mm", host)) == expected


def test_a_library_of_a_named_source_string_is_left_out():
    text = 'static const char* SRC = R"(kernel void qux() {})";\nstatic MetalShaderLibrary lib(SRC);\nlib.getPipelineStateForFunc("qux_float");\n'
    assert pipeline_requests("operations/Q.mm", text) is None


def test_a_plain_kernel_registers_its_own_name_and_a_template_does_not():
    text = "kernel void eig_step(device float* a [[buffer(0)]]) {}\ntemplate <typename T>\nkernel void scaled(device T* a) {}\n"
    assert sorted(n.shown for n in host_names("kernels/E.metal", text)) == ["eig_step"]


def test_a_macro_called_directly_and_by_another_macro_makes_the_names_of_both():
    text = (
        '#define REG(T) template [[host_name("index_select_" #T)]] kernel void index_select<T>(device T*)\n'
        "#define REG_ALL(T) REG(T)\n"
        "REG(float);\nREG_ALL(half);\n"
    )
    assert sorted(n.shown for n in host_names("kernels/I.metal", text)) == ["index_select_float", "index_select_half"]


def test_a_string_constructed_from_a_literal_is_read():
    host = 'auto k = std::string("gather_") + scalarToMetalTypeString(t);\nauto p = lib.getPipelineStateForFunc(k);\n'
    assert parts(pipeline_requests("operations/G.mm", host)) == ["gather_{}"]


def test_names_registered_only_through_nested_macros_match_requests_built_from_parts():
    """As upstream's scatter/gather kernels: a macro of macros instantiated per dtype, a reduce
    operation stringized into the name, and host code building the name from parts."""
    metal = (
        '#define REG_GATHER(T, IT) template [[host_name("gather_" #T "_" #IT)]] kernel void g<T, IT>(device T*)\n'
        '#define REG_REDUCE(OP, T, IT) template [[host_name("scatter_" #OP "_" #T "_" #IT)]] kernel void r<T, IT>(device T*)\n'
        "#define REG_ALL(T, IT) REG_GATHER(T, IT) REG_REDUCE(amax, T, IT)\n"
        "#define REG_INDEX_TYPES(T) REG_ALL(T, int) REG_ALL(T, long)\n"
        "REG_INDEX_TYPES(float);\n"
    )
    host = (
        'auto a = std::string("gather_") + type_string(self) + "_" + type_string(index);\nlib.getPipelineStateForFunc(a);\n'
        'auto b = std::string("scatter_") + mode + "_" + type_string(src) + "_" + type_string(index);\nlib.getPipelineStateForFunc(b);\n'
    )
    names = host_names("kernels/SG.metal", metal)
    assert sorted(n.shown for n in names) == ["gather_float_int", "gather_float_long", "scatter_amax_float_int", "scatter_amax_float_long"]
    for r in pipeline_requests("operations/SG.mm", host):
        assert any(may_match(r.parts, n.parts) for n in names), r.shown


def test_a_template_with_attributes_is_no_plain_kernel():
    """2.14's ReduceOps.metal puts `[[max_total_threads_per_threadgroup(N)]]` between a kernel
    template's `template <...>` and `kernel void`: registered through host_name, not by its name."""
    from mpsgen.tree.pipelines import host_names

    text = (
        "template <typename T>\n[[max_total_threads_per_threadgroup(1024)]]\nkernel void tmpl(device T* x) {}\n"
        "[[max_total_threads_per_threadgroup(64)]]\nkernel void plain_one(device float* x) {}\n"
    )
    assert [n.parts for n in host_names("k.metal", text)] == [("plain_one",)]
