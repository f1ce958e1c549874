// mpsgen practice tree: structured binary kernels written in the shape PyTorch's
// aten/src/ATen/native/BinaryOps.cpp has (what calls which dispatch stub), for mpsgen's
// own tests. Not PyTorch's code.
#include <ATen/native/BinaryOps.h>

namespace at::native {

DEFINE_DISPATCH(add_stub);
DEFINE_DISPATCH(sub_stub);
DEFINE_DISPATCH(atan2_stub);
DEFINE_DISPATCH(heaviside_stub);
DEFINE_DISPATCH(laguerre_polynomial_l_stub);
DEFINE_DISPATCH(legendre_polynomial_p_stub);

// subtraction reuses the addition kernel with the scale negated
TORCH_IMPL_FUNC(sub_out)
(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& result) {
  add_stub(device_type(), *this, -alpha);
}

#define PRACTICE_BINARY_IMPL(kernel_name, stub_name)                                        \
  TORCH_IMPL_FUNC(kernel_name)(const Tensor& self, const Tensor& other, const Tensor& out) { \
    stub_name(device_type(), *this);                                                        \
  }

PRACTICE_BINARY_IMPL(atan2_out, atan2_stub)
PRACTICE_BINARY_IMPL(heaviside_out, heaviside_stub)

TORCH_IMPL_FUNC(special_laguerre_polynomial_l_out)
(const Tensor& x, const Tensor& n, const Tensor& out) {
  laguerre_polynomial_l_stub(device_type(), *this);
}

TORCH_IMPL_FUNC(special_legendre_polynomial_p_out)
(const Tensor& x, const Tensor& n, const Tensor& out) {
  legendre_polynomial_p_stub(device_type(), *this);
}

} // namespace at::native
