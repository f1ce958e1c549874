#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/Activation.h>
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/sigmoid_backward_native.h>
#include <ATen/ops/tanh_backward_native.h>
#include <ATen/ops/threshold_native.h>
#endif

namespace at::native {
namespace mps {

typedef MPSGraphTensor* (^TwoInputBlock)(MPSGraph*, MPSGraphTensor*, MPSGraphTensor*);

// Small driver shared by the activation kernels below: two placeholders in,
// one tensor out, cached under `key`.
static void run_two_input_graph(const std::string& key,
                                const Tensor& first,
                                const Tensor& second,
                                const Tensor& result,
                                TwoInputBlock block) {
  if (result.numel() == 0) {
    return;
  }
  @autoreleasepool {
    auto graph = LookUpOrCreateCachedGraph<MPSBinaryCachedGraph>(key, [&](auto* mpsGraph, auto* entry) {
      entry->primaryTensor = mpsGraphRankedPlaceHolder(mpsGraph, first);
      entry->secondaryTensor = mpsGraphRankedPlaceHolder(mpsGraph, second);
      entry->outputTensor = block(mpsGraph, entry->primaryTensor, entry->secondaryTensor);
    });
    auto a = Placeholder(graph->primaryTensor, first);
    auto b = Placeholder(graph->secondaryTensor, second);
    auto out = Placeholder(graph->outputTensor, result);
    runMPSGraph(getCurrentMPSStream(), graph->graph(), dictionaryFromPlaceholders(a, b), out);
  }
}

} // namespace mps

TORCH_IMPL_FUNC(sigmoid_backward_out_mps)(const Tensor& grad_output, const Tensor& output, const Tensor& grad_input) {
  const std::string key = "sigmoid_backward" + mps::getTensorsStringKey({grad_output, output});
  mps::run_two_input_graph(
      key, grad_output, output, grad_input, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* grad, MPSGraphTensor* y) {
        // d/dx sigmoid = y * (1 - y)
        MPSGraphTensor* one = [g constantWithScalar:1.0 dataType:[y dataType]];
        MPSGraphTensor* oneMinusY = [g subtractionWithPrimaryTensor:one secondaryTensor:y name:nil];
        MPSGraphTensor* local = [g multiplicationWithPrimaryTensor:y secondaryTensor:oneMinusY name:nil];
        return [g multiplicationWithPrimaryTensor:grad secondaryTensor:local name:nil];
      });
}

TORCH_IMPL_FUNC(tanh_backward_out_mps)(const Tensor& grad_output, const Tensor& output, const Tensor& grad_input) {
  const std::string key = "tanh_backward" + mps::getTensorsStringKey({grad_output, output});
  mps::run_two_input_graph(
      key, grad_output, output, grad_input, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* grad, MPSGraphTensor* y) {
        // d/dx tanh = 1 - y^2
        MPSGraphTensor* one = [g constantWithScalar:1.0 dataType:[y dataType]];
        MPSGraphTensor* ySquared = [g squareWithTensor:y name:nil];
        MPSGraphTensor* local = [g subtractionWithPrimaryTensor:one secondaryTensor:ySquared name:nil];
        return [g multiplicationWithPrimaryTensor:grad secondaryTensor:local name:nil];
      });
}

TORCH_IMPL_FUNC(threshold_out_mps)
(const Tensor& self, const Scalar& threshold, const Scalar& value, const Tensor& result) {
  // Elements at or below the threshold are replaced by `value`.
  const std::string key = "threshold_" + std::to_string(threshold.to<double>()) + "_" +
      std::to_string(value.to<double>()) + mps::getTensorsStringKey({self});
  const double thr = threshold.to<double>();
  const double val = value.to<double>();
  mps::run_two_input_graph(key, self, self, result, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x, MPSGraphTensor*) {
    MPSGraphTensor* thrT = [g constantWithScalar:thr dataType:[x dataType]];
    MPSGraphTensor* valT = [g constantWithScalar:val dataType:[x dataType]];
    MPSGraphTensor* keep = [g greaterThanWithPrimaryTensor:x secondaryTensor:thrT name:nil];
    return [g selectWithPredicateTensor:keep truePredicateTensor:x falsePredicateTensor:valT name:nil];
  });
}

} // namespace at::native
