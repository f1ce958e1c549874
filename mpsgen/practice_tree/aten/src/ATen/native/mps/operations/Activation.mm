#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/Activation.h>
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/gelu_backward_native.h>
#include <ATen/ops/gelu_native.h>
#include <ATen/ops/sigmoid_backward_native.h>
#include <ATen/ops/softplus_backward_native.h>
#include <ATen/ops/softplus_native.h>
#include <ATen/ops/tanh_backward_native.h>
#include <ATen/ops/threshold_backward_native.h>
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
      entry->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, first);
      entry->otherTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, second);
      entry->outputTensor_ = block(mpsGraph, entry->inputTensor_, entry->otherTensor_);
    });
    auto a = Placeholder(graph->inputTensor_, first);
    auto b = Placeholder(graph->otherTensor_, second);
    auto out = Placeholder(graph->outputTensor_, result);
    runMPSGraph(getCurrentMPSStream(), graph->graph(), dictionaryFromPlaceholders(a, b), out);
  }
}

// Phi(x) = 0.5 * (1 + erf(x / sqrt(2))): the normal CDF both gelu kernels use.
static MPSGraphTensor* normal_cdf(MPSGraph* g, MPSGraphTensor* x) {
  MPSGraphTensor* half = [g constantWithScalar:0.5 dataType:[x dataType]];
  MPSGraphTensor* one = [g constantWithScalar:1.0 dataType:[x dataType]];
  MPSGraphTensor* scale = [g constantWithScalar:M_SQRT1_2 dataType:[x dataType]];
  MPSGraphTensor* erfT = [g erfWithTensor:[g multiplicationWithPrimaryTensor:x secondaryTensor:scale name:nil]
                                     name:nil];
  return [g multiplicationWithPrimaryTensor:half
                            secondaryTensor:[g additionWithPrimaryTensor:one secondaryTensor:erfT name:nil]
                                       name:nil];
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

TORCH_IMPL_FUNC(gelu_out_mps)(const Tensor& self, std::string_view approximate, const Tensor& output) {
  TORCH_CHECK(get_gelutype_enum(approximate) == GeluType::None,
              "the practice tree's MPS gelu has no tanh approximation");
  const std::string key = "gelu" + mps::getTensorsStringKey({self});
  mps::run_two_input_graph(key, self, self, output, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x, MPSGraphTensor*) {
    return [g multiplicationWithPrimaryTensor:x secondaryTensor:mps::normal_cdf(g, x) name:nil];
  });
}

