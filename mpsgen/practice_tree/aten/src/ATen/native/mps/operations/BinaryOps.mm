#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/ExpandUtils.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/full_like.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/pow_native.h>
#include <ATen/ops/sub_native.h>
#endif

namespace at::native {
namespace mps {

typedef MPSGraphTensor* (^BinaryOpBlock)(MPSGraph*, MPSGraphTensor*, MPSGraphTensor*);

// Runs `block` on two tensors through a cached two-input graph. The result is
// cast to the output dtype before being written back.
static void binaryOpTensor(const Tensor& self,
                           const Tensor& other,
                           const Tensor& output,
                           std::string op_name,
                           BinaryOpBlock block) {
  if (output.numel() == 0) {
    return;
  }
  @autoreleasepool {
    const std::string key = op_name + getTensorsStringKey({self, other, output});
    auto graph = LookUpOrCreateCachedGraph<MPSBinaryCachedGraph>(key, [&](auto* mpsGraph, auto* entry) {
      entry->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, self);
      entry->otherTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, other);
      MPSGraphTensor* raw = block(mpsGraph, entry->inputTensor_, entry->otherTensor_);
      entry->outputTensor_ = castMPSTensor(mpsGraph, raw, output.scalar_type());
    });
    auto lhs = Placeholder(graph->inputTensor_, self);
    auto rhs = Placeholder(graph->otherTensor_, other);
    auto out = Placeholder(graph->outputTensor_, output);
    runMPSGraph(getCurrentMPSStream(), graph->graph(), dictionaryFromPlaceholders(lhs, rhs), out);
  }
}

// Shared body for ops of the form `self <op> alpha * other`.
static void add_sub_lerp_template(const Tensor& self,
                                  const Tensor& other,
                                  const Scalar& alpha,
                                  const Tensor& output,
                                  std::string op_name) {
  const bool unit_alpha = alpha.equal(1);
  const std::string key_name = op_name + (unit_alpha ? "" : "_alpha");
  binaryOpTensor(
      self, other, output, key_name, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* a, MPSGraphTensor* b) {
        MPSGraphTensor* scaled = b;
        if (!unit_alpha) {
          MPSGraphTensor* k = [g constantWithScalar:alpha.to<double>() dataType:[b dataType]];
          scaled = [g multiplicationWithPrimaryTensor:b secondaryTensor:k name:nil];
        }
        if (op_name == "sub") {
          return [g subtractionWithPrimaryTensor:a secondaryTensor:scaled name:nil];
        }
        return [g additionWithPrimaryTensor:a secondaryTensor:scaled name:nil];
      });
}

} // namespace mps

#define CREATE_MPS_STRUCTURED_BINARY_OP_FUNC(func_out, func_stub, other_type)                          \
  TORCH_IMPL_FUNC(func_out)(const Tensor& self, const other_type& other, const Tensor& output) {       \
    mps::binaryOp##other_type(self, other, output, #func_stub,                                         \
                              ^MPSGraphTensor*(MPSGraph * g, MPSGraphTensor * a, MPSGraphTensor * b) { \
                                return [g func_stub##WithPrimaryTensor:a secondaryTensor:b name:nil];  \
                              });                                                                      \
  }

CREATE_MPS_STRUCTURED_BINARY_OP_FUNC(pow_tensor_tensor_out_mps, power, Tensor);

TORCH_IMPL_FUNC(sub_out_mps)(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& output) {
  mps::add_sub_lerp_template(self, other, alpha, output, "sub");
}

TORCH_IMPL_FUNC(pow_Scalar_out_mps)(const Scalar& base, const Tensor& exp, const Tensor& result) {
  // Materialise the scalar base as a tensor shaped like `exp`, then reuse the
  // tensor-tensor path.
  if (base.equal(1.0)) {
    result.fill_(1);
    return;
  }
  const Tensor base_tensor = at::full_like(exp, base, result.options());
  at::pow_out(const_cast<Tensor&>(result), base_tensor, exp);
}

} // namespace at::native
