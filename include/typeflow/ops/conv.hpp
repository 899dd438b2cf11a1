// SPDX-License-Identifier: Apache-2.0
// conv2d: 2-D convolution (TensorFlow's Conv2D; strictly a cross-correlation) of NHWC or NCHW
// images with an HWIO filter, with strides, dilations and same, valid or explicit zero padding.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/ops/padding.hpp>

namespace typeflow::ops {

// input [n, h, w, c_in] (NHWC; [n, c_in, h, w] with format NCHW) x filter [kh, kw, c_in, c_out]
// (HWIO in both formats, as TensorFlow's) -> [n, oh, ow, c_out] (or [n, c_out, oh, ow]), where oh
// and ow follow `pad` (padding.hpp). y[b, i, j, o] = sum over (di, dj, c) of
//   x[b, i * stride_h + di * dilation_h - pad_top, j * stride_w + dj * dilation_w - pad_left, c]
//   * filter[di, dj, c, o], with x zero outside the image.
// pad_top, pad_bottom, pad_left and pad_right are the padding of padding::explicit_ (ONNX's pads);
// with same, the padding is TensorFlow's.
struct conv2d {
  static constexpr std::string_view name = "conv2d";
  static constexpr int num_inputs = 2;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  padding pad = padding::valid;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;
  std::int64_t pad_top = 0;
  std::int64_t pad_bottom = 0;
  std::int64_t pad_left = 0;
  std::int64_t pad_right = 0;
  data_format format = data_format::nhwc;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }

  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    const shape& f = in[1];
    const std::string_view images = format == data_format::nchw ? "input 0 (NCHW images)" : "input 0 (NHWC images)";
    if (auto st = detail::require_rank(name, images, x, 4); !st.ok()) return st;
    if (auto st = detail::require_rank(name, "input 1 (HWIO filter)", f, 4); !st.ok()) return st;
    const window2d w = window_of(*this, f[0], f[1]);
    if (auto st = detail::check_window(name, w); !st.ok()) return st;
    if (f[0] == 0 || f[1] == 0)
      return errors::invalid_argument(name, ": the filter's height and width must be >= 1, got filter shape ", f);
    const std::int64_t channels = x[axes_of(format).c];
    if (!detail::compatible(channels, f[2]))
      return errors::invalid_argument(name, ": input 0 has ", channels, " channels but the filter expects ", f[2],
                                      " (input shape ", x, ", filter shape ", f, ")");
    return detail::windowed_shape(name, "filter", x, w, f[3]);
  }

  friend constexpr bool operator==(const conv2d&, const conv2d&) = default;
};

} // namespace typeflow::ops
