#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/ReduceOps.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/empty.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/prod_native.h>
#include <ATen/ops/std_mean_native.h>
#include <ATen/ops/std_native.h>
#include <ATen/ops/trace_native.h>
#include <ATen/ops/var_mean_native.h>
#include <ATen/ops/var_native.h>
#endif

namespace at::native {
namespace mps {

enum class GraphReduction { SUM, PROD };

// Builds (or fetches from the cache) a graph reducing `input` over `dims` into
// `output`, cast to the output's type first.
static void graph_reduce(const Tensor& input,
                         IntArrayRef dims,
                         const Tensor& output,
                         GraphReduction kind,
                         const std::string& name) {
  if (output.numel() == 0) {
    return;
  }
  @autoreleasepool {
    const std::string key = name + getTensorsStringKey({input, output}) + ":" + getArrayRefString(dims);
    auto graph = LookUpOrCreateCachedGraph<MPSUnaryCachedGraph>(key, [&](auto* mpsGraph, auto* entry) {
      entry->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, input);
      MPSGraphTensor* cast = castMPSTensor(mpsGraph, entry->inputTensor_, output.scalar_type());
      NSMutableArray<NSNumber*>* axes = [NSMutableArray arrayWithCapacity:dims.size()];
      for (const auto d : dims) {
        [axes addObject:@(d)];
      }
      MPSGraphTensor* reduced = nil;
      if (kind == GraphReduction::PROD) {
        reduced = [mpsGraph reductionProductWithTensor:cast axes:axes name:nil];
      } else {
        reduced = [mpsGraph reductionSumWithTensor:cast axes:axes name:nil];
      }
      entry->outputTensor_ = [mpsGraph reshapeTensor:reduced withShape:getMPSShape(output) name:nil];
    });
    auto inputPlaceholder = Placeholder(graph->inputTensor_, input);
    auto outputPlaceholder = Placeholder(graph->outputTensor_, output);
    runMPSGraph(getCurrentMPSStream(), graph->graph(), dictionaryFromPlaceholders(inputPlaceholder), outputPlaceholder);
  }
}

// Every dimension of `self`, for a reduction to one element.
static std::vector<int64_t> all_dims(const Tensor& self) {
  std::vector<int64_t> dims(self.dim());
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}

// The variance (or its root) of `input` over `dims` through MPSGraph: the squared deviations
// from the mean, summed and divided by the count less the correction.
static Tensor graph_std_var(const Tensor& input,
                            at::OptionalIntArrayRef dim,
                            const std::optional<Scalar>& correction,
                            bool keepdim,
                            bool take_sqrt,
                            const std::string& name) {
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), name, ": floating point inputs only on MPS");
  const auto dims = dim.has_value() ? dim->vec() : all_dims(input);
  Tensor output = at::empty(meta::get_reduction_shape(input, dims, keepdim), input.options());
  int64_t count = 1;
  for (const auto d : dims) {
    count *= input.size(maybe_wrap_dim(d, input.dim()));
  }
  const double divisor = std::max(0.0, count - correction.value_or(1).toDouble());
  @autoreleasepool {
    const std::string key = name + getTensorsStringKey({input}) + ":" + getArrayRefString(dims) + ":" +
        std::to_string(divisor) + ":" + std::to_string(keepdim);
    auto graph = LookUpOrCreateCachedGraph<MPSUnaryCachedGraph>(key, [&](auto* mpsGraph, auto* entry) {
      entry->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, input);
      NSMutableArray<NSNumber*>* axes = [NSMutableArray arrayWithCapacity:dims.size()];
      for (const auto d : dims) {
        [axes addObject:@(maybe_wrap_dim(d, input.dim()))];
      }
      MPSGraphTensor* mean = [mpsGraph meanOfTensor:entry->inputTensor_ axes:axes name:nil];
      MPSGraphTensor* deviation = [mpsGraph subtractionWithPrimaryTensor:entry->inputTensor_
                                                         secondaryTensor:mean
                                                                    name:nil];
      MPSGraphTensor* squares = [mpsGraph squareWithTensor:deviation name:nil];
      MPSGraphTensor* sum = [mpsGraph reductionSumWithTensor:squares axes:axes name:nil];
      MPSGraphTensor* scale = [mpsGraph constantWithScalar:divisor dataType:getMPSDataType(input)];
      MPSGraphTensor* result = [mpsGraph divisionWithPrimaryTensor:sum secondaryTensor:scale name:nil];
      if (take_sqrt) {
        result = [mpsGraph squareRootWithTensor:result name:nil];
      }
      entry->outputTensor_ = [mpsGraph reshapeTensor:result withShape:getMPSShape(output) name:nil];
    });
    auto inputPlaceholder = Placeholder(graph->inputTensor_, input);
    auto outputPlaceholder = Placeholder(graph->outputTensor_, output);
    runMPSGraph(getCurrentMPSStream(), graph->graph(), dictionaryFromPlaceholders(inputPlaceholder), outputPlaceholder);
  }
  return output;
}

} // namespace mps

Tensor trace_mps(const Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: a 2-D tensor is expected, got ", self.dim(), " dimensions");
  Tensor diagonal = self.diagonal();
  Tensor result = at::empty({}, diagonal.options());
  mps::graph_reduce(diagonal, {0}, result, mps::GraphReduction::SUM, "trace_mps");
  return result;
}

TORCH_IMPL_FUNC(prod_out_mps)
(const Tensor& input, int64_t dim, bool keepdim, std::optional<ScalarType> dtype, const Tensor& output) {
  const int64_t wrapped = maybe_wrap_dim(dim, input.dim());
  mps::graph_reduce(input, IntArrayRef(&wrapped, 1), output, mps::GraphReduction::PROD, "prod_out_mps");
}

Tensor prod_mps(const Tensor& self, std::optional<ScalarType> opt_dtype) {
  const ScalarType dtype = opt_dtype.value_or(
      at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? ScalarType::Long : self.scalar_type());
  Tensor result = at::empty({}, self.options().dtype(dtype));
  if (self.numel() == 0) {
    result.fill_(1);
    return result;
  }
  mps::graph_reduce(self, mps::all_dims(self), result, mps::GraphReduction::PROD, "prod_mps");
  return result;
}

Tensor var_mps(const Tensor& input,
               at::OptionalIntArrayRef dim,
               const std::optional<Scalar>& correction,
               bool keepdim) {
  return mps::graph_std_var(input, dim, correction, keepdim, /*take_sqrt=*/false, "var_mps");
}

Tensor std_mps(const Tensor& input,
               at::OptionalIntArrayRef dim,
               const std::optional<Scalar>& correction,
               bool keepdim) {
  return mps::graph_std_var(input, dim, correction, keepdim, /*take_sqrt=*/true, "std_mps");
}

std::tuple<Tensor, Tensor> var_mean_mps(const Tensor& input,
                                        at::OptionalIntArrayRef dim,
                                        const std::optional<Scalar>& correction,
                                        bool keepdim) {
  Tensor var = mps::graph_std_var(input, dim, correction, keepdim, /*take_sqrt=*/false, "var_mean_mps");
  return std::make_tuple(var, at::mean(input, dim, keepdim));
}

std::tuple<Tensor, Tensor> std_mean_mps(const Tensor& input,
                                        at::OptionalIntArrayRef dim,
                                        const std::optional<Scalar>& correction,
                                        bool keepdim) {
  Tensor std = mps::graph_std_var(input, dim, correction, keepdim, /*take_sqrt=*/true, "std_mean_mps");
  return std::make_tuple(std, at::mean(input, dim, keepdim));
}

} // namespace at::native
