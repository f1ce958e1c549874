#include <c10/metal/indexing.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;
using namespace c10::metal;

// Each functor exposes overloads keyed on the input category. Integral
// inputs are promoted to float before the math call.

struct exp_functor {
  template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(precise::exp(float(x)));
  }
  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>
  inline float operator()(const T x) {
    return precise::exp(float(x));
  }
  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    // e^(a+ib) = e^a * (cos b + i sin b)
    const auto mag = precise::exp(float(x.x));
    return T(mag * precise::cos(float(x.y)), mag * precise::sin(float(x.y)));
  }
};

struct sin_functor {
  template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(precise::sin(float(x)));
  }
  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>
  inline float operator()(const T x) {
    return precise::sin(float(x));
  }
  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    const float re = x.x, im = x.y;
    return T(
        precise::sin(re) * precise::cosh(im),
        precise::cos(re) * precise::sinh(im));
  }
};

struct cos_functor {
  template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(precise::cos(float(x)));
  }
  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>
  inline float operator()(const T x) {
    return precise::cos(float(x));
  }
  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    const float re = x.x, im = x.y;
    return T(
        precise::cos(re) * precise::cosh(im),
        -precise::sin(re) * precise::sinh(im));
  }
};

struct log_functor {
  template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(precise::log(float(x)));
  }
  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>
  inline float operator()(const T x) {
    return precise::log(float(x));
  }
};

struct sqrt_functor {
  template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(precise::sqrt(float(x)));
  }
  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>
  inline float operator()(const T x) {
    return precise::sqrt(float(x));
  }
};

struct neg_functor {
  template <typename T, enable_if_t<!is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(0) - x;
  }
  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(-x.x, -x.y);
  }
};

struct bitwise_not_functor {
  template <typename T, enable_if_t<!is_same_v<T, bool>, bool> = true>
  inline T operator()(const T x) {
    return ~x;
  }
  template <typename T, enable_if_t<is_same_v<T, bool>, bool> = true>
  inline T operator()(const T x) {
    return x ? false : true;
  }
};

struct abs_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x < T(0) ? T(0) - x : x;
  }
};

struct sigmoid_functor {
  template <typename T, enable_if_t<is_scalar_floating_point_v<T>, bool> = true>
  inline T operator()(const T x) {
    return T(1.0f / (1.0f + precise::exp(-float(x))));
  }
  template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true>
  inline float operator()(const T x) {
    return 1.0f / (1.0f + precise::exp(-float(x)));
  }
};

struct round_decimals_functor {
  template <typename T>
  inline T operator()(const T x, const long ndigits) {
    // Scale, round to nearest even, then undo the scaling.
    const float scale = precise::pow(10.0f, float(ndigits));
    return T(rint(float(x) * scale) / scale);
  }
};

REGISTER_UNARY_OP(neg, int, int);
REGISTER_UNARY_OP(neg, long, long);
REGISTER_UNARY_OP(neg, short, short);
REGISTER_UNARY_OP(neg, char, char);
REGISTER_UNARY_OP(neg, uchar, uchar);
REGISTER_UNARY_OP(neg, float, float);
REGISTER_UNARY_OP(neg, half, half);
REGISTER_UNARY_OP(neg, bfloat, bfloat);

REGISTER_UNARY_OP(bitwise_not, int, int);
REGISTER_UNARY_OP(bitwise_not, long, long);
REGISTER_UNARY_OP(bitwise_not, short, short);
REGISTER_UNARY_OP(bitwise_not, char, char);
REGISTER_UNARY_OP(bitwise_not, uchar, uchar);
REGISTER_UNARY_OP(bitwise_not, bool, bool);

REGISTER_UNARY_OP(abs, int, int);
REGISTER_UNARY_OP(abs, long, long);
REGISTER_UNARY_OP(abs, short, short);
REGISTER_UNARY_OP(abs, char, char);
REGISTER_UNARY_OP(abs, uchar, uchar);
REGISTER_UNARY_OP(abs, float, float);
REGISTER_UNARY_OP(abs, half, half);
REGISTER_UNARY_OP(abs, bfloat, bfloat);

#define INSTANTIATE_UNARY_KERNELS2(DTYPE0, DTYPE1) \
  REGISTER_UNARY_OP(exp, DTYPE1, DTYPE0);          \
  REGISTER_UNARY_OP(sin, DTYPE1, DTYPE0);          \
  REGISTER_UNARY_OP(cos, DTYPE1, DTYPE0);          \
  REGISTER_UNARY_OP(log, DTYPE1, DTYPE0);          \
  REGISTER_UNARY_OP(sqrt, DTYPE1, DTYPE0);         \
  REGISTER_UNARY_OP(sigmoid, DTYPE1, DTYPE0)

INSTANTIATE_UNARY_KERNELS2(bfloat, bfloat);
INSTANTIATE_UNARY_KERNELS2(half, half);
INSTANTIATE_UNARY_KERNELS2(float, float);
INSTANTIATE_UNARY_KERNELS2(float, bool);
INSTANTIATE_UNARY_KERNELS2(float, uchar);
INSTANTIATE_UNARY_KERNELS2(float, char);
INSTANTIATE_UNARY_KERNELS2(float, short);
INSTANTIATE_UNARY_KERNELS2(float, int);
INSTANTIATE_UNARY_KERNELS2(float, long);

#define INSTANTIATE_UNARY_KERNELS_VEC2(DTYPE) \
  REGISTER_UNARY_OP(exp, DTYPE##2, DTYPE##2); \
  REGISTER_UNARY_OP(sin, DTYPE##2, DTYPE##2); \
  REGISTER_UNARY_OP(cos, DTYPE##2, DTYPE##2); \
  REGISTER_UNARY_OP(neg, DTYPE##2, DTYPE##2)

INSTANTIATE_UNARY_KERNELS_VEC2(half);
INSTANTIATE_UNARY_KERNELS_VEC2(float);

REGISTER_UNARY_ALPHA_OP(round_decimals, float, long, float);
REGISTER_UNARY_ALPHA_OP(round_decimals, half, long, half);
REGISTER_UNARY_ALPHA_OP(round_decimals, bfloat, long, bfloat);
