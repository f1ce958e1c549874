// mpsgen practice tree, torch 2.14.1's shape: a reduction dispatcher of the file's own (kernels by op
// prefix) beside the MPSGraph reductions it has not replaced yet.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/Pool.h>
#include <ATen/native/ReduceOps.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/mps/OperationUtils.h>
#include <ATen/native/mps/kernels/ReduceOps.h>
#include <fmt/format.h>

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
using namespace mps;

#ifndef PYTORCH_JIT_COMPILE_SHADERS
static auto& lib = MetalShaderLibrary::getBundledLibrary();
#else
#include <ATen/native/mps/ReduceOps_metallib.h>
#endif

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

// The Metal side of the value reductions of this file: the kernels of an op are named
// "{prefix}reduction_{variant}_{TI}_{TO}" (kernels/ReduceOps.metal registers every variant of a
// prefix and pair through REGISTER_VALUE_REDUCTION_IMPL).
struct ReductionDispatch {
  std::string prefix; // "max_", "min_"
  ScalarType input_kernel_dtype; // the TI of the kernel names
  ScalarType output_kernel_dtype; // the TO of the kernel names
  ScalarType partial_dtype; // what the first pass of a two-pass reduction writes
  std::string pass2_prefix; // the op that folds the partials
  bool has_strided_pass1 = false; // (no strided first pass in this file)
};

