#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/Distance.h>
#include <ATen/native/mps/OperationUtils.h>
#include <ATen/native/mps/kernels/Distance.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/linalg_vector_norm.h>
#endif

namespace at::native {

#ifndef PYTORCH_JIT_COMPILE_SHADERS
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();
#else
#include <ATen/native/mps/Distance_metallib.h>
#endif

// cdist forward through the norm of the broadcast difference (no kernel of its own)
static void cdist_mps_kernel(Tensor& result, const Tensor& x1, const Tensor& x2, const double p) {
  result.copy_(at::linalg_vector_norm(x1.unsqueeze(-2).sub(x2.unsqueeze(-3)), p, {-1}));
}

static void cdist_backward_mps_kernel(Tensor& result,
                                      const Tensor& grad,
                                      const Tensor& x1,
                                      const Tensor& x2,
                                      const double p,
                                      const Tensor& cdist) {
  using namespace mps;
  if (result.numel() == 0) {
    return;
  }
  const auto g = grad.contiguous(), a = x1.contiguous(), b = x2.contiguous(), d = cdist.contiguous();
  CdistBwdParams params{a.size(0), a.size(1), b.size(1), a.size(2), static_cast<float>(p - 1)};
  MPSStream* stream = getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    @autoreleasepool {
      id<MTLComputeCommandEncoder> encoder = stream->commandEncoder();
      auto pso = lib.getPipelineStateForFunc(fmt::format("cdist_backward_{}", scalarToMetalTypeString(result)));
      getMPSProfiler().beginProfileKernel(pso, "cdist_backward", {grad, x1, x2, cdist});
      [encoder setComputePipelineState:pso];
      mtl_setArgs(encoder, result, g, a, b, d, params);
      mtl_dispatch1DJob(encoder, pso, result.numel());
      getMPSProfiler().endProfileKernel(pso);
    }
  });
}

REGISTER_DISPATCH(cdist_stub, &cdist_mps_kernel);
REGISTER_DISPATCH(cdist_backward_stub, &cdist_backward_mps_kernel);

} // namespace at::native
