// SPDX-License-Identifier: Apache-2.0
// Matrix products on the GPU through cuBLASLt: row-major, batched, with bias and activation fused
// into the product's output pass. A blas_context holds the cuBLASLt handle of one stream and caches,
// per shape, the descriptors and the algorithm cuBLASLt's heuristic chose, so a step after the first
// only launches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// How f32 products are computed. f16 and bf16 data always accumulate in f32, f64 in f64.
enum class precision : std::uint8_t {
  exact,  // IEEE f32 multiply-adds (the default, as TensorFlow's determinism settings)
  tf32,   // tensor cores with 10-bit mantissas for the inputs (sm_80 and newer)
  bf16,   // tensor cores with bf16 inputs
};

// What the product's output pass applies after out = a * b.
enum class epilogue : std::uint8_t {
  none,
  bias,            // + bias[n] (each row)
  relu,
  bias_relu,
  gelu_tanh,       // cuBLASLt's GELU is the tanh approximation (unary_op::gelu_tanh)
  bias_gelu_tanh,
};

constexpr bool has_bias(epilogue e) noexcept {
  return e == epilogue::bias || e == epilogue::bias_relu || e == epilogue::bias_gelu_tanh;
}

struct matmul_params {
  elem type = elem::f32;      // of a, b, bias and out: f16, bf16, f32 or f64
  std::int64_t batch = 1;
  std::int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false;   // a is stored [k, m] instead of [m, k]
  bool transpose_b = false;   // b is stored [n, k] instead of [k, n]
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;        // [m, n] per batch; may not overlap a or b
  // Elements from one matrix of the batch to the next: -1 for packed matrices, 0 for a and b to use
  // the same matrix in every batch (broadcast).
  std::int64_t batch_stride_a = -1;
  std::int64_t batch_stride_b = -1;
  std::int64_t batch_stride_out = -1;
  const void* bias = nullptr;  // [n], with a bias epilogue only; the same for every batch
  precision math = precision::exact;
  epilogue post = epilogue::none;
};

class blas_context;

// Enqueues out = post(a * b [+ bias]) on the context's stream; `op` names it in errors.
TYPEFLOW_CUDA_API status matmul(blas_context& ctx, const matmul_params& p, std::string_view op = "matmul");

// One cuBLASLt handle bound to one stream, with the device workspace its algorithms may use. Not for
// use by two threads at once (a device policy gives each stream its own). The stream and the
// workspace must outlive it.
class TYPEFLOW_CUDA_API blas_context {
 public:
  static result<blas_context> create(const stream& s, void* workspace, std::size_t workspace_bytes);

  blas_context(blas_context&&) noexcept;
  blas_context& operator=(blas_context&&) noexcept;
  ~blas_context();

  // Shapes whose descriptors and algorithm are cached.
  std::size_t cached_plans() const noexcept;

  // Later products enqueue on `s` (of the same GPU) with `workspace`, which holds at least the bytes
  // the context was made with, 256-byte aligned; the cached plans stay. One context then serves
  // several streams, one at a time (a captured graph's branches).
  status bind(const stream& s, void* workspace, std::size_t workspace_bytes);

  struct impl;  // defined in the library

 private:
  friend status matmul(blas_context&, const matmul_params&, std::string_view);
  explicit blas_context(std::unique_ptr<impl> i) noexcept;
  std::unique_ptr<impl> impl_;
};

// The workspace cuBLAS recommends for a device: 32 MiB on sm_90 and newer, 4 MiB before.
TYPEFLOW_CUDA_API result<std::size_t> recommended_workspace(int ordinal);

// Checks a product's parameters without touching a device; `op` names it in the message.
TYPEFLOW_CUDA_API status validate(const matmul_params& p, std::string_view op = "matmul");

} // namespace typeflow::gpu
