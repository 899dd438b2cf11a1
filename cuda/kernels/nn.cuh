// SPDX-License-Identifier: Apache-2.0
// Launchers of the normalisation kernels (nn.cu); parameters are checked by the caller (cuda/nn.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <typeflow/cuda/api.hpp>

namespace typeflow::gpu::kernels {

cudaError_t launch_layer_norm(cudaStream_t s, elem type, const void* x, std::int64_t rows, std::int64_t n,
                              const void* scale, const void* offset, double epsilon, void* y);
cudaError_t launch_batch_norm(cudaStream_t s, elem type, const void* x, std::int64_t rows, std::int64_t channels,
                              const void* scale, const void* offset, const void* mean, const void* variance,
                              double epsilon, void* y);

} // namespace typeflow::gpu::kernels
