"""Check the prod_reduction_general kernel of prod_stub on the GPU before building PyTorch:
torch.mps.compile_shader JIT-compiles the kernel as the change writes it into
kernels/ReduceOps.metal (its params struct from kernels/ReduceOps.h inlined), and each case is
dispatched as the host function prod_mps_kernel dispatches it: one threadgroup per output
element, whole SIMD-groups of threads (at most 1024) striding over the reduced elements, the
params filled from the input's and outputs' sizes and strides. The results are compared with
torch's CPU op (prod) for every registered dtype pair on: all dims, one dim,
several dims, keepdim, transposed, sliced and offset inputs, size-1 dims, reduced extents that
leave a SIMD-group partial or exceed a threadgroup, NaN and inf, integer overflow, and empty
reductions (those the host fills itself, never dispatching the kernel).

Written by `mpsgen migrate-from-mpsgraph prod --allow-dtype-loss --with-test`. Run it on a Mac:

    python -m pytest test_prod_reduction_shader.py -v

The kernel includes c10/metal/reduction_utils.h, which compile_shader takes from the installed
torch: run it with a torch built from the checkout's base commit (the kernel was written
against the checkout's header). test_ops_on_mps_match_cpu runs the ops themselves on MPS: with
MPSGraph before the change is built, with the new kernel after. Where MPS is absent every test
is skipped.
"""

import math
import struct
import warnings

import pytest
import torch

pytestmark = pytest.mark.skipif(
    not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()),
    reason="needs an Apple GPU (torch.backends.mps.is_available())",
)

SOURCE = r"""
#include <c10/metal/common.h>

// prod_stub: where output element `tgid` and its reduced elements are (32-bit on purpose:
// the host refuses tensors of 2^32 elements or more), and the stub's arguments
template <unsigned N = 8>
struct ProdReductionParams {
  uint32_t reduction_size;
  uint32_t ndim;
  ::c10::metal::array<uint32_t, N> input_sizes;
  ::c10::metal::array<uint32_t, N> input_strides;
  ::c10::metal::array<uint32_t, N> output_sizes;
  ::c10::metal::array<uint32_t, N> output_strides;
};

#include <c10/metal/reduction_utils.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>

using namespace metal;
using namespace c10::metal;

// prod_stub's op: identity, combine, and the tree's SIMD-group reduction
template <typename T>
struct ProdReduceOp {
  static inline T identity() {
    return static_cast<T>(1);
  }
  static inline T combine(T a, T b) {
    return a * b;
  }
  static inline T simd_reduce(T val) {
    return c10::metal::simd_prod(val);
  }
};

// The offset of the `element`-th reduced element from the start of its output element's
// (the reduced dims are those whose input size differs from the output's)
inline uint32_t prod_reduced_offset(
    uint32_t element,
    constant ProdReductionParams<>& params) {
  uint32_t offset = 0;
  for (int32_t dim = params.ndim - 1; dim >= 0; dim--) {
    if (params.input_sizes[dim] != params.output_sizes[dim]) {
      offset += (element % params.input_sizes[dim]) * params.input_strides[dim];
      element /= params.input_sizes[dim];
    }
  }
  return offset;
}

// One threadgroup per output element: threads stride over the reduced elements
// (padding threads keep the identity), then a SIMD-group and a threadgroup
// reduction; thread 0 writes the output.
template <typename TI, typename TO>
[[max_total_threads_per_threadgroup(1024)]] kernel void prod_reduction_general(
    constant TI* input [[buffer(0)]],
    device TO* output [[buffer(1)]],
    constant ProdReductionParams<>& params [[buffer(2)]],
    uint tid [[thread_index_in_threadgroup]],
    uint tptg [[threads_per_threadgroup]],
    uint tgid [[threadgroup_position_in_grid]],
    uint simd_lane_id [[thread_index_in_simdgroup]],
    uint simdgroup_id [[simdgroup_index_in_threadgroup]]) {
  uint32_t input_base = 0;
  uint32_t output_offset = 0;
  uint32_t index = tgid;
  for (int32_t dim = params.ndim - 1; dim >= 0; dim--) {
    if (params.input_sizes[dim] == params.output_sizes[dim]) {
      const uint32_t i = index % params.output_sizes[dim];
      index /= params.output_sizes[dim];
      input_base += i * params.input_strides[dim];
      output_offset += i * params.output_strides[dim];
    }
  }
  const uint32_t nsimd = (tptg + simdgroup_size - 1) / simdgroup_size;
  using TA = opmath_t<TO>;
  using Op = ProdReduceOp<TA>;
  TA acc = Op::identity();
  for (uint32_t i = tid; i < params.reduction_size; i += tptg) {
    const TA x = static_cast<TA>(
        input[input_base + prod_reduced_offset(i, params)]);
    acc = Op::combine(acc, x);
  }
  acc = Op::simd_reduce(acc);
  threadgroup TA shared[1024 / simdgroup_size];
  if (simd_lane_id == 0) {
    shared[simdgroup_id] = acc;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simdgroup_id == 0) {
    // every lane of the first SIMD-group takes part: those past the last
    // partial load the identity (a 64-bit simd_* reads all 32 lanes)
    acc = simd_lane_id < nsimd ? shared[simd_lane_id] : Op::identity();
    acc = Op::simd_reduce(acc);
  }
  if (tid == 0) {
    output[output_offset] = static_cast<TO>(acc);
  }
}

#define REGISTER_PROD_REDUCTION(TI, TO)                                                  \
  template [[host_name("prod_reduction_general_" #TI "_" #TO)]] kernel void \
  prod_reduction_general<TI, TO>(                                      \
      constant TI * input [[buffer(0)]],                                   \
      device TO * output [[buffer(1)]],                                  \
      constant ProdReductionParams<> & params [[buffer(2)]],     \
      uint tid [[thread_index_in_threadgroup]],                            \
      uint tptg [[threads_per_threadgroup]],                               \
      uint tgid [[threadgroup_position_in_grid]],                          \
      uint simd_lane_id [[thread_index_in_simdgroup]],                     \
      uint simdgroup_id [[simdgroup_index_in_threadgroup]])

REGISTER_PROD_REDUCTION(float, float);
REGISTER_PROD_REDUCTION(half, half);
REGISTER_PROD_REDUCTION(bfloat, bfloat);
REGISTER_PROD_REDUCTION(long, long);

"""

