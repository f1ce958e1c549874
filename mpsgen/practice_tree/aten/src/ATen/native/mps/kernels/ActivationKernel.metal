#include <ATen/native/mps/kernels/Activation.h>
#include <c10/metal/indexing.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;
using namespace c10::metal;

// ELU computes in opmath: for reduced floats the exponential runs in float and
// only the result is rounded back.
struct elu_functor {
  template <typename T>
  inline T operator()(const T self_, const ELUParams<T> p) {
    using op_T = opmath_t<T>;
    const op_T v = static_cast<op_T>(self_);
    if (v > 0) {
      return static_cast<T>(v * static_cast<op_T>(p.scale));
    }
    const op_T neg = static_cast<op_T>(p.alpha) *
        (::metal::exp(v * static_cast<op_T>(p.input_scale)) - op_T(1));
    return static_cast<T>(neg * static_cast<op_T>(p.scale));
  }
};

// One Scalar, passed straight through as the "alpha" of the registration.
struct hardshrink_functor {
  template <typename T>
  inline T operator()(const T x, const T lambd) {
    return (x >= -lambd && x <= lambd) ? T(0) : x;
  }
};

#define REGISTER_ELU_OP(T)            \
  typedef ELUParams<T> ELUParams_##T; \
  REGISTER_UNARY_ALPHA_OP(elu, T, ELUParams_##T, T);

REGISTER_ELU_OP(float);
REGISTER_ELU_OP(half);
REGISTER_ELU_OP(bfloat);

REGISTER_UNARY_ALPHA_OP(hardshrink, float, float, float);
REGISTER_UNARY_ALPHA_OP(hardshrink, half, half, half);
REGISTER_UNARY_ALPHA_OP(hardshrink, bfloat, bfloat, bfloat);
