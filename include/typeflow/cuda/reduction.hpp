// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda's reductions (sum, mean, max, min, prod over any set of axes), argmax along an
// axis, and softmax / log-softmax along an axis, with the semantics of ops/reduction.hpp and
// ops/nn.hpp. Inputs are dense row-major tensors; each call checks its parameters on the host
// (validate, which needs no device) and enqueues its kernel on the stream.
#pragma once

#include <cstdint>
#include <span>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/layout.hpp>
#include <typeflow/cuda/ops.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

struct reduce_params {
  reduce_op op = reduce_op::sum;
  elem type = elem::f32;        // of x and y: any number (not bool)
  const void* x = nullptr;
  dims_view x_dims;
  std::span<const int> axes;    // negative axes count from the back; empty reduces every axis
  void* y = nullptr;            // x's dims without the reduced ones (keep_dims is only a view of it)
};

struct argmax_params {
  elem type = elem::f32;        // of x: any number
  const void* x = nullptr;
  dims_view x_dims;
  int axis = 0;                 // negative counts from the back; the axis may not be empty
  bool select_last_index = false;  // ties: the last index instead of the first
  std::int64_t* y = nullptr;    // x's dims without `axis`
};

struct softmax_params {
  elem type = elem::f32;        // f16, bf16, f32 or f64
  const void* x = nullptr;
  dims_view x_dims;
  int axis = -1;
  bool log = false;             // log_softmax
  void* y = nullptr;            // x's dims; may be x
};

TYPEFLOW_CUDA_API result<reduction_layout> make_reduction_layout(std::string_view op, dims_view x_dims,
                                                                 std::span<const int> axes);

TYPEFLOW_CUDA_API status validate(const reduce_params& p);
TYPEFLOW_CUDA_API status validate(const argmax_params& p);
TYPEFLOW_CUDA_API status validate(const softmax_params& p);

TYPEFLOW_CUDA_API status reduce(const stream& s, const reduce_params& p);
TYPEFLOW_CUDA_API status argmax(const stream& s, const argmax_params& p);
TYPEFLOW_CUDA_API status softmax(const stream& s, const softmax_params& p);

} // namespace typeflow::gpu
