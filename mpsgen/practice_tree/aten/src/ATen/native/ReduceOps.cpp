// mpsgen practice tree: reductions in the shape of PyTorch's aten/src/ATen/native/ReduceOps.cpp
// (a static helper reaching the stub, a device check before it), for mpsgen's own tests.
#include <ATen/native/ReduceOps.h>
#include <ATen/native/ReduceOpsUtils.h>

namespace at::native {

DEFINE_DISPATCH(prod_stub);
DEFINE_DISPATCH(std_var_stub);

// Nothing to multiply gives the empty product.
static void impl_func_prod(const Tensor& self, IntArrayRef dims, bool keepdim, const Tensor& result) {
  auto iter = meta::make_reduction_from_out_ty(self, result, dims, keepdim, result.scalar_type());
  if (iter.numel() == 0) {
    result.fill_(1);
    return;
  }
  prod_stub(iter.device_type(), iter);
}

TORCH_IMPL_FUNC(prod_out)
(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype, const Tensor& result) {
  impl_func_prod(self, dim, keepdim, result);
}

Tensor prod(const Tensor& self, std::optional<ScalarType> opt_dtype) {
  const auto dtype = get_dtype_from_self(self, opt_dtype, /*promote_integers=*/true);
  Tensor result = at::empty(meta::get_reduction_shape(self, {}, false), self.options().dtype(dtype));
  impl_func_prod(self, {}, false, result);
  return result;
}

// var and std (one output): the variance of the reduced elements, its root when asked.
static Tensor& std_var_out(const char* fname,
                           Tensor& result,
                           const Tensor& self,
                           at::OptionalIntArrayRef dim,
                           const std::optional<Scalar>& correction_opt,
                           bool keepdim,
                           bool take_sqrt) {
  TORCH_CHECK(self.device().is_cpu() || self.device().is_cuda() || self.device().is_xpu(),
              fname, ": a tensor on a CPU, CUDA, or XPU device is expected, got ", self.device().type());
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              fname, ": floating point and complex inputs only");
  if (at::isComplexType(self.scalar_type())) {
    // a complex variance is the sum of its parts' variances (each reduced as a real tensor)
    const ScalarType part_type = c10::toRealValueType(get_dtype_from_result(result, {}));
    Tensor real_part = at::empty({0}, self.options().dtype(part_type));
    Tensor imag_part = at::empty({0}, self.options().dtype(part_type));
    std_var_out(fname, real_part, at::real(self), dim, correction_opt, keepdim, /*take_sqrt=*/false);
    std_var_out(fname, imag_part, at::imag(self), dim, correction_opt, keepdim, /*take_sqrt=*/false);
    at::add_out(result, real_part, imag_part);
    if (take_sqrt) {
      at::sqrt_out(result, result);
    }
    return result;
  }
  const double correction = correction_opt.value_or(1).toDouble();
  auto iter = make_reduction(fname, result, self, dim, keepdim, self.scalar_type());
  if (iter.numel() == 0) {
    result.fill_(std::numeric_limits<double>::quiet_NaN());
    return result;
  }
  std_var_stub(iter.device_type(), iter, correction, take_sqrt);
  return result;
}

// var_mean and std_mean (two outputs): the variance (or its root), then the mean.
static std::tuple<Tensor&, Tensor&> std_var_mean_out(const char* fname,
                                                     Tensor& result1,
                                                     Tensor& result2,
                                                     const Tensor& self,
                                                     at::OptionalIntArrayRef dim,
                                                     const std::optional<Scalar>& correction_opt,
                                                     bool keepdim,
                                                     bool take_sqrt) {
  TORCH_CHECK(self.device().is_cpu() || self.device().is_cuda() || self.device().is_xpu(),
              fname, ": a tensor on a CPU, CUDA, or XPU device is expected, got ", self.device().type());
  if (at::isComplexType(self.scalar_type())) {
    // the parts reduced as real tensors: the variances add up, the means make the complex mean
    const ScalarType part_type = c10::toRealValueType(get_dtype_from_result(result1, {}));
    Tensor real_var = at::empty({0}, self.options().dtype(part_type));
    Tensor real_mean = at::empty({0}, self.options().dtype(part_type));
    Tensor imag_var = at::empty({0}, self.options().dtype(part_type));
    Tensor imag_mean = at::empty({0}, self.options().dtype(part_type));
    std_var_mean_out(fname, real_var, real_mean, at::real(self), dim, correction_opt, keepdim, /*take_sqrt=*/false);
    std_var_mean_out(fname, imag_var, imag_mean, at::imag(self), dim, correction_opt, keepdim, /*take_sqrt=*/false);
    at::add_out(result1, real_var, imag_var);
    if (take_sqrt) {
      at::sqrt_out(result1, result1);
    }
    at::complex_out(result2, real_mean, imag_mean);
    return std::tuple<Tensor&, Tensor&>(result1, result2);
  }
  const double correction = correction_opt.value_or(1).toDouble();
  auto iter = make_reduction(fname, result1, result2, self, dim, keepdim, self.scalar_type());
  if (iter.numel() == 0) {
    result1.fill_(std::numeric_limits<double>::quiet_NaN());
    result2.fill_(std::numeric_limits<double>::quiet_NaN());
    return std::tuple<Tensor&, Tensor&>(result1, result2);
  }
  std_var_stub(iter.device_type(), iter, correction, take_sqrt);
  return std::tuple<Tensor&, Tensor&>(result1, result2);
}

Tensor var(const Tensor& self, at::OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim) {
  Tensor result = at::empty({0}, self.options());
  return std_var_out("var", result, self, dim, correction, keepdim, false);
}

Tensor std(const Tensor& self, at::OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim) {
  Tensor result = at::empty({0}, self.options());
  return std_var_out("std", result, self, dim, correction, keepdim, true);
}

Tensor& var_out(const Tensor& self,
                at::OptionalIntArrayRef dim,
                const std::optional<Scalar>& correction,
                bool keepdim,
                Tensor& result) {
  return std_var_out("var", result, self, dim, correction, keepdim, false);
}

Tensor& std_out(const Tensor& self,
                at::OptionalIntArrayRef dim,
                const std::optional<Scalar>& correction,
                bool keepdim,
                Tensor& result) {
  return std_var_out("std", result, self, dim, correction, keepdim, true);
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& self,
                                    at::OptionalIntArrayRef dim,
                                    const std::optional<Scalar>& correction,
                                    bool keepdim) {
  Tensor result1 = at::empty({0}, self.options());
  Tensor result2 = at::empty({0}, self.options());
  return std_var_mean_out("var_mean", result1, result2, self, dim, correction, keepdim, false);
}

std::tuple<Tensor, Tensor> std_mean(const Tensor& self,
                                    at::OptionalIntArrayRef dim,
                                    const std::optional<Scalar>& correction,
                                    bool keepdim) {
  Tensor result1 = at::empty({0}, self.options());
  Tensor result2 = at::empty({0}, self.options());
  return std_var_mean_out("std_mean", result1, result2, self, dim, correction, keepdim, true);
}

} // namespace at::native