KERNEL = "prod_reduction_general"
# the (input, output) Metal types the kernel is registered for, as KERNEL_<input>_<output>
PAIRS = [['float', 'float'], ['half', 'half'], ['bfloat', 'bfloat'], ['long', 'long']]
TORCH_DTYPES = {
    "float": torch.float32, "half": torch.float16, "bfloat": torch.bfloat16, "long": torch.int64, "int": torch.int32,
    "short": torch.int16, "char": torch.int8, "uchar": torch.uint8, "bool": torch.bool,
}
MAX_DIMS = 8
OUTPUTS = 1  # the kernel's output buffers (a call with fewer binds its first output in their place)
# the stub's arguments the params struct holds after the sizes and strides: (name, struct format)
PARAMS = []
MAX_THREADS = 1024  # the host's threadgroup size limit
EMPTY = 1  # what the shared CPU path fills when nothing is reduced (no dispatch)
# the torch calls reaching prod_stub: (function, keyword arguments, the stub's arguments
# they pass, "one": the function takes one dim, several are reduced as one flattened dim)
CALLS = [['prod', {}, {}, 'one']]
# (sizes, reduced dims or None for all, layout, values, keepdim)
SHAPES = [
    ((5, 7), None, "contiguous", "random", False),
    ((5, 7), (0,), "contiguous", "random", False),
    ((5, 7), (1,), "contiguous", "random", True),
    ((3, 4, 5), (0, 2), "contiguous", "random", False),
    ((3, 4, 5), (1, 2), "contiguous", "random", True),
    ((6, 5), (1,), "transposed", "random", False),
    ((6, 5), (0,), "sliced", "random", False),
    ((4, 9), (1,), "offset", "random", False),
    ((1, 6, 1), (1,), "contiguous", "random", False),
    ((3, 1), (1,), "contiguous", "random", False),
    ((3, 33), (1,), "contiguous", "random", False),  # the second SIMD-group holds one thread's element
    ((2, 2500), (1,), "contiguous", "near1", False),  # more elements than threads
    ((5, 7), None, "contiguous", "edges", False),  # NaN, inf, 0, integer limits
    ((4, 40), (1,), "contiguous", "edges", False),
    ((4, 0), (1,), "contiguous", "random", False),  # an empty reduced dim: the host fills EMPTY
    ((0, 3), (1,), "contiguous", "random", False),  # no output element
]


def _values(sizes, dtype, kind, gen):
    if dtype == torch.bool:
        return torch.rand(sizes, generator=gen) < (0.9 if kind != "edges" else 0.5)
    if dtype.is_floating_point:
        if kind == "near1":
            return (1 + 0.01 * torch.randn(sizes, generator=gen)).to(dtype)
        if kind == "edges":
            pool = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, float("nan"), float("inf"), -float("inf"), 1e30])
            return pool[torch.randint(0, len(pool), sizes, generator=gen)].to(dtype)
        return torch.randn(sizes, generator=gen).to(dtype)
    info = torch.iinfo(dtype)
    if kind == "edges":
        pool = torch.tensor([1, 2, 7, info.max, info.min, info.max - 1, 0] + ([-1, -3] if info.min < 0 else []))
        return pool[torch.randint(0, len(pool), sizes, generator=gen)].to(dtype)
    if kind == "near1":  # odd factors: a long product wraps around but never reaches 0
        v = torch.randint(0, 5, sizes, generator=gen) * 2 + 1
        return (v * (torch.where(torch.rand(sizes, generator=gen) < 0.5, -1, 1) if info.min < 0 else 1)).to(dtype)
    v = torch.randint(1 if info.min == 0 else -9, 10, sizes, generator=gen)
    return torch.where(v == 0, torch.ones_like(v), v).to(dtype)


