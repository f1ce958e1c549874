// mpsgen practice tree: unary kernels in the shape of PyTorch's
// aten/src/ATen/native/UnaryOps.cpp (macro-made structured kernels, plain out= functions),
// for mpsgen's own tests.
#include <ATen/native/UnaryOps.h>

namespace at::native {

#define PRACTICE_UNARY_IMPL(out_name, stub_name)                      \
  TORCH_IMPL_FUNC(out_name)(const Tensor& self, const Tensor& result) { \
    stub_name(device_type(), *this);                                    \
  }

PRACTICE_UNARY_IMPL(acosh_out, acosh_stub)
PRACTICE_UNARY_IMPL(asinh_out, asinh_stub)
PRACTICE_UNARY_IMPL(frac_out, frac_stub)
PRACTICE_UNARY_IMPL(special_ndtri_out, special_ndtri_stub)

Tensor& signbit_out(const Tensor& self, Tensor& result) {
  auto iter = TensorIterator::unary_force_boolean_op(result, self);
  signbit_stub(iter.device_type(), iter);
  return result;
}

Tensor& logit_out(const Tensor& self, std::optional<double> eps, Tensor& result) {
  auto iter = TensorIterator::unary_float_op(result, self);
  logit_stub(iter.device_type(), iter, Scalar(eps ? eps.value() : -1.0));
  return result;
}

Tensor& nan_to_num_out(
    const Tensor& self,
    std::optional<double> nan,
    std::optional<double> pos_inf,
    std::optional<double> neg_inf,
    Tensor& result) {
  TORCH_CHECK(
      self.scalar_type() == result.scalar_type(),
      "nan_to_num: dtype of out: ",
      result.scalar_type(),
      " should be same as input: ",
      self.scalar_type());
  // integral and bool tensors hold no NaN or infinity: a copy, no kernel
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(result, self.sizes());
    result.copy_(self);
    return result;
  }
  auto iter = TensorIterator::unary_op(result, self);
  nan_to_num_stub(iter.device_type(), iter, nan, pos_inf, neg_inf);
  return result;
}

} // namespace at::native
