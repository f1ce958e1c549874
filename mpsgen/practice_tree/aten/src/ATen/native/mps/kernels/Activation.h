#pragma once

// Parameters of the activation kernels, shared by ActivationKernel.metal and
// the host code that fills them (operations/ActivationKernel.mm).

template <typename T>
struct ELUParams {
  T alpha;
  T scale;
  T input_scale;
};

template <typename T>
struct ELUBackwardParams {
  T alpha;
  T scale;
  T input_scale;
  bool is_result;
};
