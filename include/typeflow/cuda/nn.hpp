// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda's normalisations: layer norm over the trailing dimensions, and inference batch
// norm per channel of the last dimension, with the semantics of ops/nn.hpp (statistics in f32, f64
// for f64). Each call checks its parameters on the host (validate, which needs no device) and
// enqueues one kernel on the stream.
#pragma once

#include <cstdint>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// x viewed as [rows, n]: y = (x - mean) / sqrt(variance + epsilon) * scale + offset per row, with
// the biased variance; scale and offset hold n elements.
struct layer_norm_params {
  elem type = elem::f32;  // f16, bf16, f32 or f64, of every tensor
  const void* x = nullptr;
  std::int64_t rows = 0, n = 0;
  const void* scale = nullptr;
  const void* offset = nullptr;
  double epsilon = 1e-5;
  void* y = nullptr;      // may be x
};

// x viewed as [rows, channels]: y = (x - mean[c]) * scale[c] / sqrt(variance[c] + epsilon) + offset[c].
struct batch_norm_params {
  elem type = elem::f32;
  const void* x = nullptr;
  std::int64_t rows = 0, channels = 0;
  const void* scale = nullptr;
  const void* offset = nullptr;
  const void* mean = nullptr;
  const void* variance = nullptr;
  double epsilon = 1e-3;
  void* y = nullptr;      // may be x
};

TYPEFLOW_CUDA_API status validate(const layer_norm_params& p);
TYPEFLOW_CUDA_API status validate(const batch_norm_params& p);
TYPEFLOW_CUDA_API status layer_norm(const stream& s, const layer_norm_params& p);
TYPEFLOW_CUDA_API status batch_norm(const stream& s, const batch_norm_params& p);

} // namespace typeflow::gpu
