// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda's elementwise kernels: unary ops, binary ops and comparisons with NumPy
// broadcasting, cast and fill. Each call checks its parameters on the host (validate_*, which needs
// no device) and then enqueues one kernel on the stream; it does not wait for it.
//
// The op codes and what they accept are in ops.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/layout.hpp>
#include <typeflow/cuda/ops.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// Dimensions of a row-major tensor.
using dims_view = std::span<const std::int64_t>;

struct unary_params {
  unary_op op = unary_op::neg;
  elem type = elem::f32;     // of x and y
  const void* x = nullptr;   // device memory, `size` elements
  void* y = nullptr;         // may be x
  std::int64_t size = 0;
  double alpha = 0;          // leaky_relu, hard_sigmoid, clip (see unary_op)
  double beta = 0;
};

struct binary_params {
  binary_op op = binary_op::add;
  elem type = elem::f32;   // of a and b; of out too, except comparisons (bool)
  const void* a = nullptr;
  dims_view a_dims;
  const void* b = nullptr;
  dims_view b_dims;
  void* out = nullptr;     // may be a or b when it has their shape
  dims_view out_dims;      // the broadcast of a_dims and b_dims
  unsigned* error_word = nullptr;  // device memory, or null to leave data errors unreported
};

struct cast_params {
  elem from = elem::f32;
  elem to = elem::f32;
  const void* x = nullptr;
  void* y = nullptr;
  std::int64_t size = 0;
};

// Checks an op's parameters without touching a device: dtypes the op accepts, non-null pointers for
// non-empty tensors, shapes that broadcast to out_dims.
TYPEFLOW_CUDA_API status validate(const unary_params& p);
TYPEFLOW_CUDA_API status validate(const binary_params& p);
TYPEFLOW_CUDA_API status validate(const cast_params& p);

// The layout a binary kernel indexes with: operand 0 is a, 1 is b. invalid_argument, naming `op`,
// when the shapes do not broadcast to `out` or merge to more than max_layout_rank dimensions.
TYPEFLOW_CUDA_API result<strided_layout<2>> broadcast_layout(std::string_view op, dims_view a, dims_view b,
                                                             dims_view out);
// The same for three operands (where: condition, x, y).
TYPEFLOW_CUDA_API result<strided_layout<3>> broadcast_layout(std::string_view op, dims_view a, dims_view b, dims_view c,
                                                             dims_view out);

TYPEFLOW_CUDA_API status unary(const stream& s, const unary_params& p);
TYPEFLOW_CUDA_API status binary(const stream& s, const binary_params& p);
// Floats to integers truncate toward zero and saturate, NaN becomes 0; integers to narrower integers
// wrap; anything to bool is x != 0 (ops::cast).
TYPEFLOW_CUDA_API status cast(const stream& s, const cast_params& p);
// Sets `size` elements of `type` at y to `value` (converted as cast does).
TYPEFLOW_CUDA_API status fill(const stream& s, elem type, void* y, std::int64_t size, double value);

// Waits for `s`, reads the error word a binary or gather kernel may have set, and clears it: ok when
// no bit is set, invalid_argument naming `op` otherwise ("div: division by zero in input 1").
TYPEFLOW_CUDA_API status read_error_bits(const stream& s, unsigned* error_word, std::string_view op);

} // namespace typeflow::gpu
