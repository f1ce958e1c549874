// Practice-tree stand-in for the CPU side of the activations: the structured
// impls hand the iterator built by their meta functions to the dispatch stubs.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/Activation.h>

namespace at::meta {

// threshold runs one stub for the forward and the backward: its iterator reads
// (self, self), the backward's (self, grad), so both are binary.
TORCH_META_FUNC(threshold)(
    const Tensor& self,
    const Scalar& threshold,
    const Scalar& value) {
  const Tensor& result = maybe_get_output();
  build(
      TensorIteratorConfig()
          .set_check_mem_overlap(false)
          .add_output(result)
          .add_const_input(self)
          .add_const_input(self)
          .allow_cpu_scalars(true)
          .promote_inputs_to_common_dtype(true)
          .cast_common_dtype_to_outputs(true)
          .enforce_safe_casting_to_output(true));
}

TORCH_META_FUNC(
    softplus)(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  build_unary_op(maybe_get_output(), self);
}

} // namespace at::meta

namespace at::native {

TORCH_IMPL_FUNC(threshold_out)(
    const Tensor& self,
    const Scalar& threshold,
    const Scalar& value,
    const Tensor& result) {
  threshold_stub(device_type(), *this, threshold, value);
}

TORCH_IMPL_FUNC(threshold_backward_out)
(const Tensor& grad,
 const Tensor& self,
 const Scalar& threshold,
 const Tensor& gradInput) {
  threshold_stub(device_type(), *this, threshold, 0);
}

TORCH_IMPL_FUNC(softplus_out)(
    const Tensor& self,
    const Scalar& beta,
    const Scalar& threshold,
    const Tensor& result) {
  softplus_stub(device_type(), *this, beta, threshold);
}

TORCH_IMPL_FUNC(softplus_backward_out)
(const Tensor& grad_output,
 const Tensor& self,
 const Scalar& beta,
 const Scalar& threshold,
 const Tensor& grad_input) {
  softplus_backward_stub(device_type(), *this, beta, threshold);
}

TORCH_IMPL_FUNC(gelu_out_cpu)(
    const Tensor& self,
    std::string_view approximate,
    const Tensor& result) {
  GeluKernel(kCPU, *this, get_gelutype_enum(approximate));
}

TORCH_IMPL_FUNC(gelu_backward_out_cpu)
(const Tensor& grad,
 const Tensor& self,
 std::string_view approximate,
 const Tensor& grad_input) {
  GeluBackwardKernel(kCPU, *this, get_gelutype_enum(approximate));
}

} // namespace at::native
