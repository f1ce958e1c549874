// mpsgen practice tree: an MPSGraph kernel in the shape of PyTorch's
// operations/TensorCompare.mm, for mpsgen's own migration tests.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/Resize.h>
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/nan_to_num_native.h>
#endif

namespace at::native {

Tensor& nan_to_num_out_mps(const Tensor& self,
                           std::optional<double> nan,
                           std::optional<double> pos_inf,
                           std::optional<double> neg_inf,
                           Tensor& result) {
  TORCH_CHECK(self.scalar_type() == result.scalar_type(),
              "nan_to_num: dtype of out: ",
              result.scalar_type(),
              " should be same as input: ",
              self.scalar_type());
  if (result.numel() == 0) {
    return result;
  }
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(result, self.sizes());
    result.copy_(self);
    return result;
  }
  // Three replacements, chained: NaN first, then each infinity by its sign.
  const double nan_value = nan.value_or(0.0);
  const double max_value = pos_inf.value_or(std::numeric_limits<double>::max());
  const double min_value = neg_inf.value_or(std::numeric_limits<double>::lowest());
  @autoreleasepool {
    const std::string key = "nan_to_num" + std::to_string(nan_value) + "_" + std::to_string(max_value) + "_" +
        std::to_string(min_value) + mps::getTensorsStringKey({self});
    auto graph = mps::LookUpOrCreateCachedGraph<mps::MPSUnaryCachedGraph>(key, [&](auto* g, auto* entry) {
      entry->inputTensor_ = mps::mpsGraphRankedPlaceHolder(g, self);
      MPSGraphTensor* x = entry->inputTensor_;
      MPSGraphTensor* nanT = [g constantWithScalar:nan_value dataType:[x dataType]];
      MPSGraphTensor* maxT = [g constantWithScalar:max_value dataType:[x dataType]];
      MPSGraphTensor* minT = [g constantWithScalar:min_value dataType:[x dataType]];
      MPSGraphTensor* zero = [g constantWithScalar:0.0 dataType:[x dataType]];
      MPSGraphTensor* noNan = [g selectWithPredicateTensor:[g isNaNWithTensor:x name:nil]
                                       truePredicateTensor:nanT
                                      falsePredicateTensor:x
                                                      name:nil];
      MPSGraphTensor* inf = [g isInfiniteWithTensor:noNan name:nil];
      MPSGraphTensor* negative = [g lessThanWithPrimaryTensor:noNan secondaryTensor:zero name:nil];
      MPSGraphTensor* negInf = [g logicalANDWithPrimaryTensor:inf secondaryTensor:negative name:nil];
      MPSGraphTensor* noNegInf = [g selectWithPredicateTensor:negInf
                                          truePredicateTensor:minT
                                         falsePredicateTensor:noNan
                                                         name:nil];
      entry->outputTensor_ = [g selectWithPredicateTensor:[g isInfiniteWithTensor:noNegInf name:nil]
                                      truePredicateTensor:maxT
                                     falsePredicateTensor:noNegInf
                                                     name:nil];
    });
    auto input = mps::Placeholder(graph->inputTensor_, self);
    auto output = mps::Placeholder(graph->outputTensor_, result);
    mps::runMPSGraph(getCurrentMPSStream(), graph->graph(), mps::dictionaryFromPlaceholders(input), output);
  }
  return result;
}

} // namespace at::native
