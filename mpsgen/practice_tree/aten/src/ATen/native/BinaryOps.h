#pragma once

// Fixture header: dispatch stubs for the binary pointwise ops used by the
// mpsgen practice tree.

#include <ATen/native/DispatchStub.h>
#include <c10/core/Scalar.h>

namespace at {
struct TensorIterator;
struct TensorIteratorBase;
} // namespace at

namespace at::native {

using structured_binary_fn = void (*)(TensorIteratorBase&);
using structured_binary_fn_alpha = void (*)(TensorIteratorBase&, const Scalar& alpha);
using polar_fn = void (*)(TensorIterator&);

// Arithmetic with an alpha scale on the second operand
DECLARE_DISPATCH(structured_binary_fn_alpha, add_stub)
DECLARE_DISPATCH(structured_binary_fn_alpha, sub_stub)

// Floating point helpers
DECLARE_DISPATCH(structured_binary_fn, fmax_stub)
DECLARE_DISPATCH(structured_binary_fn, fmin_stub)
DECLARE_DISPATCH(structured_binary_fn, copysign_stub)
DECLARE_DISPATCH(structured_binary_fn, hypot_stub)
DECLARE_DISPATCH(structured_binary_fn, logaddexp_stub)
DECLARE_DISPATCH(structured_binary_fn, mul_stub)
DECLARE_DISPATCH(structured_binary_fn, heaviside_stub)
DECLARE_DISPATCH(structured_binary_fn, atan2_stub)
DECLARE_DISPATCH(structured_binary_fn, xlogy_stub)
DECLARE_DISPATCH(structured_binary_fn, pow_tensor_tensor_stub)

// Integer-only ops
DECLARE_DISPATCH(structured_binary_fn, gcd_stub)
DECLARE_DISPATCH(structured_binary_fn, bitwise_and_stub)

// Backward formulas expressed as binary kernels
DECLARE_DISPATCH(structured_binary_fn, sigmoid_backward_stub)
DECLARE_DISPATCH(structured_binary_fn, tanh_backward_stub)

// Complex construction
DECLARE_DISPATCH(polar_fn, polar_stub)

} // namespace at::native