def _laid_out(sizes, layout, dtype, kind, gen):
    if layout == "transposed":
        return _values((*sizes[:-2], sizes[-1], sizes[-2]), dtype, kind, gen).transpose(-1, -2)
    if layout == "sliced":
        return _values((sizes[0] * 2, sizes[1] + 1, *sizes[2:]), dtype, kind, gen)[::2, 1:]
    if layout == "offset":
        return _values((math.prod(sizes) + 3,), dtype, kind, gen)[3:].view(sizes)
    return _values(sizes, dtype, kind, gen)


def _reference(call, x, dims, keepdim, out_dtype):
    """torch's CPU result(s) in the keepdim shape: half and bfloat computed in float32 and
    rounded (the kernel accumulates in float)."""
    fn_name, kwargs, _params, takes = call
    fn, kwargs = getattr(torch, fn_name), dict(kwargs)
    low = out_dtype in (torch.float16, torch.bfloat16)
    if low:
        x = x.float()
    if out_dtype.is_floating_point and out_dtype != x.dtype and not low:
        kwargs["dtype"] = out_dtype
    every = tuple(range(x.dim()))
    with warnings.catch_warnings():  # (a correction past the count: torch warns)
        warnings.simplefilter("ignore")
        if takes == "one" and dims == every:
            result = fn(x, **kwargs)
        elif takes == "one" and len(dims) == 1:
            result = fn(x, dims[0], keepdim=keepdim, **kwargs)
        elif takes == "one":
            kept = [d for d in every if d not in dims]
            result = fn(x.permute(*kept, *dims).reshape(*[x.shape[d] for d in kept], -1), -1, **kwargs)
        else:
            result = fn(x, dim=list(dims), keepdim=keepdim, **kwargs)
    results = list(result) if isinstance(result, tuple) else [result]
    shape = [1 if d in dims else n for d, n in enumerate(x.shape)]
    return [r.reshape(shape).to(out_dtype) for r in results]


def _assert_close(actual, expected, reduced):
    if expected.dtype.is_floating_point:
        rtol = {torch.float32: 1.3e-6, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}[expected.dtype]
        # the kernel sums in another order than the CPU: an allowance growing with the extent
        torch.testing.assert_close(actual.double(), expected.double(), rtol=4 * rtol + 1.2e-7 * max(reduced, 1),
                                   atol=4e-5, equal_nan=True)
    else:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def pack_params(x, outputs, values, reduced, noutputs):
    """The params struct's bytes as the host fills it (natural alignment, as C and Metal lay it
    out): sizes and strides in elements, a size-1 dim's stride 0, the stub's arguments."""
    strides = lambda t: [0 if n == 1 else s for n, s in zip(t.shape, t.stride())]  # noqa: E731
    pad = lambda v: list(v) + [0] * (MAX_DIMS - len(v))  # noqa: E731
    fields = [reduced, x.dim(), *pad(x.shape), *pad(strides(x)), *pad(outputs[0].shape)]
    fmt = "@II" + f"{MAX_DIMS}I" * (3 + OUTPUTS)
    for out in outputs:
        fields += pad(strides(out))
    if OUTPUTS > 1:
        fmt += "I"
        fields.append(noutputs)
    for name, code in PARAMS:
        fmt += code
        fields.append(values[name])
    size = struct.calcsize(fmt)
    size += -size % max(struct.calcsize("@" + c) for c in fmt[1:] if c.isalpha())
    return torch.frombuffer(bytearray(struct.pack(fmt, *fields).ljust(size, b"\0")), dtype=torch.uint8)


