// SPDX-License-Identifier: Apache-2.0
// Launchers of the reductions, argmax and softmax (reduction.cu); parameters are checked by the
// caller (cuda/reduction.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/layout.hpp>
#include <typeflow/cuda/ops.hpp>

namespace typeflow::gpu::kernels {

cudaError_t launch_reduce(cudaStream_t s, reduce_op op, elem type, const void* x, void* y, const reduction_layout& l);
// x viewed as [outer, n, inner]; y as [outer, inner].
cudaError_t launch_argmax(cudaStream_t s, elem type, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t n,
                          std::int64_t inner, bool select_last_index);
// x and y viewed as [outer, n, inner], normalised along n.
cudaError_t launch_softmax(cudaStream_t s, elem type, const void* x, void* y, std::int64_t outer, std::int64_t n,
                           std::int64_t inner, bool log);

} // namespace typeflow::gpu::kernels
