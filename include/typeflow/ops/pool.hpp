// SPDX-License-Identifier: Apache-2.0
// 2-D pooling of NHWC images (TensorFlow's MaxPool and AvgPool): each output is the max or the
// mean of one window of one channel.
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

// [n, h, w, c] -> [n, oh, ow, c] for a window_h x window_w window (padding.hpp gives oh, ow).
constexpr result<shape> pool2d_shape(std::string_view op, const shape& x, std::int64_t window_h,
                                     std::int64_t window_w, std::int64_t stride_h, std::int64_t stride_w,
                                     padding pad) {
  if (auto st = require_rank(op, "input (NHWC images)", x, 4); !st.ok()) return st;
  if (window_h < 1 || window_w < 1)
    return errors::invalid_argument(op, ": windows must be >= 1, got window_h ", window_h, " and window_w ",
                                    window_w);
  if (stride_h < 1 || stride_w < 1)
    return errors::invalid_argument(op, ": strides must be >= 1, got stride_h ", stride_h, " and stride_w ",
                                    stride_w);
  if (window_h > max_window_attr || window_w > max_window_attr || stride_h > max_window_attr || stride_w > max_window_attr)
    return errors::invalid_argument(op, ": windows and strides must be at most ", max_window_attr, ", got window ",
                                    window_h, " x ", window_w, " and strides ", stride_h, " x ", stride_w);
  if (pad != padding::same && pad != padding::valid)
    return errors::invalid_argument(op, ": invalid padding code ", static_cast<int>(pad));
  // With valid padding a window that does not fit leaves no output; an empty image stays empty.
  if (pad == padding::valid &&
      ((x[1] != dyn && x[1] > 0 && window_h > x[1]) || (x[2] != dyn && x[2] > 0 && window_w > x[2])))
    return errors::invalid_argument(op, ": with valid padding the ", window_h, " x ", window_w,
                                    " window is larger than the input's ", x[1], " x ", x[2],
                                    " image, so the output would be empty (input shape ", x, ")");
  return shape{x[0], windowed_output_size(x[1], window_h, stride_h, 1, pad),
               windowed_output_size(x[2], window_w, stride_w, 1, pad), x[3]};
}

} // namespace detail

// The maximum of each window; padded positions are ignored (never the maximum).
struct max_pool2d {
  static constexpr std::string_view name = "max_pool2d";
  static constexpr int num_inputs = 1;
  std::int64_t window_h = 2;
  std::int64_t window_w = 2;
  std::int64_t stride_h = 2;
  std::int64_t stride_w = 2;
  padding pad = padding::valid;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::numbers);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    return detail::pool2d_shape(name, in[0], window_h, window_w, stride_h, stride_w, pad);
  }
  friend constexpr bool operator==(const max_pool2d&, const max_pool2d&) = default;
};

// The mean of each window over the positions inside the image: with same padding, border
// windows divide by how many of their positions are real, as TensorFlow does.
struct avg_pool2d {
  static constexpr std::string_view name = "avg_pool2d";
  static constexpr int num_inputs = 1;
  std::int64_t window_h = 2;
  std::int64_t window_w = 2;
  std::int64_t stride_h = 2;
  std::int64_t stride_w = 2;
  padding pad = padding::valid;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    return detail::pool2d_shape(name, in[0], window_h, window_w, stride_h, stride_w, pad);
  }
  friend constexpr bool operator==(const avg_pool2d&, const avg_pool2d&) = default;
};

} // namespace typeflow::ops