// Picks the kernel by shape: the last dim of a contiguous input (one SIMD-group a row), a long
// full reduction (two passes over contiguous slices), else one threadgroup per output element.
static void reduction_dispatch_mps(TensorIterator& iter, const ReductionDispatch& opts) {
  const Tensor& output = iter.output(0);
  const Tensor& input = iter.input(0);
  TORCH_INTERNAL_ASSERT(input.numel() > 0 && output.numel() > 0);
  TORCH_INTERNAL_ASSERT(output.dim() == input.dim());
  const auto reduction_size = safe_downcast<uint32_t, int64_t>(input.numel() / output.numel());
  const auto in_str = scalarToMetalTypeString(opts.input_kernel_dtype);
  const auto out_str = scalarToMetalTypeString(opts.output_kernel_dtype);
  MPSStream* stream = getCurrentMPSStream();
  const auto last = input.dim() - 1;
  const bool inner = input.dim() > 0 && input.is_contiguous() && output.is_contiguous() && output.numel() > 1 &&
      output.size(last) == 1 && input.size(last) == reduction_size;
  if (inner) {
    const auto kernel = fmt::format("{}reduction_inner_{}_{}", opts.prefix, in_str, out_str);
    const std::array<uint32_t, 2> sizes{safe_downcast<uint32_t, int64_t>(output.numel()), reduction_size};
    const auto groups = c10::metal::ceil_div(sizes[0], INNER_TG_SIZE / c10::metal::simdgroup_size);
    dispatch_sync_with_rethrow(stream->queue(), ^() {
      @autoreleasepool {
        id<MTLComputeCommandEncoder> encoder = stream->commandEncoder();
        auto pso = lib.getPipelineStateForFunc(kernel);
        getMPSProfiler().beginProfileKernel(pso, opts.prefix + "reduction_inner", {input});
        [encoder setComputePipelineState:pso];
        mtl_setArgs(encoder, input, output, sizes);
        [encoder dispatchThreads:MTLSizeMake(groups * INNER_TG_SIZE, 1, 1)
            threadsPerThreadgroup:MTLSizeMake(INNER_TG_SIZE, 1, 1)];
        getMPSProfiler().endProfileKernel(pso);
      }
    });
    return;
  }
  if (output.numel() == 1 && input.is_contiguous() && reduction_size > MAX_THREADGROUP_SIZE * SUM_NCHAINS) {
    uint32_t slices = std::min(256u, c10::metal::ceil_div(reduction_size, MAX_THREADGROUP_SIZE * SUM_NCHAINS));
    while (slices > 1 && reduction_size % slices != 0) {
      slices--;
    }
    if (slices > 1) {
      Tensor partials = at::empty({slices}, output.options().dtype(opts.partial_dtype));
      const auto partial_str = scalarToMetalTypeString(opts.partial_dtype);
      const auto first = fmt::format("{}reduction_flat_{}_{}", opts.prefix, in_str, partial_str);
      const auto second = fmt::format("{}reduction_{}_{}", opts.pass2_prefix, partial_str, out_str);
      const std::array<uint32_t, 2> sizes{slices, reduction_size / slices};
      NormParams<> params{};
      params.ndim = 1;
      params.reduction_size = slices;
      params.input_sizes[0] = slices;
      params.input_strides[0] = 1;
      params.output_sizes[0] = 1;
      params.output_strides[0] = 0;
      const auto threads = std::min(MAX_THREADGROUP_SIZE, c10::metal::round_up(slices, 32u));
      dispatch_sync_with_rethrow(stream->queue(), ^() {
        @autoreleasepool {
          id<MTLComputeCommandEncoder> encoder = stream->commandEncoder();
          auto pso = lib.getPipelineStateForFunc(first);
          [encoder setComputePipelineState:pso];
          mtl_setArgs(encoder, input, partials, sizes);
          [encoder dispatchThreads:MTLSizeMake(slices * MAX_THREADGROUP_SIZE, 1, 1)
              threadsPerThreadgroup:MTLSizeMake(MAX_THREADGROUP_SIZE, 1, 1)];
          pso = lib.getPipelineStateForFunc(second);
          [encoder setComputePipelineState:pso];
          mtl_setArgs(encoder, partials, output, params);
          [encoder dispatchThreads:MTLSizeMake(threads, 1, 1) threadsPerThreadgroup:MTLSizeMake(threads, 1, 1)];
        }
      });
      return;
    }
  }
  const auto kernel = fmt::format("{}reduction_{}_{}", opts.prefix, in_str, out_str);
  NormParams<> params{};
  params.ndim = input.dim();
  params.reduction_size = reduction_size;
  for (const auto dim : c10::irange(input.dim())) {
    params.input_sizes[dim] = safe_downcast<uint32_t, int64_t>(input.size(dim));
    params.input_strides[dim] = safe_downcast<uint32_t, int64_t>(input.stride(dim));
    params.output_sizes[dim] = safe_downcast<uint32_t, int64_t>(output.size(dim));
    params.output_strides[dim] = safe_downcast<uint32_t, int64_t>(output.stride(dim));
  }
  // whole SIMD-groups: the padding threads hold the op's identity
  const auto threads = std::min(MAX_THREADGROUP_SIZE, c10::metal::round_up(reduction_size, 32u));
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    @autoreleasepool {
      id<MTLComputeCommandEncoder> encoder = stream->commandEncoder();
      auto pso = lib.getPipelineStateForFunc(kernel);
      getMPSProfiler().beginProfileKernel(pso, opts.prefix + "reduction", {input});
      [encoder setComputePipelineState:pso];
      mtl_setArgs(encoder, input, output, params);
      [encoder dispatchThreads:MTLSizeMake(output.numel() * threads, 1, 1)
          threadsPerThreadgroup:MTLSizeMake(threads, 1, 1)];
      getMPSProfiler().endProfileKernel(pso);
    }
  });
}

static void value_reduction_kernel_mps(TensorIterator& iter, const std::string& prefix) {
  const Tensor& input = iter.input(0);
  const Tensor& output = iter.output(0);
  if (input.numel() == 0 || output.numel() == 0) {
    return;
  }
  reduction_dispatch_mps(iter,
                         ReductionDispatch{
                             .prefix = prefix,
                             .input_kernel_dtype = input.scalar_type(),
                             .output_kernel_dtype = output.scalar_type(),
                             .partial_dtype = output.scalar_type(),
                             .pass2_prefix = prefix,
                         });
}

static void max_values_kernel_mps(TensorIterator& iter) {
  value_reduction_kernel_mps(iter, "max_");
}

static void min_values_kernel_mps(TensorIterator& iter) {
  value_reduction_kernel_mps(iter, "min_");
}

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

REGISTER_DISPATCH(max_values_stub, &max_values_kernel_mps)
REGISTER_DISPATCH(min_values_stub, &min_values_kernel_mps)

} // namespace at::native
