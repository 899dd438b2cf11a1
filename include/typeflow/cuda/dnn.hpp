// SPDX-License-Identifier: Apache-2.0
// Convolutions on the GPU through cuDNN 9's graph API: NHWC images and TensorFlow's HWIO filter,
// strides, dilations and any padding, with a bias and ReLU fused into the convolution's graph where
// asked (run as the library's kernels after the convolution where cuDNN has no engine for the fused
// graph in the precision asked). A dnn_context holds the cuDNN handle of one stream and caches, per shape, dtype, precision,
// epilogue and pointer alignment, the operation graph and the execution plan cuDNN's heuristic chose,
// so a step after the first only builds a variant pack and executes.
// The caller gives the workspace (conv2d_workspace says how much): the filter in cuDNN's KRSC layout,
// the input padded where the padding is asymmetric, and cuDNN's own scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/blas.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// What the convolution's graph applies after y = conv(x, filter).
enum class conv_epilogue : std::uint8_t {
  none,
  bias,       // + bias[out_channels]
  bias_relu,  // relu(y + bias)
};

// y[b, i, j, o] = sum over (di, dj, c) of x[b, i * stride_h + di * dilation_h - pad_top,
// j * stride_w + dj * dilation_w - pad_left, c] * filter[di, dj, c, o], x zero outside the image
// (ops::conv2d in NHWC).
struct conv2d_params {
  elem type = elem::f32;  // of x, filter, bias and y: f16, bf16 or f32 (accumulating in f32)
  std::int64_t batch = 0, height = 0, width = 0, in_channels = 0;  // x: [batch, height, width, in_channels]
  std::int64_t filter_h = 1, filter_w = 1, out_channels = 0;       // filter: [filter_h, filter_w, in_channels, out_channels]
  std::int64_t out_h = 0, out_w = 0;                               // y: [batch, out_h, out_w, out_channels]
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  const void* x = nullptr;
  const void* filter = nullptr;
  const void* bias = nullptr;  // [out_channels], with a bias epilogue only
  void* y = nullptr;           // may not overlap x, the filter or the bias
  // exact: no engine that rounds f32 inputs (TF32 tensor cores, down-converted inputs) or is
  // nondeterministic; no dtype gets an engine that accumulates in less than f32.
  precision math = precision::exact;
  conv_epilogue post = conv_epilogue::none;
};

// Checks a convolution's parameters without touching a device: dtypes, non-negative sizes whose
// element counts fit, strides and dilations >= 1, padding >= 0, an output size that is the one the
// input, filter, strides, dilations and padding give, non-null pointers for a non-empty output.
TYPEFLOW_CUDA_API status validate(const conv2d_params& p, std::string_view op = "conv2d");

// Builds and finalizes the cuDNN descriptors of the convolution's operation graph (its tensors, the
// convolution, the epilogue's pointwise operations and the graph itself): everything cuDNN checks
// of a graph before an engine is chosen, which needs no device. For tests and ahead-of-time checks.
TYPEFLOW_CUDA_API status check_conv2d_graph(const conv2d_params& p, std::string_view op = "conv2d");

class dnn_context;

// The device workspace conv2d needs for these parameters, in bytes; builds and caches the plan.
TYPEFLOW_CUDA_API result<std::size_t> conv2d_workspace(dnn_context& ctx, const conv2d_params& p,
                                                        std::string_view op = "conv2d");
// Enqueues y = post(conv(x, filter) [+ bias]) on the context's stream. `workspace` holds at least
// conv2d_workspace(ctx, p) bytes, 256-byte aligned, in the device's memory, used by the stream only.
TYPEFLOW_CUDA_API status conv2d(dnn_context& ctx, const conv2d_params& p, void* workspace, std::size_t workspace_bytes,
                                std::string_view op = "conv2d");

// One cuDNN handle bound to one stream. Not for use by two threads at once (a device policy guards
// its one context with a mutex). The stream must outlive it.
class TYPEFLOW_CUDA_API dnn_context {
 public:
  static result<dnn_context> create(const stream& s);
  dnn_context(dnn_context&&) noexcept;
  dnn_context& operator=(dnn_context&&) noexcept;
  ~dnn_context();

  // Convolutions whose graph and plan are cached.
  std::size_t cached_plans() const noexcept;

  // Later convolutions enqueue on `s` (of the same GPU, outliving the context's use of it); the
  // cached plans stay. One context then serves several streams, one at a time.
  status bind(const stream& s);

  struct impl;  // defined in the library

 private:
  friend result<std::size_t> conv2d_workspace(dnn_context&, const conv2d_params&, std::string_view);
  friend status conv2d(dnn_context&, const conv2d_params&, void*, std::size_t, std::string_view);
  explicit dnn_context(std::unique_ptr<impl> i) noexcept;
  std::unique_ptr<impl> impl_;
};

} // namespace typeflow::gpu
