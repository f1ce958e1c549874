#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/TensorIterator.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#else
#include <ATen/ops/maximum.h>
#endif

namespace at::native {
#ifndef PYTORCH_JIT_COMPILE_SHADERS
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();
#else
#include <ATen/native/mps/BinaryKernel_metallib.h>
#endif

static void fmax_mps_kernel(TensorIteratorBase& iter) {
  if (isIntegralType(iter.common_dtype(), /*includeBool=*/true)) {
    // NaN handling is irrelevant for integers, so plain maximum is enough
    at::maximum_out(const_cast<Tensor&>(iter.output()), iter.input(0), iter.input(1));
  } else {
    lib.exec_binary_kernel(iter, "fmax");
  }
}

static void fmin_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "fmin");
}

static void copysign_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "copysign");
}

static void hypot_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "hypot");
}

static void logaddexp_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "logaddexp");
}

static void mul_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "mul");
}

static void gcd_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "gcd");
}

static void bitwise_and_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "bitwise_and");
}

static void add_mps_kernel(TensorIteratorBase& iter, const Scalar& alpha) {
  lib.exec_binary_kernel(iter, "add_alpha", alpha);
}

static void polar_mps_kernel(TensorIterator& iter) {
  lib.exec_binary_kernel(iter, "polar");
}

REGISTER_DISPATCH(fmax_stub, &fmax_mps_kernel)
REGISTER_DISPATCH(fmin_stub, &fmin_mps_kernel)
REGISTER_DISPATCH(copysign_stub, &copysign_mps_kernel)
REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);
REGISTER_DISPATCH(logaddexp_stub, &logaddexp_mps_kernel)
REGISTER_DISPATCH(mul_stub, &mul_mps_kernel)
REGISTER_DISPATCH(gcd_stub, &gcd_mps_kernel);
REGISTER_DISPATCH(bitwise_and_stub, &bitwise_and_mps_kernel)
REGISTER_DISPATCH(add_stub, &add_mps_kernel)
REGISTER_DISPATCH(polar_stub, &polar_mps_kernel);
} // namespace at::native
