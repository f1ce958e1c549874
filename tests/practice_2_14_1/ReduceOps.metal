// mpsgen practice tree (torch 2.14.1's shape): value reductions registered per op prefix for the
// host's reduction_dispatch_mps in ReduceOps.mm, written for mpsgen's own tests.
#include <ATen/native/mps/kernels/ReduceOps.h>
#include <c10/metal/reduction_utils.h>
#include <c10/metal/utils.h>
#include <metal_array>
#include <metal_stdlib>

using namespace metal;
using namespace c10::metal;

// How an input element enters the accumulator
struct IdentityLoad {
  template <typename TA, typename TI>
  static inline TA load(TI v) {
    return static_cast<TA>(v);
  }
};

// Where the `element`-th reduced element of output element `group` lies
static uint32_t reduced_element_offset(
    uint32_t element,
    uint32_t group,
    constant NormParams<>& params) {
  uint32_t offset = 0;
  for (int32_t dim = params.ndim - 1; dim >= 0; dim--) {
    const uint32_t size = params.input_sizes[dim];
    const bool kept = size == params.output_sizes[dim];
    uint32_t& index = kept ? group : element;
    offset += (index % size) * params.input_strides[dim];
    index /= size;
  }
  return offset;
}

// One threadgroup per output element (the generic path)
template <
    template <typename> class OpFn,
    typename Load,
    typename TI,
    typename TO>
[[max_total_threads_per_threadgroup(MAX_THREADGROUP_SIZE)]]
kernel void value_reduction(
    constant TI* input [[buffer(0)]],
    device TO* output [[buffer(1)]],
    constant NormParams<>& params [[buffer(2)]],
    uint tid [[thread_position_in_threadgroup]],
    uint tptg [[threads_per_threadgroup]],
    uint tgid [[threadgroup_position_in_grid]]) {
  using TA = TO;
  using Op = OpFn<TA>;
  TA acc = Op::identity();
  for (uint32_t i = tid; i < params.reduction_size; i += tptg) {
    acc = Op::combine(
        acc,
        Load::template load<TA>(input[reduced_element_offset(i, tgid, params)]));
  }
  threadgroup TA shared[MAX_THREADGROUP_SIZE / simdgroup_size];
  acc = Op::threadgroup_reduce(shared, acc, tid, tptg);
  if (tid == 0) {
    uint32_t offset = 0;
    uint32_t group = tgid;
    for (int32_t dim = params.ndim - 1; dim >= 0; dim--) {
      if (params.output_sizes[dim] > 1) {
        offset += (group % params.output_sizes[dim]) * params.output_strides[dim];
        group /= params.output_sizes[dim];
      }
    }
    output[offset] = acc;
  }
}

// The last dim of a contiguous [M, N] input: one SIMD-group per row
template <
    template <typename> class OpFn,
    typename Load,
    typename TI,
    typename TO>
kernel void value_reduction_inner(
    constant TI* input [[buffer(0)]],
    device TO* output [[buffer(1)]],
    constant uint2& sizes [[buffer(2)]],
    uint tptg [[threads_per_threadgroup]],
    uint tgid [[threadgroup_position_in_grid]],
    uint simd_lane_id [[thread_index_in_simdgroup]],
    uint simdgroup_id [[simdgroup_index_in_threadgroup]]) {
  using TA = TO;
  using Op = OpFn<TA>;
  const uint row = tgid * (tptg / simdgroup_size) + simdgroup_id;
  if (row >= sizes.x) {
    return;
  }
  TA acc = Op::identity();
  for (uint i = simd_lane_id; i < sizes.y; i += simdgroup_size) {
    acc = Op::combine(acc, Load::template load<TA>(input[row * sizes.y + i]));
  }
  acc = Op::simd_reduce(acc);
  if (simd_lane_id == 0) {
    output[row] = acc;
  }
}

// Pass 1 of a long full reduction: threadgroup `tgid` reduces the slice
// [tgid * sizes.y, (tgid + 1) * sizes.y) of a contiguous input
template <
    template <typename> class OpFn,
    typename Load,
    typename TI,
    typename TO>
[[max_total_threads_per_threadgroup(MAX_THREADGROUP_SIZE)]]
kernel void value_reduction_flat(
    constant TI* input [[buffer(0)]],
    device TO* output [[buffer(1)]],
    constant uint2& sizes [[buffer(2)]],
    uint tid [[thread_position_in_threadgroup]],
    uint tptg [[threads_per_threadgroup]],
    uint tgid [[threadgroup_position_in_grid]]) {
  using TA = TO;
  using Op = OpFn<TA>;
  TA acc = Op::identity();
  for (uint i = tid; i < sizes.y; i += tptg) {
    acc = Op::combine(acc, Load::template load<TA>(input[tgid * sizes.y + i]));
  }
  threadgroup TA shared[MAX_THREADGROUP_SIZE / simdgroup_size];
  acc = Op::threadgroup_reduce(shared, acc, tid, tptg);
  if (tid == 0) {
    output[tgid] = acc;
  }
}

// Every kernel the host may ask of an op prefix, for one (TI, TO) pair
#define REGISTER_VALUE_REDUCTION_IMPL(TI, TO, NAME, OP, LOAD)   \
  template [[host_name(NAME "_reduction_" #TI "_" #TO)]]        \
  kernel void value_reduction<OP, LOAD, TI, TO>(                \
      constant TI * input [[buffer(0)]],                        \
      device TO * output [[buffer(1)]],                         \
      constant NormParams<> & params [[buffer(2)]],             \
      uint tid [[thread_position_in_threadgroup]],              \
      uint tptg [[threads_per_threadgroup]],                    \
      uint tgid [[threadgroup_position_in_grid]]);              \
  template [[host_name(NAME "_reduction_inner_" #TI "_" #TO)]]  \
  kernel void value_reduction_inner<OP, LOAD, TI, TO>(          \
      constant TI * input [[buffer(0)]],                        \
      device TO * output [[buffer(1)]],                         \
      constant uint2 & sizes [[buffer(2)]],                     \
      uint tptg [[threads_per_threadgroup]],                    \
      uint tgid [[threadgroup_position_in_grid]],               \
      uint simd_lane_id [[thread_index_in_simdgroup]],          \
      uint simdgroup_id [[simdgroup_index_in_threadgroup]]);    \
  template [[host_name(NAME "_reduction_flat_" #TI "_" #TO)]]   \
  kernel void value_reduction_flat<OP, LOAD, TI, TO>(           \
      constant TI * input [[buffer(0)]],                        \
      device TO * output [[buffer(1)]],                         \
      constant uint2 & sizes [[buffer(2)]],                     \
      uint tid [[thread_position_in_threadgroup]],              \
      uint tptg [[threads_per_threadgroup]],                    \
      uint tgid [[threadgroup_position_in_grid]]);

#define REGISTER_MAX(T) \
  REGISTER_VALUE_REDUCTION_IMPL(T, T, "max", MaxOp, IdentityLoad)
#define REGISTER_MIN(T) \
  REGISTER_VALUE_REDUCTION_IMPL(T, T, "min", MinOp, IdentityLoad)

#define REGISTER_MIN_MAX(T) \
  REGISTER_MAX(T)           \
  REGISTER_MIN(T)

REGISTER_MIN_MAX(float);
REGISTER_MIN_MAX(half);
REGISTER_MIN_MAX(bfloat);
REGISTER_MIN_MAX(long);
REGISTER_MIN_MAX(int);
