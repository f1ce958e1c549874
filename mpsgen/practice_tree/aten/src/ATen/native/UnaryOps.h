#pragma once

// Fixture header: dispatch stubs for the unary pointwise ops used by the
// mpsgen practice tree.

#include <ATen/native/DispatchStub.h>
#include <c10/core/Scalar.h>
#include <cstdint>

namespace at {
struct TensorIteratorBase;
} // namespace at

namespace at::native {

using unary_fn = void (*)(TensorIteratorBase&);
using unary_fn_with_scalar = void (*)(TensorIteratorBase&, const Scalar& a);

// Plain elementwise ops
DECLARE_DISPATCH(unary_fn, exp_stub)
DECLARE_DISPATCH(unary_fn, sin_stub)
DECLARE_DISPATCH(unary_fn, cos_stub)
DECLARE_DISPATCH(unary_fn, log_stub)
DECLARE_DISPATCH(unary_fn, sqrt_stub)
DECLARE_DISPATCH(unary_fn, sigmoid_stub)
DECLARE_DISPATCH(unary_fn, neg_stub)
DECLARE_DISPATCH(unary_fn, bitwise_not_stub)
DECLARE_DISPATCH(unary_fn, abs_stub)

// Inverse hyperbolic functions
DECLARE_DISPATCH(unary_fn, acosh_stub)
DECLARE_DISPATCH(unary_fn, asinh_stub)
DECLARE_DISPATCH(unary_fn, atanh_stub)

// Sign-like and fractional helpers
DECLARE_DISPATCH(unary_fn, frac_stub)
DECLARE_DISPATCH(unary_fn, sign_stub)
DECLARE_DISPATCH(unary_fn, sgn_stub)

// torch.special
DECLARE_DISPATCH(unary_fn, special_ndtri_stub)

// Ops carrying an extra non-tensor argument
DECLARE_DISPATCH(void (*)(TensorIteratorBase&, int64_t), round_decimals_stub)

} // namespace at::native
