#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/UnaryOps.h>
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/acosh_native.h>
#include <ATen/ops/asinh_native.h>
#include <ATen/ops/atanh_native.h>
#include <ATen/ops/exp_native.h>
#include <ATen/ops/frac_native.h>
#include <ATen/ops/log_native.h>
#include <ATen/ops/sgn_native.h>
#include <ATen/ops/sign_native.h>
#include <ATen/ops/signbit_native.h>
#endif

namespace at::native {
namespace mps {

typedef MPSGraphTensor* (^UnaryOpBlock)(MPSGraph*, MPSGraphTensor*);
using UnaryOpCachedGraph = MPSUnaryCachedGraph;

// A zero-element tensor needs no graph at all.
static bool is_empty_tensor(const Tensor& self) {
  return self.numel() == 0;
}

// Builds (or fetches from the cache) a one-input graph that applies
// `unaryBlock` and writes the result into `output`.
static void unary_op(const Tensor& self, const Tensor& output, std::string op_name, UnaryOpBlock unaryBlock) {
  TORCH_CHECK(self.scalar_type() != ScalarType::Double, "MPS backend has no float64 support for ", op_name);
  if (is_empty_tensor(self)) {
    return;
  }
  @autoreleasepool {
    const std::string key = op_name + getTensorsStringKey({self, output});
    auto graph = LookUpOrCreateCachedGraph<UnaryOpCachedGraph>(key, [&](auto* mpsGraph, auto* entry) {
      entry->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, self);
      MPSGraphTensor* result = unaryBlock(mpsGraph, entry->inputTensor_);
      entry->outputTensor_ = castMPSTensor(mpsGraph, result, output.scalar_type());
    });
    auto inPlaceholder = Placeholder(graph->inputTensor_, self);
    auto outPlaceholder = Placeholder(graph->outputTensor_, output);
    runMPSGraph(getCurrentMPSStream(), graph->graph(), dictionaryFromPlaceholders(inPlaceholder), outPlaceholder);
  }
}

} // namespace mps

#define CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(func_out, func_stub)                                         \
  TORCH_IMPL_FUNC(func_out)(const Tensor& self, const Tensor& output) {                                          \
    mps::unary_op(self, output, #func_out, ^MPSGraphTensor*(MPSGraph * mpsGraph, MPSGraphTensor * inputTensor) { \
      return [mpsGraph func_stub##WithTensor:inputTensor name:nil];                                              \
    });                                                                                                          \
  }

CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(acosh_out_mps, acosh)
CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(asinh_out_mps, asinh)
CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(atanh_out_mps, atanh)

TORCH_IMPL_FUNC(frac_out_mps)(const Tensor& self, const Tensor& output) {
  TORCH_CHECK(isFloatingType(self.scalar_type()), "frac is only defined for floating point inputs");
  mps::unary_op(self, output, "frac_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    // x - trunc(x) keeps the sign of x
    MPSGraphTensor* whole = [mpsGraph truncateWithTensor:inputTensor name:nil];
    return [mpsGraph subtractionWithPrimaryTensor:inputTensor secondaryTensor:whole name:nil];
  });
}

static MPSGraphTensor* sign_tensor(MPSGraph* graph, MPSGraphTensor* x) {
  // Booleans are their own sign; everything else goes through the graph op.
  if ([x dataType] == MPSDataTypeBool) {
    return x;
  }
  return [graph signWithTensor:x name:nil];
}

TORCH_IMPL_FUNC(sign_out_mps)(const Tensor& self, const Tensor& output) {
  mps::unary_op(self, output, "sign_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    return sign_tensor(mpsGraph, inputTensor);
  });
}

TORCH_IMPL_FUNC(sgn_out_mps)(const Tensor& self, const Tensor& output) {
  TORCH_CHECK(!self.is_complex(), "sgn on MPS is only wired up for real inputs in this tree");
  mps::unary_op(self, output, "sgn_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    return [mpsGraph signWithTensor:inputTensor name:nil];
  });
}

TORCH_IMPL_FUNC(signbit_out_mps)(const Tensor& self, const Tensor& output) {
  mps::unary_op(self, output, "signbit_out_mps", ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* inputTensor) {
    return [mpsGraph signbitWithTensor:inputTensor name:nil];
  });
}

} // namespace at::native
