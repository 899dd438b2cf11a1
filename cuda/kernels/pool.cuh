// SPDX-License-Identifier: Apache-2.0
// Launcher of the pooling kernel (pool.cu); parameters are checked by the caller (cuda/pool.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <typeflow/cuda/pool.hpp>

namespace typeflow::gpu::kernels {

cudaError_t launch_pool2d(cudaStream_t s, const pool_params& p);

} // namespace typeflow::gpu::kernels
