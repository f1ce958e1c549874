"""The ``host_name`` registrations a .metal file makes through macros that call macros, as
2.14.1's ReduceOps.metal writes them (a prefix or name handed down as a string argument,
stringized dtypes, a variadic instantiation helper taking the whole name): read as the names
they make, not as one pattern with holes that any request would match. Our own text, in that shape."""

from __future__ import annotations

from mpsgen.tree.pipelines import host_names, pipeline_requests

NESTED = """\
#define ONE(TI, TO, HEAD)                                       \\
  template [[host_name(HEAD "reduce_" #TI "_" #TO)]] kernel void \\
  reduce<TI, TO>(constant TI * x [[buffer(0)]], device TO * y [[buffer(1)]]);

#define BOTH(T, HEAD)   \\
  ONE(T, T, HEAD)       \\
  ONE(T, float, HEAD)
#define SUMS(T) BOTH(T, "sum_")

#define INSTANTIATE(name, func, ...) \\
  template [[host_name(              \\
      name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>
#define ARG(TI, NAME, OP)                                          \\
  INSTANTIATE(NAME "_reduce_" #TI "_long", arg_reduce, OP, TI);    \\
  INSTANTIATE(                                                     \\
      NAME "_reduce_inner_" #TI "_long", arg_reduce_inner, OP, TI);

#define NEVER_USED(T) \\
  template [[host_name("never_" #T)]] kernel void reduce<T, T>(constant T * x [[buffer(0)]], device T * y [[buffer(1)]]);

SUMS(half);
SUMS(int);
BOTH(bfloat, "prod_");
ARG(float, "argmax", MaxOp)
ARG(half, "argmin", MinOp)
"""


def test_names_made_through_macros_that_call_macros():
    names = {n.shown for n in host_names("kernels/Nested.metal", NESTED)}
    assert names == {
        "sum_reduce_half_half", "sum_reduce_half_float", "sum_reduce_int_int", "sum_reduce_int_float",
        "prod_reduce_bfloat_bfloat", "prod_reduce_bfloat_float",
        "argmax_reduce_float_long", "argmax_reduce_inner_float_long",
        "argmin_reduce_half_long", "argmin_reduce_inner_half_long",
    }  # (NEVER_USED makes nothing: no line instantiates it)


def test_a_macro_that_some_pasting_could_call_stays_a_pattern():
    text = NESTED + "#define CALL(M, T) M##_USED(T)\nCALL(NEVER, float);\n"
    assert "never_*" in {n.shown for n in host_names("kernels/Nested.metal", text)}


def test_a_request_keeps_the_expression_of_each_hole():
    host = """\
static void f(TensorIterator& iter, const Opts& opts) {
  auto kname = fmt::format("{}reduction_{}_{}", opts.prefix, "inner", scalarToMetalTypeString(iter.input(0)));
  auto ps = lib.getPipelineStateForFunc(kname);
  auto other = lib.getPipelineStateForFunc(std::string("x_") + variant + "_" + scalarToMetalTypeString(t));
}
"""
    first, second = pipeline_requests("operations/F.mm", host)
    assert first.parts == (None, "reduction_inner_", None) and first.holes == ("opts.prefix", "scalarToMetalTypeString(iter.input(0))")
    assert first.dtype_hole == 1
    assert second.parts == ("x_", None, "_", None) and second.holes == ("variant", "scalarToMetalTypeString(t)")


def test_a_macro_handed_to_another_macro_stays_a_pattern_too():
    text = NESTED + "#define APPLY(M, T) M(T)\nNEVER_USED(float);\nAPPLY(NEVER_USED, half);\n"
    names = {n.shown for n in host_names("kernels/Nested.metal", text)}
    assert {"never_float", "never_*"} <= names  # (never_half is made too: not read, so a hole)
