#include <c10/metal/indexing.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;

// Binary functors receive both operands already converted to the op-math
// type chosen at registration time.

struct add_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(a + b);
  }
};

struct sub_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(a - b);
  }
};

struct mul_functor {
  template <typename T, enable_if_t<!c10::metal::is_complex_v<T>, bool> = true>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(a * b);
  }
  template <typename T, enable_if_t<c10::metal::is_complex_v<T>, bool> = true>
  inline T operator()(const T a, const T b) {
    // (a.x + i a.y) * (b.x + i b.y)
    return T(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
  }
};

struct fmax_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    // NaN on one side yields the other operand
    return T(::metal::fmax(float(a), float(b)));
  }
};

struct fmin_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return T(::metal::fmin(float(a), float(b)));
  }
};

struct copysign_functor {
  template <typename T, enable_if_t<is_floating_point_v<T>, bool> = true>
  inline T operator()(const T a, const T b) {
    return T(::metal::copysign(float(a), float(b)));
  }
  template <typename T, enable_if_t<!is_floating_point_v<T>, bool> = true>
  inline float operator()(const T a, const T b) {
    const float mag = ::metal::abs(float(a));
    return float(b) < 0.0f ? -mag : mag;
  }
};

struct hypot_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    const float x = float(a), y = float(b);
    return T(precise::sqrt(x * x + y * y));
  }
};

struct logaddexp_functor {
  template <typename T, enable_if_t<is_floating_point_v<T>, bool> = true>
  inline T operator()(const T a, const T b) {
    const float hi = c10::metal::max(float(a), float(b));
    const float lo = c10::metal::min(float(a), float(b));
    return T(hi + precise::log(1.0f + precise::exp(lo - hi)));
  }
  template <typename T, enable_if_t<!is_floating_point_v<T>, bool> = true>
  inline float operator()(const T a, const T b) {
    const float hi = ::metal::max(float(a), float(b));
    const float lo = ::metal::min(float(a), float(b));
    return hi + precise::log(1.0f + precise::exp(lo - hi));
  }
};

struct gcd_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    // Euclid on absolute values
    T x = a < T(0) ? T(0) - a : a;
    T y = b < T(0) ? T(0) - b : b;
    while (y != T(0)) {
      const T r = x % y;
      x = y;
      y = r;
    }
    return x;
  }
};

struct bitwise_and_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return a & b;
  }
};

struct add_alpha_functor {
  template <typename T>
  inline T operator()(const T a, const T b, const T alpha) {
    return static_cast<T>(a + alpha * b);
  }
};

struct polar_functor {
  template <typename T>
  using result_type = c10::metal::vec2type_t<T>;
  template <typename T>
  inline result_type<T> operator()(const T r, const T theta) {
    // magnitude/angle pair to (real, imag)
    return result_type<T>(r * ::metal::cos(theta), r * ::metal::sin(theta));
  }
};

#define REGISTER_INTEGER_BINARY_OP_NO_BOOL(NAME) \
  REGISTER_BINARY_OP(NAME, long, long);          \
  REGISTER_BINARY_OP(NAME, int, int);            \
  REGISTER_BINARY_OP(NAME, short, short);        \
  REGISTER_BINARY_OP(NAME, uchar, uchar);        \
  REGISTER_BINARY_OP(NAME, char, char)

#define REGISTER_INTEGER_BINARY_OP(NAME)    \
  REGISTER_INTEGER_BINARY_OP_NO_BOOL(NAME); \
  REGISTER_BINARY_OP(NAME, bool, bool)

#define REGISTER_INT2FLOAT_BINARY_OP(NAME) \
  REGISTER_BINARY_OP(NAME, long, float);   \
  REGISTER_BINARY_OP(NAME, int, float);    \
  REGISTER_BINARY_OP(NAME, short, float);  \
  REGISTER_BINARY_OP(NAME, uchar, float);  \
  REGISTER_BINARY_OP(NAME, char, float);   \
  REGISTER_BINARY_OP(NAME, bool, float)

#define REGISTER_FLOAT_BINARY_OP(NAME)    \
  REGISTER_BINARY_OP(NAME, float, float); \
  REGISTER_BINARY_OP(NAME, half, half);   \
  REGISTER_BINARY_OP(NAME, bfloat, bfloat)

#define REGISTER_OPMATH_FLOAT_BINARY_OP(NAME)    \
  REGISTER_OPMATH_BINARY_OP(NAME, float, float); \
  REGISTER_OPMATH_BINARY_OP(NAME, half, half);   \
  REGISTER_OPMATH_BINARY_OP(NAME, bfloat, bfloat)

REGISTER_FLOAT_BINARY_OP(hypot);
REGISTER_FLOAT_BINARY_OP(copysign);
REGISTER_INT2FLOAT_BINARY_OP(copysign);
REGISTER_FLOAT_BINARY_OP(fmax);
REGISTER_FLOAT_BINARY_OP(fmin);
REGISTER_FLOAT_BINARY_OP(logaddexp);
REGISTER_INT2FLOAT_BINARY_OP(logaddexp);
REGISTER_FLOAT_BINARY_OP(add);
REGISTER_INTEGER_BINARY_OP(add);
REGISTER_FLOAT_BINARY_OP(sub);
REGISTER_INTEGER_BINARY_OP(sub);
REGISTER_OPMATH_FLOAT_BINARY_OP(mul);
REGISTER_INTEGER_BINARY_OP(mul);
REGISTER_INTEGER_BINARY_OP(gcd);
REGISTER_INTEGER_BINARY_OP(bitwise_and);
REGISTER_BINARY_ALPHA_OP(add_alpha, float, float, float);
REGISTER_BINARY_ALPHA_OP(add_alpha, half, half, half);
REGISTER_BINARY_ALPHA_OP(add_alpha, bfloat, bfloat, bfloat);
REGISTER_BINARY_ALPHA_OP(add_alpha, long, long, long);
REGISTER_BINARY_ALPHA_OP(add_alpha, int, int, int);

// Complex values travel as two-lane vectors (real, imag).
REGISTER_BINARY_OP(polar, float, float2);
REGISTER_BINARY_OP(polar, half, half2);
REGISTER_BINARY_OP(add, float2, float2);
REGISTER_BINARY_OP(add, half2, half2);
REGISTER_OPMATH_BINARY_OP(mul, float2, float2);
REGISTER_OPMATH_BINARY_OP(mul, half2, half2);