TORCH_IMPL_FUNC(gelu_backward_out_mps)
(const Tensor& grad, const Tensor& self, std::string_view approximate, const Tensor& grad_input) {
  TORCH_CHECK(get_gelutype_enum(approximate) == GeluType::None,
              "the practice tree's MPS gelu has no tanh approximation");
  const std::string key = "gelu_backward" + mps::getTensorsStringKey({grad, self});
  mps::run_two_input_graph(
      key, grad, self, grad_input, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* dy, MPSGraphTensor* x) {
        // d/dx x * Phi(x) = Phi(x) + x * phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        MPSGraphTensor* minusHalf = [g constantWithScalar:-0.5 dataType:[x dataType]];
        MPSGraphTensor* norm = [g constantWithScalar:0.3989422804014327 dataType:[x dataType]];
        MPSGraphTensor* square = [g squareWithTensor:x name:nil];
        MPSGraphTensor* pdf =
            [g multiplicationWithPrimaryTensor:norm
                               secondaryTensor:[g exponentWithTensor:[g multiplicationWithPrimaryTensor:square
                                                                                        secondaryTensor:minusHalf
                                                                                                   name:nil]
                                                                name:nil]
                                          name:nil];
        MPSGraphTensor* local = [g additionWithPrimaryTensor:mps::normal_cdf(g, x)
                                             secondaryTensor:[g multiplicationWithPrimaryTensor:x
                                                                                secondaryTensor:pdf
                                                                                           name:nil]
                                                        name:nil];
        return [g multiplicationWithPrimaryTensor:dy secondaryTensor:local name:nil];
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

TORCH_IMPL_FUNC(threshold_backward_out_mps)
(const Tensor& grad, const Tensor& self, const Scalar& threshold, const Tensor& gradInput) {
  // The gradient passes where the forward kept its input, and is zero elsewhere.
  const double thr = threshold.to<double>();
  const std::string key = "threshold_backward_" + std::to_string(thr) + mps::getTensorsStringKey({grad, self});
  mps::run_two_input_graph(
      key, grad, self, gradInput, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* gradT, MPSGraphTensor* x) {
        MPSGraphTensor* thrT = [g constantWithScalar:thr dataType:[x dataType]];
        MPSGraphTensor* zero = [g constantWithScalar:0.0 dataType:[gradT dataType]];
        MPSGraphTensor* keep = [g greaterThanWithPrimaryTensor:x secondaryTensor:thrT name:nil];
        return [g selectWithPredicateTensor:keep truePredicateTensor:gradT falsePredicateTensor:zero name:nil];
      });
}

TORCH_IMPL_FUNC(softplus_out_mps)
(const Tensor& self, const Scalar& beta, const Scalar& threshold, const Tensor& result) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != kLong, "softplus is not implemented for long on MPS");
  // log(1 + exp(beta * x)) / beta, linear once beta * x passes the threshold.
  const double b = beta.to<double>();
  const double thr = threshold.to<double>();
  const std::string key =
      "softplus_" + std::to_string(b) + "_" + std::to_string(thr) + mps::getTensorsStringKey({self});
  mps::run_two_input_graph(key, self, self, result, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x, MPSGraphTensor*) {
    MPSGraphTensor* betaT = [g constantWithScalar:b dataType:[x dataType]];
    MPSGraphTensor* thrT = [g constantWithScalar:thr dataType:[x dataType]];
    MPSGraphTensor* one = [g constantWithScalar:1.0 dataType:[x dataType]];
    MPSGraphTensor* scaled = [g multiplicationWithPrimaryTensor:x secondaryTensor:betaT name:nil];
    MPSGraphTensor* smooth = [g logarithmWithTensor:[g additionWithPrimaryTensor:one
                                                                 secondaryTensor:[g exponentWithTensor:scaled name:nil]
                                                                            name:nil]
                                               name:nil];
    MPSGraphTensor* soft = [g divisionWithPrimaryTensor:smooth secondaryTensor:betaT name:nil];
    MPSGraphTensor* linear = [g greaterThanWithPrimaryTensor:scaled secondaryTensor:thrT name:nil];
    return [g selectWithPredicateTensor:linear truePredicateTensor:x falsePredicateTensor:soft name:nil];
  });
}

TORCH_IMPL_FUNC(softplus_backward_out_mps)
(const Tensor& grad_output, const Tensor& self, const Scalar& beta, const Scalar& threshold, const Tensor& grad_input) {
  // grad * sigmoid(beta * x), or grad itself where the forward was linear.
  const double b = beta.to<double>();
  const double thr = threshold.to<double>();
  const std::string key = "softplus_backward_" + std::to_string(b) + "_" + std::to_string(thr) +
      mps::getTensorsStringKey({grad_output, self});
  mps::run_two_input_graph(
      key, grad_output, self, grad_input, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* grad, MPSGraphTensor* x) {
        MPSGraphTensor* betaT = [g constantWithScalar:b dataType:[x dataType]];
        MPSGraphTensor* thrT = [g constantWithScalar:thr dataType:[x dataType]];
        MPSGraphTensor* scaled = [g multiplicationWithPrimaryTensor:x secondaryTensor:betaT name:nil];
        MPSGraphTensor* local = [g sigmoidWithTensor:scaled name:nil];
        MPSGraphTensor* smooth = [g multiplicationWithPrimaryTensor:grad secondaryTensor:local name:nil];
        MPSGraphTensor* linear = [g greaterThanWithPrimaryTensor:scaled secondaryTensor:thrT name:nil];
        return [g selectWithPredicateTensor:linear truePredicateTensor:grad falsePredicateTensor:smooth name:nil];
      });
}

} // namespace at::native
