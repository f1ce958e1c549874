#include <ATen/native/mps/kernels/Distance.h>
#include <c10/metal/common.h>
#include <metal_stdlib>
using namespace metal;

// d dist(x1[b, i], x2[b, j]) / d x1[b, i, k], summed over j: one thread per
// element of grad_x1 (b, i, k).
template <typename T>
kernel void cdist_backward(
    device T* grad_x1 [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* x1 [[buffer(2)]],
    constant T* x2 [[buffer(3)]],
    constant T* dist [[buffer(4)]],
    constant CdistBwdParams& params [[buffer(5)]],
    uint tid [[thread_position_in_grid]]) {
  const long k = tid % params.D;
  const long i = (tid / params.D) % params.P;
  const long b = tid / (params.D * params.P);
  float total = 0;
  for (long j = 0; j < params.R; ++j) {
    const long pair = (b * params.P + i) * params.R + j;
    const float d = float(dist[pair]);
    if (d == 0) {
      continue;
    }
    const float diff = float(x1[(b * params.P + i) * params.D + k]) -
        float(x2[(b * params.R + j) * params.D + k]);
    const float scaled = ::metal::pow(::metal::abs(diff), params.p_minus_1) /
        ::metal::pow(d, params.p_minus_1);
    total += ::metal::sign(diff) * scaled * float(grad[pair]);
  }
  grad_x1[tid] = static_cast<T>(total);
}

#define REGISTER_CDIST_BACKWARD(T)                                            \
  template [[host_name("cdist_backward_" #T)]] kernel void cdist_backward<T>( \
      device T * grad_x1 [[buffer(0)]],                                       \
      constant T * grad [[buffer(1)]],                                        \
      constant T * x1 [[buffer(2)]],                                          \
      constant T * x2 [[buffer(3)]],                                          \
      constant T * dist [[buffer(4)]],                                        \
      constant CdistBwdParams & params [[buffer(5)]],                         \
      uint tid [[thread_position_in_grid]])

REGISTER_CDIST_BACKWARD(float);
REGISTER_CDIST_BACKWARD(half);
REGISTER_CDIST_BACKWARD(bfloat);
