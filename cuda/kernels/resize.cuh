// SPDX-License-Identifier: Apache-2.0
// Launcher of the resize kernel (resize.cu); parameters are checked by the caller (cuda/resize.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <typeflow/cuda/resize.hpp>

namespace typeflow::gpu::kernels {

cudaError_t launch_resize(cudaStream_t s, const resize_params& p);

} // namespace typeflow::gpu::kernels