def threadgroup_size(reduced):
    """Threads per threadgroup as the host picks them: whole SIMD-groups, one element each, at most MAX_THREADS."""
    return min(MAX_THREADS, (reduced + 31) // 32 * 32)


@pytest.fixture(scope="module")
def lib():
    try:
        return torch.mps.compile_shader(SOURCE)
    except Exception as exc:  # (the installed torch's c10/metal headers are not the checkout's?)
        raise AssertionError(
            f"the kernel does not compile against torch {torch.__version__}'s c10/metal headers "
            f"({torch.__file__}); build torch from the checkout's base commit and run again.\n{exc}"
        ) from None


def test_every_pair_is_registered(lib):
    names = set(dir(lib))
    assert {f"{KERNEL}_{ti}_{to}" for ti, to in PAIRS} <= names, sorted(names)


CASES = [(p, c, s) for p in range(len(PAIRS)) for c in range(len(CALLS)) for s in range(len(SHAPES))]


@pytest.mark.parametrize(
    "pair,call,shape", CASES, ids=[f"{'-'.join(PAIRS[p])}-{CALLS[c][0]}-shape{s}" for p, c, s in CASES]
)
def test_prod_reduction_general_matches_cpu(lib, pair, call, shape):
    ti, to = PAIRS[pair]
    t_in, t_out = TORCH_DTYPES[ti], TORCH_DTYPES[to]
    sizes, dims, layout, kind, keepdim = SHAPES[shape]
    gen = torch.Generator().manual_seed(pair * 1000 + call * 100 + shape)
    x = _laid_out(sizes, layout, t_in, kind, gen)
    dims = tuple(range(x.dim())) if dims is None else dims
    expected = _reference(CALLS[call], x, dims, keepdim, t_out)
    out_sizes = [1 if d in dims else n for d, n in enumerate(x.shape)]
    reduced = math.prod(x.shape[d] for d in dims)
    if math.prod(out_sizes) == 0:
        return  # nothing to write
    if reduced == 0:  # the host fills the output(s) and dispatches nothing: the CPU must agree
        for e in expected:
            _assert_close(torch.full(out_sizes, EMPTY, dtype=t_out), e, 1)
        return
    # the input's storage on the GPU, viewed as x (mtl_setBuffer binds it at its offset)
    whole = x.as_strided((x.untyped_storage().nbytes() // x.element_size(),), (1,), 0).to("mps")
    x_mps = whole.as_strided(x.shape, x.stride(), x.storage_offset())
    outputs = [torch.full(out_sizes, 7, dtype=t_out, device="mps") for _ in expected]
    bound = outputs + [outputs[0]] * (OUTPUTS - len(outputs))  # (var/std: the first stands in for the second)
    params = pack_params(x, bound, CALLS[call][2], reduced, len(outputs)).to("mps")
    threads = threadgroup_size(reduced)
    kernel = getattr(lib, f"{KERNEL}_{ti}_{to}")
    assert kernel.max_threads_per_threadgroup >= threads, (
        f"the host dispatches {threads} threads per threadgroup; the pipeline allows {kernel.max_threads_per_threadgroup}"
    )
    kernel(x_mps, *bound, params, threads=math.prod(out_sizes) * threads, group_size=threads)
    for got, e in zip(outputs, expected):
        _assert_close(got.cpu(), e, reduced)


# the ops themselves on MPS (MPSGraph before the change is built, the kernel after): all dims,
# one dim with keepdim, several dims, a transposed input, an empty reduced dim, NaN and inf
OP_DTYPES = ['float', 'half', 'bfloat', 'long', 'int', 'short', 'char', 'uchar', 'bool']  # every input type the ops take on MPS (an unregistered one is cast first)
OP_CASES = [(c, d) for c in range(len(CALLS)) for d in OP_DTYPES]


@pytest.mark.parametrize("call,dtype", OP_CASES, ids=[f"{CALLS[c][0]}-{d}" for c, d in OP_CASES])
def test_ops_on_mps_match_cpu(call, dtype):
    fn_name, kwargs, _params, takes = CALLS[call]
    fn = getattr(torch, fn_name)
    t_in = TORCH_DTYPES[dtype]
    gen = torch.Generator().manual_seed(call * 100 + len(dtype))
    cases = [
        (_values((6, 35), t_in, "random", gen), None, False),
        (_values((6, 35), t_in, "random", gen), 1, True),
        (_values((35, 6), t_in, "random", gen).t(), 0, False),
        (_values((5, 0), t_in, "random", gen), 1, False),
        (_values((4, 40), t_in, "edges", gen), 1, False),
    ]
    if takes != "one":
        cases.append((_values((3, 4, 5), t_in, "random", gen), [0, 2], False))
    for x, dim, keepdim in cases:
        args = () if dim is None else (dim,)
        extra = {} if dim is None else {"keepdim": keepdim}
        low = t_in in (torch.float16, torch.bfloat16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = fn(x.float() if low else x, *args, **extra, **kwargs)
            actual = fn(x.to("mps"), *args, **extra, **kwargs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        actual = actual if isinstance(actual, tuple) else (actual,)
        for a, e in zip(actual, expected):
            a = a.cpu()
            _assert_close(a, e.to(a.dtype), x.numel() // max(a.numel(), 1))
