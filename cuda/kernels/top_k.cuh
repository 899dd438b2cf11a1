// SPDX-License-Identifier: Apache-2.0
// Launcher of the top_k kernels (top_k.cu); parameters are checked by the caller (cuda/top_k.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <typeflow/cuda/top_k.hpp>

namespace typeflow::gpu::kernels {

cudaError_t launch_top_k(cudaStream_t s, const top_k_params& p);

} // namespace typeflow::gpu::kernels
