// mpsgen's host-side model of the Metal Shading Language and c10/metal, enough to run an
// elementwise functor on the CPU (`mpsgen try`). Not Apple's or PyTorch's code: a small
// re-statement of the documented behaviour the functors rely on.
//
// half and bfloat are 16-bit types that round every result to nearest-even, as the GPU does;
// float2/half2 stand for complex64/complex32 (x: real, y: imaginary). Anything a functor uses
// that is not here fails to compile, and `mpsgen try` reports it as not modelled.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;

namespace mpsgen_shim {
inline uint32_t bits_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float float_of(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// float -> IEEE binary16, round to nearest even (subnormals, infinities and NaN kept)
inline uint16_t to_half_bits(float f) {
  uint32_t x = bits_of(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (mag >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (mag < 0x38800000u) {  // below the smallest normal half: a subnormal (or zero)
    float a = float_of(mag);
    float scaled = a * 16777216.0f;  // 2^24: units of the smallest subnormal
    uint32_t q = (uint32_t)std::nearbyint(scaled);  // the FPU rounds to nearest even
    return sign | q;
  }
  uint32_t exp = ((mag >> 23) - 112) << 10;
  uint32_t mant = (mag >> 13) & 0x3ffu;
  uint32_t rest = mag & 0x1fffu;
  uint32_t h = exp | mant;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h += 1;  // carries into the exponent as it should
  return sign | h;
}

inline float from_half_bits(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp((float)mant, -24);
    return sign ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

// float -> bfloat16, round to nearest even; NaN stays NaN
inline uint16_t to_bfloat_bits(float f) {
  uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  return (uint16_t)((x + 0x7fffu + lsb) >> 16);
}
inline float from_bfloat_bits(uint16_t b) { return float_of((uint32_t)b << 16); }
}  // namespace mpsgen_shim

#define MPSGEN_SHIM_16BIT(NAME, TO, FROM)                                              \
  struct NAME {                                                                        \
    uint16_t bits;                                                                     \
    NAME() : bits(0) {}                                                                \
    template <typename V, typename = std::enable_if_t<std::is_arithmetic<V>::value>>  \
    explicit NAME(V v) : bits(mpsgen_shim::TO((float)v)) {}                            \
    static NAME from_bits(uint16_t b) { NAME h; h.bits = b; return h; }                \
    operator float() const { return mpsgen_shim::FROM(bits); }                         \
    NAME operator-() const { return NAME(-float(*this)); }                             \
    NAME& operator+=(NAME o) { return *this = NAME(float(*this) + float(o)); }         \
    NAME& operator-=(NAME o) { return *this = NAME(float(*this) - float(o)); }         \
    NAME& operator*=(NAME o) { return *this = NAME(float(*this) * float(o)); }         \
    NAME& operator/=(NAME o) { return *this = NAME(float(*this) / float(o)); }         \
  };                                                                                   \
  inline NAME operator+(NAME a, NAME b) { return NAME(float(a) + float(b)); }          \
  inline NAME operator-(NAME a, NAME b) { return NAME(float(a) - float(b)); }          \
  inline NAME operator*(NAME a, NAME b) { return NAME(float(a) * float(b)); }          \
  inline NAME operator/(NAME a, NAME b) { return NAME(float(a) / float(b)); }

MPSGEN_SHIM_16BIT(half, to_half_bits, from_half_bits)
MPSGEN_SHIM_16BIT(bfloat, to_bfloat_bits, from_bfloat_bits)

// a 2-vector (Metal's float2/half2), used for complex64/complex32: componentwise arithmetic
template <typename T>
struct mpsgen_vec2 {
  T x, y;
  mpsgen_vec2() : x(0), y(0) {}
  template <typename A, typename B>
  mpsgen_vec2(A a, B b) : x(T(a)), y(T(b)) {}
  template <typename U>
  explicit mpsgen_vec2(mpsgen_vec2<U> o) : x(T(float(o.x))), y(T(float(o.y))) {}
};
template <typename T> inline mpsgen_vec2<T> operator+(mpsgen_vec2<T> a, mpsgen_vec2<T> b) { return {a.x + b.x, a.y + b.y}; }
template <typename T> inline mpsgen_vec2<T> operator-(mpsgen_vec2<T> a, mpsgen_vec2<T> b) { return {a.x - b.x, a.y - b.y}; }
template <typename T> inline mpsgen_vec2<T> operator*(mpsgen_vec2<T> a, mpsgen_vec2<T> b) { return {a.x * b.x, a.y * b.y}; }
template <typename T> inline mpsgen_vec2<T> operator/(mpsgen_vec2<T> a, mpsgen_vec2<T> b) { return {a.x / b.x, a.y / b.y}; }
template <typename T> inline mpsgen_vec2<T> operator-(mpsgen_vec2<T> a) { return {-a.x, -a.y}; }
typedef mpsgen_vec2<float> float2;
typedef mpsgen_vec2<half> half2;

#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.78539816339744830962f
#define M_1_PI_F 0.31830988618379067154f
#define M_LN10_F 2.30258509299404568402f
#define M_E_F 2.71828182845904523536f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.70710678118654752440f
#define M_LN2_F 0.69314718055994530942f
#define M_LOG2E_F 1.44269504088896340736f
#define INFINITY_F std::numeric_limits<float>::infinity()

namespace metal {
template <bool B, typename T = void>
using enable_if_t = std::enable_if_t<B, T>;
template <typename A, typename B>
constexpr bool is_same_v = std::is_same<A, B>::value;

template <typename T> struct is_fp : std::is_floating_point<T> {};
template <> struct is_fp<half> : std::true_type {};
template <> struct is_fp<bfloat> : std::true_type {};
template <> struct is_fp<float2> : std::true_type {};  // Metal's trait holds for vectors
template <> struct is_fp<half2> : std::true_type {};
template <typename T>
constexpr bool is_floating_point_v = is_fp<T>::value;
template <typename T>
constexpr bool is_integral_v = std::is_integral<T>::value;
template <typename T>
constexpr bool is_signed_v = std::is_signed<T>::value || is_fp<T>::value;
template <typename T>
constexpr bool is_unsigned_v = std::is_unsigned<T>::value;
template <typename T>
constexpr bool is_arithmetic_v = is_fp<T>::value || std::is_integral<T>::value;

// the math of metal:: (and precise::, same results here): computed in float
#define MPSGEN_SHIM_UNARY(F, STD)                                              \
  inline float F(float x) { return STD(x); }                                   \
  inline half F(half x) { return half(STD(float(x))); }                        \
  inline bfloat F(bfloat x) { return bfloat(STD(float(x))); }
#define MPSGEN_SHIM_BINARY(F, STD)                                             \
  inline float F(float a, float b) { return STD(a, b); }                       \
  inline half F(half a, half b) { return half(STD(float(a), float(b))); }      \
  inline bfloat F(bfloat a, bfloat b) { return bfloat(STD(float(a), float(b))); }
#define MPSGEN_SHIM_TERNARY(F, STD)                                                      \
  inline float F(float a, float b, float c) { return STD(a, b, c); }                     \
  inline half F(half a, half b, half c) { return half(STD(float(a), float(b), float(c))); }
#define MPSGEN_SHIM_MATH                                                                   \
  MPSGEN_SHIM_TERNARY(fma, std::fma)                                                       \
  MPSGEN_SHIM_UNARY(exp, std::exp) MPSGEN_SHIM_UNARY(exp2, std::exp2)                      \
  MPSGEN_SHIM_UNARY(log, std::log) MPSGEN_SHIM_UNARY(log2, std::log2)                      \
  MPSGEN_SHIM_UNARY(log10, std::log10) MPSGEN_SHIM_UNARY(sqrt, std::sqrt)                  \
  MPSGEN_SHIM_UNARY(rsqrt, 1.0f / std::sqrt) MPSGEN_SHIM_UNARY(sin, std::sin)              \
  MPSGEN_SHIM_UNARY(cos, std::cos) MPSGEN_SHIM_UNARY(tan, std::tan)                        \
  MPSGEN_SHIM_UNARY(asin, std::asin) MPSGEN_SHIM_UNARY(acos, std::acos)                    \
  MPSGEN_SHIM_UNARY(atan, std::atan) MPSGEN_SHIM_UNARY(sinh, std::sinh)                    \
  MPSGEN_SHIM_UNARY(cosh, std::cosh) MPSGEN_SHIM_UNARY(tanh, std::tanh)                    \
  MPSGEN_SHIM_UNARY(asinh, std::asinh) MPSGEN_SHIM_UNARY(acosh, std::acosh)                \
  MPSGEN_SHIM_UNARY(atanh, std::atanh) MPSGEN_SHIM_UNARY(floor, std::floor)                \
  MPSGEN_SHIM_UNARY(ceil, std::ceil) MPSGEN_SHIM_UNARY(trunc, std::trunc)                  \
  MPSGEN_SHIM_UNARY(round, std::round) MPSGEN_SHIM_UNARY(rint, std::nearbyint)             \
  MPSGEN_SHIM_UNARY(fabs, std::fabs)                                                       \
  MPSGEN_SHIM_BINARY(pow, std::pow) MPSGEN_SHIM_BINARY(powr, std::pow)                     \
  MPSGEN_SHIM_BINARY(atan2, std::atan2) MPSGEN_SHIM_BINARY(fmod, std::fmod)                \
  MPSGEN_SHIM_BINARY(fmin, std::fmin) MPSGEN_SHIM_BINARY(fmax, std::fmax)                  \
  MPSGEN_SHIM_BINARY(copysign, std::copysign)
MPSGEN_SHIM_MATH
namespace precise {
MPSGEN_SHIM_MATH
}

template <typename T, enable_if_t<is_fp<T>::value, bool> = true>
inline bool isnan(T x) { return std::isnan(float(x)); }
template <typename T, enable_if_t<is_fp<T>::value, bool> = true>
inline bool isinf(T x) { return std::isinf(float(x)); }
template <typename T, enable_if_t<is_fp<T>::value, bool> = true>
inline bool isfinite(T x) { return std::isfinite(float(x)); }
template <typename T, enable_if_t<is_fp<T>::value, bool> = true>
inline bool signbit(T x) { return std::signbit(float(x)); }
template <typename T>
inline bool isunordered(T a, T b) { return std::isnan(float(a)) || std::isnan(float(b)); }
// Metal's min/max on floats return the other operand when one is NaN (as fmin/fmax)
template <typename T>
inline T min(T a, T b) {
  if constexpr (is_fp<T>::value) return T(std::fmin(float(a), float(b)));
  else return b < a ? b : a;
}
template <typename T>
inline T max(T a, T b) {
  if constexpr (is_fp<T>::value) return T(std::fmax(float(a), float(b)));
  else return a < b ? b : a;
}
template <typename T>
inline T abs(T x) {
  if constexpr (is_fp<T>::value) return T(std::fabs(float(x)));
  else return x < 0 ? T(-x) : x;
}
template <typename T>
inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
// metal::numeric_limits: the standard one, and the 16-bit floats' by their bit patterns
template <typename T>
struct numeric_limits : std::numeric_limits<T> {};
template <>
struct numeric_limits<half> {
  static half max() { return half::from_bits(0x7bff); }
  static half lowest() { return half::from_bits(0xfbff); }
  static half min() { return half::from_bits(0x0400); }
  static half epsilon() { return half::from_bits(0x1400); }
  static half infinity() { return half::from_bits(0x7c00); }
  static half quiet_NaN() { return half::from_bits(0x7e00); }
};
template <>
struct numeric_limits<bfloat> {
  static bfloat max() { return bfloat::from_bits(0x7f7f); }
  static bfloat lowest() { return bfloat::from_bits(0xff7f); }
  static bfloat min() { return bfloat::from_bits(0x0080); }
  static bfloat epsilon() { return bfloat::from_bits(0x3c00); }
  static bfloat infinity() { return bfloat::from_bits(0x7f80); }
  static bfloat quiet_NaN() { return bfloat::from_bits(0x7fc0); }
};
template <typename T>
inline T select(T a, T b, bool c) { return c ? b : a; }
}  // namespace metal

namespace c10 {
namespace metal {
// c10/metal/common.h: ::metal::array in a shader, std::array on the host
template <typename T, unsigned N>
using array = std::array<T, N>;
template <typename T> struct opmath { using type = T; };
template <> struct opmath<half> { using type = float; };
template <> struct opmath<bfloat> { using type = float; };
template <typename T>
using opmath_t = typename opmath<T>::type;
template <typename T>
constexpr bool is_complex_v = std::is_same<T, float2>::value || std::is_same<T, half2>::value;
template <typename T>
constexpr bool is_scalar_floating_point_v = ::metal::is_fp<T>::value && !is_complex_v<T>;
template <typename T>
constexpr bool is_scalar_integral_v = std::is_integral<T>::value;

// NaN-propagating min/max (c10/metal/utils.h)
template <typename T>
inline T min(T a, T b) {
  if constexpr (::metal::is_fp<T>::value) return ::metal::isunordered(a, b) ? T(NAN) : ::metal::min(a, b);
  else return ::metal::min(a, b);
}
template <typename T>
inline T max(T a, T b) {
  if constexpr (::metal::is_fp<T>::value) return ::metal::isunordered(a, b) ? T(NAN) : ::metal::max(a, b);
  else return ::metal::max(a, b);
}
// Python's floor division and remainder
template <typename T>
inline T floor_divide(T a, T b) {
  if constexpr (::metal::is_fp<T>::value) return T(std::floor(float(a) / float(b)));
  else { T q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1; return q; }
}
inline float erf(float x) { return std::erf(x); }
// exp(x^2) * erfc(x), without overflow for large x (an asymptotic series there)
inline float erfcx(float x) {
  double d = x;
  if (d < 25.0) return (float)(std::exp(d * d) * std::erfc(d));
  double r = 1.0 / (d * d);
  return (float)(1.0 / (d * std::sqrt(M_PI)) * (1.0 - 0.5 * r + 0.75 * r * r - 1.875 * r * r * r));
}
inline float erfc(float x) { return std::erfc(x); }
inline float lgamma(float x) { return std::lgamma(x); }
inline float tgamma(float x) { return std::tgamma(x); }
inline float log1p(float x) { return std::log1p(x); }
// c10::metal::hypot (Metal has none); it documents non-negative arguments
inline float hypot(float a, float b) { return std::hypot(a, b); }
inline float expm1(float x) { return std::expm1(x); }
// inverse of erf: a first guess refined by Newton steps in double (accurate to float rounding)
inline float erfinv(float y) {
  if (std::isnan(y) || y < -1.0f || y > 1.0f) return NAN;
  if (y == 1.0f) return INFINITY;
  if (y == -1.0f) return -INFINITY;
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08; x = 3.43273939e-07 + x * w; x = -3.5233877e-06 + x * w; x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w; x = -0.00125372503 + x * w; x = -0.00417768164 + x * w; x = 0.246640727 + x * w;
    x = 1.50140941 + x * w;
  } else {
    w = std::sqrt(w) - 3.0;
    x = -0.000200214257; x = 0.000100950558 + x * w; x = 0.00134934322 + x * w; x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w; x = -0.0076224613 + x * w; x = 0.00943887047 + x * w; x = 1.00167406 + x * w;
    x = 2.83297682 + x * w;
  }
  x *= y;
  for (int i = 0; i < 3; ++i) {
    double err = std::erf(x) - y;
    x -= err / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
  }
  return (float)x;
}
}  // namespace metal
}  // namespace c10
