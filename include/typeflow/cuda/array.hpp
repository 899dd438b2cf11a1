// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda's data movement: a strided copy between any two layouts of the same dimensions
// (what transpose, slice, concat, split, reshape and identity are on the GPU), select (where), gather along an axis,
// and pad in every mode of ops::pad (one kernel that maps each output element to its source through
// pad_source in layout.hpp).
// Each call checks its parameters on the host (validate, which needs no device) and enqueues one
// kernel on the stream.
#pragma once

#include <cstdint>
#include <span>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/layout.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// dst[i...] = src[i...] for every index of `dims`, each side addressed by its own strides (in
// elements, any sign): offset = sum of i_d * strides_d from the pointer given.
struct strided_copy_params {
  elem type = elem::f32;
  dims_view dims;
  const void* src = nullptr;
  std::span<const std::int64_t> src_strides;
  void* dst = nullptr;
  std::span<const std::int64_t> dst_strides;
};

// out[p, j, q] = params[p, indices[j], q], params viewed as [outer, axis, inner] and out as
// [outer, count, inner]. A negative index counts from the end; one outside [-axis, axis) sets
// error_bits::index_out_of_range in error_word (when given) and writes zeros.
struct gather_params {
  elem type = elem::f32;        // of params and out
  const void* params = nullptr;
  std::int64_t outer = 1, axis = 0, inner = 1;
  elem index_type = elem::i64;  // i32 or i64
  const void* indices = nullptr;
  std::int64_t count = 0;
  void* out = nullptr;
  unsigned* error_word = nullptr;
};

struct pad_params {
  elem type = elem::f32;
  const void* x = nullptr;
  dims_view x_dims;
  std::span<const std::int64_t> paddings;  // before and after, per dimension
  pad_mode mode = pad_mode::constant;
  double value = 0;                        // constant mode, converted as cast does
  void* y = nullptr;                       // x's dims plus the paddings
};

// invalid_argument for paddings that do not match the rank, are negative, or go beyond what the
// mode can take from the input (reflect d - 1, symmetric d, edge anything from a non-empty axis).
TYPEFLOW_CUDA_API result<pad_layout> make_pad_layout(const pad_params& p);
TYPEFLOW_CUDA_API status validate(const pad_params& p);
TYPEFLOW_CUDA_API status pad(const stream& s, const pad_params& p);

// out = condition ? x : y elementwise, the three broadcast together (NumPy's rule).
struct select_params {
  elem type = elem::f32;  // of x, y and out
  const bool* condition = nullptr;
  dims_view condition_dims;
  const void* x = nullptr;
  dims_view x_dims;
  const void* y = nullptr;
  dims_view y_dims;
  void* out = nullptr;
  dims_view out_dims;
};

TYPEFLOW_CUDA_API status validate(const select_params& p);
TYPEFLOW_CUDA_API status select(const stream& s, const select_params& p);

// The layout a strided copy indexes with (operand 0: src, 1: dst), dimensions merged where both
// sides step alike; invalid_argument naming `op` beyond max_layout_rank unmerged dimensions.
TYPEFLOW_CUDA_API result<strided_layout<2>> copy_layout(std::string_view op, dims_view dims,
                                                        std::span<const std::int64_t> src_strides,
                                                        std::span<const std::int64_t> dst_strides);

TYPEFLOW_CUDA_API status validate(const strided_copy_params& p, std::string_view op = "strided_copy");
TYPEFLOW_CUDA_API status validate(const gather_params& p);

TYPEFLOW_CUDA_API status strided_copy(const stream& s, const strided_copy_params& p, std::string_view op = "strided_copy");
TYPEFLOW_CUDA_API status gather(const stream& s, const gather_params& p);

} // namespace typeflow::gpu
