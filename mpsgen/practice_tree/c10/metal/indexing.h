// Minimal stand-in for the c10 Metal indexing helpers, used only as a fixture.
#pragma once
#include <metal_stdlib>

namespace c10 {
namespace metal {

// Tiny trait helpers so kernel files can pick overloads by dtype category.
template <typename T>
constexpr constant bool is_complex_v =
    ::metal::is_same_v<T, float2> || ::metal::is_same_v<T, half2>;

template <typename T>
constexpr constant bool is_scalar_floating_point_v =
    ::metal::is_floating_point_v<T> && !is_complex_v<T>;

template <typename T>
constexpr constant bool is_scalar_integral_v = ::metal::is_integral_v<T>;

template <typename T>
struct opmath_type {
  using type = T;
};
template <>
struct opmath_type<half> {
  using type = float;
};
template <>
struct opmath_type<bfloat> {
  using type = float;
};
template <typename T>
using opmath_t = typename opmath_type<T>::type;

template <typename T>
struct vec2type {
  using type = float2;
};
template <>
struct vec2type<half> {
  using type = half2;
};
template <typename T>
using vec2type_t = typename vec2type<T>::type;

// Turn a linear element index into a memory offset for a strided tensor.
inline long strided_offset(
    uint linear,
    constant long* sizes,
    constant long* strides,
    uint ndim) {
  long offset = 0;
  for (int d = int(ndim) - 1; d >= 0; --d) {
    offset += long(linear % sizes[d]) * strides[d];
    linear /= sizes[d];
  }
  return offset;
}

template <typename TI, typename TO, typename F>
kernel void unary_dense(
    device TO* out [[buffer(0)]],
    constant TI* in [[buffer(1)]],
    uint idx [[thread_position_in_grid]]) {
  F f;
  out[idx] = static_cast<TO>(f(in[idx]));
}

template <typename TI, typename TO, typename F>
kernel void unary_strided(
    device TO* out [[buffer(0)]],
    constant TI* in [[buffer(1)]],
    constant long* sizes [[buffer(2)]],
    constant long* in_strides [[buffer(3)]],
    constant long* out_strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    uint idx [[thread_position_in_grid]]) {
  F f;
  const auto src = strided_offset(idx, sizes, in_strides, ndim);
  const auto dst = strided_offset(idx, sizes, out_strides, ndim);
  out[dst] = static_cast<TO>(f(in[src]));
}

template <typename TI, typename TA, typename TO, typename F>
kernel void unary_alpha_dense(
    device TO* out [[buffer(0)]],
    constant TI* in [[buffer(1)]],
    constant TA& alpha [[buffer(2)]],
    uint idx [[thread_position_in_grid]]) {
  F f;
  out[idx] = static_cast<TO>(f(in[idx], alpha));
}

template <typename TI, typename TO, typename OM, typename F>
kernel void binary_dense(
    device TO* out [[buffer(0)]],
    constant TI* a [[buffer(1)]],
    constant TI* b [[buffer(2)]],
    uint idx [[thread_position_in_grid]]) {
  F f;
  out[idx] = static_cast<TO>(f(OM(a[idx]), OM(b[idx])));
}

template <typename TI, typename TO, typename OM, typename F>
kernel void binary_strided(
    device TO* out [[buffer(0)]],
    constant TI* a [[buffer(1)]],
    constant TI* b [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    uint idx [[thread_position_in_grid]]) {
  F f;
  // strides holds three consecutive blocks: out, a, b
  const auto o = strided_offset(idx, sizes, strides, ndim);
  const auto i = strided_offset(idx, sizes, strides + ndim, ndim);
  const auto j = strided_offset(idx, sizes, strides + 2 * ndim, ndim);
  out[o] = static_cast<TO>(f(OM(a[i]), OM(b[j])));
}

template <typename TI, typename TA, typename TO, typename F>
kernel void binary_alpha_strided(
    device TO* out [[buffer(0)]],
    constant TI* a [[buffer(1)]],
    constant TI* b [[buffer(2)]],
    constant TA& alpha [[buffer(3)]],
    constant long* sizes [[buffer(4)]],
    constant long* strides [[buffer(5)]],
    constant uint& ndim [[buffer(6)]],
    uint idx [[thread_position_in_grid]]) {
  F f;
  const auto o = strided_offset(idx, sizes, strides, ndim);
  const auto i = strided_offset(idx, sizes, strides + ndim, ndim);
  const auto j = strided_offset(idx, sizes, strides + 2 * ndim, ndim);
  out[o] = static_cast<TO>(f(a[i], b[j], TI(alpha)));
}

template <typename TI, typename TO, typename OM, typename F>
kernel void ternary_strided(
    device TO* out [[buffer(0)]],
    constant TI* a [[buffer(1)]],
    constant TI* b [[buffer(2)]],
    constant TI* c [[buffer(3)]],
    constant long* sizes [[buffer(4)]],
    constant long* strides [[buffer(5)]],
    constant uint& ndim [[buffer(6)]],
    uint idx [[thread_position_in_grid]]) {
  F f;
  const auto o = strided_offset(idx, sizes, strides, ndim);
  const auto i = strided_offset(idx, sizes, strides + ndim, ndim);
  const auto j = strided_offset(idx, sizes, strides + 2 * ndim, ndim);
  const auto k = strided_offset(idx, sizes, strides + 3 * ndim, ndim);
  out[o] = static_cast<TO>(f(OM(a[i]), OM(b[j]), OM(c[k])));
}

} // namespace metal
} // namespace c10

// Host names follow "<op>_<layout>_<out dtype>_<in dtype>".
#define REGISTER_UNARY_OP(NAME, DTYPE0, DTYPE1)                             \
  template [[host_name(#NAME "_dense_" #DTYPE1 "_" #DTYPE0)]] kernel void   \
  c10::metal::unary_dense<DTYPE0, DTYPE1, NAME##_functor>(                  \
      device DTYPE1*, constant DTYPE0*, uint);                              \
  template [[host_name(#NAME "_strided_" #DTYPE1 "_" #DTYPE0)]] kernel void \
  c10::metal::unary_strided<DTYPE0, DTYPE1, NAME##_functor>(                \
      device DTYPE1*,                                                       \
      constant DTYPE0*,                                                     \
      constant long*,                                                       \
      constant long*,                                                       \
      constant long*,                                                       \
      constant uint&,                                                       \
      uint)

#define REGISTER_UNARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO)             \
  template [[host_name(#NAME "_dense_" #DTYPEO "_" #DTYPEI "_" #DTYPEA)]] \
  kernel void                                                             \
  c10::metal::unary_alpha_dense<DTYPEI, DTYPEA, DTYPEO, NAME##_functor>(  \
      device DTYPEO*, constant DTYPEI*, constant DTYPEA&, uint)

#define REGISTER_BINARY_OP_(NAME, DTYPEI, DTYPEO, OMT)                      \
  template [[host_name(#NAME "_dense_" #DTYPEO "_" #DTYPEI)]] kernel void   \
  c10::metal::binary_dense<DTYPEI, DTYPEO, OMT, NAME##_functor>(            \
      device DTYPEO*, constant DTYPEI*, constant DTYPEI*, uint);            \
  template [[host_name(#NAME "_strided_" #DTYPEO "_" #DTYPEI)]] kernel void \
  c10::metal::binary_strided<DTYPEI, DTYPEO, OMT, NAME##_functor>(          \
      device DTYPEO*,                                                       \
      constant DTYPEI*,                                                     \
      constant DTYPEI*,                                                     \
      constant long*,                                                       \
      constant long*,                                                       \
      constant uint&,                                                       \
      uint)

#define REGISTER_OPMATH_BINARY_OP(NAME, DTYPEI, DTYPEO) \
  REGISTER_BINARY_OP_(NAME, DTYPEI, DTYPEO, ::c10::metal::opmath_t<DTYPEI>)

#define REGISTER_BINARY_OP(NAME, DTYPEI, DTYPEO) \
  REGISTER_BINARY_OP_(NAME, DTYPEI, DTYPEO, DTYPEI)

#define REGISTER_BINARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO)              \
  template [[host_name(#NAME "_strided_" #DTYPEO "_" #DTYPEI)]] kernel void \
  c10::metal::binary_alpha_strided<DTYPEI, DTYPEA, DTYPEO, NAME##_functor>( \
      device DTYPEO*,                                                       \
      constant DTYPEI*,                                                     \
      constant DTYPEI*,                                                     \
      constant DTYPEA&,                                                     \
      constant long*,                                                       \
      constant long*,                                                       \
      constant uint&,                                                       \
      uint)

#define REGISTER_TERNARY_OP_(NAME, DTYPEI, DTYPEO, OMT)                     \
  template [[host_name(#NAME "_strided_" #DTYPEO "_" #DTYPEI)]] kernel void \
  c10::metal::ternary_strided<DTYPEI, DTYPEO, OMT, NAME##_functor>(         \
      device DTYPEO*,                                                       \
      constant DTYPEI*,                                                     \
      constant DTYPEI*,                                                     \
      constant DTYPEI*,                                                     \
      constant long*,                                                       \
      constant long*,                                                       \
      constant uint&,                                                       \
      uint)

#define REGISTER_OPMATH_TERNARY_OP(NAME, DTYPEI, DTYPEO) \
  REGISTER_TERNARY_OP_(NAME, DTYPEI, DTYPEO, ::c10::metal::opmath_t<DTYPEI>)

#define REGISTER_TERNARY_OP(NAME, DTYPEI, DTYPEO) \
  REGISTER_TERNARY_OP_(NAME, DTYPEI, DTYPEO, DTYPEI)
