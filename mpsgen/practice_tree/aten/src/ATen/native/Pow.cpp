// mpsgen practice tree: the pow kernels in the shape of PyTorch's
// aten/src/ATen/native/Pow.cpp (one stub per overload), for mpsgen's own tests.
#include <ATen/native/Pow.h>

namespace at::native {

DEFINE_DISPATCH(pow_tensor_tensor_stub);
DEFINE_DISPATCH(pow_tensor_scalar_stub);

TORCH_IMPL_FUNC(pow_Tensor_Tensor_out)(const Tensor& base, const Tensor& exp, const Tensor& out) {
  pow_tensor_tensor_stub(device_type(), *this);
}

TORCH_IMPL_FUNC(pow_Tensor_Scalar_out)(const Tensor& base, const Scalar& exp, const Tensor& out) {
  if (exp.equal(0.0)) {
    out.fill_(1);
  } else {
    pow_tensor_scalar_stub(device_type(), *this, exp);
  }
}

} // namespace at::native
