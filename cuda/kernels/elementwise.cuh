// SPDX-License-Identifier: Apache-2.0
// Launchers of the elementwise kernels (elementwise.cu). Parameters are checked by the caller
// (cuda/elementwise.cpp); a launcher only picks the instantiation and enqueues it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/layout.hpp>
#include <typeflow/cuda/ops.hpp>

namespace typeflow::gpu::kernels {

cudaError_t launch_unary(cudaStream_t s, unary_op op, elem type, const void* x, void* y, std::int64_t size,
                         double alpha, double beta);
// `layout` indexes a (operand 0) and b (operand 1) for each element of out.
cudaError_t launch_binary(cudaStream_t s, binary_op op, elem type, const void* a, const void* b, void* out,
                          const strided_layout<2>& layout, unsigned* error_word);
cudaError_t launch_cast(cudaStream_t s, elem from, elem to, const void* x, void* y, std::int64_t size);
cudaError_t launch_fill(cudaStream_t s, elem type, void* y, std::int64_t size, double value);

} // namespace typeflow::gpu::kernels
