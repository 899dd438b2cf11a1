// SPDX-License-Identifier: Apache-2.0
// 2-D pooling of NHWC or NCHW images (TensorFlow's MaxPool and AvgPool, ONNX's MaxPool and
// AveragePool): each output is the max or the mean of one window of one channel.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/ops/padding.hpp>

namespace typeflow::ops {

namespace detail {

// [n, h, w, c] -> [n, oh, ow, c] (or NCHW) for op's window (padding.hpp gives oh, ow). Explicit
// pads are smaller than the dilated window (a window wholly in the padding would pool nothing).
template <class Op>
constexpr result<shape> pool2d_shape(const Op& op, const shape& x) {
  const std::string_view images = op.format == data_format::nchw ? "input (NCHW images)" : "input (NHWC images)";
  if (auto st = require_rank(Op::name, images, x, 4); !st.ok()) return st;
  if (op.window_h < 1 || op.window_w < 1)
    return errors::invalid_argument(Op::name, ": windows must be >= 1, got window_h ", op.window_h, " and window_w ",
                                    op.window_w);
  if (op.window_h > max_window_attr || op.window_w > max_window_attr)
    return errors::invalid_argument(Op::name, ": windows must be at most ", max_window_attr, ", got window ",
                                    op.window_h, " x ", op.window_w);
  const window2d w = window_of(op, op.window_h, op.window_w);
  if (auto st = check_window(Op::name, w); !st.ok()) return st;
  const std::int64_t eh = effective_window(w.h.size, w.h.dilation), ew = effective_window(w.w.size, w.w.dilation);
  if (w.h.before >= eh || w.h.after >= eh || w.w.before >= ew || w.w.after >= ew)
    return errors::invalid_argument(Op::name, ": explicit pads must be smaller than the window (", eh, " x ", ew,
                                    " after dilation), got pad_top ", w.h.before, ", pad_bottom ", w.h.after,
                                    ", pad_left ", w.w.before, " and pad_right ", w.w.after,
                                    ": a window would lie wholly in the padding");
  return windowed_shape(Op::name, "window", x, w, x[axes_of(op.format).c]);
}

} // namespace detail

// The maximum of each window's taps inside the image; padded positions are ignored (never the
// maximum). TensorFlow's MaxPool; ONNX's MaxPool with dilations, explicit pads and ceil_mode. A
// window whose taps all miss the image (dilations can step over a small one) gives -inf, or the
// lowest value of an integer dtype.
struct max_pool2d {
  static constexpr std::string_view name = "max_pool2d";
  static constexpr int num_inputs = 1;
  std::int64_t window_h = 2;
  std::int64_t window_w = 2;
  std::int64_t stride_h = 2;
  std::int64_t stride_w = 2;
  padding pad = padding::valid;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;
  std::int64_t pad_top = 0;
  std::int64_t pad_bottom = 0;
  std::int64_t pad_left = 0;
  std::int64_t pad_right = 0;
  data_format format = data_format::nhwc;
  bool ceil_mode = false;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::numbers);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return detail::pool2d_shape(*this, in[0]); }
  friend constexpr bool operator==(const max_pool2d&, const max_pool2d&) = default;
};

// The mean of each window. By default over the taps inside the image: with same padding, border
// windows divide by how many of their positions are real, as TensorFlow does. count_include_pad
// (explicit padding) divides by the taps inside the image with its padding, as ONNX's and
// PyTorch's AveragePool (ONNX Runtime before opset 19 divides the last windows of ceil_mode by the
// whole window instead); taps that only ceil_mode adds are never counted. A window with no tap to
// count gives 0.
struct avg_pool2d {
  static constexpr std::string_view name = "avg_pool2d";
  static constexpr int num_inputs = 1;
  std::int64_t window_h = 2;
  std::int64_t window_w = 2;
  std::int64_t stride_h = 2;
  std::int64_t stride_w = 2;
  padding pad = padding::valid;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;
  std::int64_t pad_top = 0;
  std::int64_t pad_bottom = 0;
  std::int64_t pad_left = 0;
  std::int64_t pad_right = 0;
  data_format format = data_format::nhwc;
  bool ceil_mode = false;
  bool count_include_pad = false;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return detail::pool2d_shape(*this, in[0]); }
  friend constexpr bool operator==(const avg_pool2d&, const avg_pool2d&) = default;
};

} // namespace typeflow::ops
