// SPDX-License-Identifier: Apache-2.0
// Launchers of the data-movement kernels (array.cu); parameters are checked by the caller
// (cuda/array.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/layout.hpp>

namespace typeflow::gpu::kernels {

// Operand 0 of `layout` indexes src, operand 1 dst.
cudaError_t launch_strided_copy(cudaStream_t s, std::size_t element_bytes, const void* src, void* dst,
                                const strided_layout<2>& layout);
cudaError_t launch_gather(cudaStream_t s, std::size_t element_bytes, const void* params, std::int64_t outer,
                          std::int64_t axis, std::int64_t inner, bool indices_64, const void* indices,
                          std::int64_t count, void* out, unsigned* error_word);

// Operands 0, 1, 2 of `layout`: condition, x, y.
cudaError_t launch_select(cudaStream_t s, std::size_t element_bytes, const bool* condition, const void* x,
                          const void* y, void* out, const strided_layout<3>& layout);
// `value` converted to `type` as cast does.
cudaError_t launch_pad(cudaStream_t s, elem type, const void* x, void* y, const pad_layout& layout, double value);

} // namespace typeflow::gpu::kernels
