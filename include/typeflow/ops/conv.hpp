// SPDX-License-Identifier: Apache-2.0
// conv2d: 2-D convolution (TensorFlow's Conv2D; strictly a cross-correlation) of NHWC images with
// an HWIO filter, with strides, dilations and same or valid zero padding.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/ops/padding.hpp>

namespace typeflow::ops {

// input [n, h, w, c_in] x filter [kh, kw, c_in, c_out] -> [n, oh, ow, c_out], where oh and ow
// follow `pad` (padding.hpp). y[b, i, j, o] = sum over (di, dj, c) of
//   x[b, i * stride_h + di * dilation_h - pad_top, j * stride_w + dj * dilation_w - pad_left, c]
//   * filter[di, dj, c, o], with x zero outside the image.
struct conv2d {
  static constexpr std::string_view name = "conv2d";
  static constexpr int num_inputs = 2;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  padding pad = padding::valid;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }

  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    const shape& f = in[1];
    if (auto st = detail::require_rank(name, "input 0 (NHWC images)", x, 4); !st.ok()) return st;
    if (auto st = detail::require_rank(name, "input 1 (HWIO filter)", f, 4); !st.ok()) return st;
    if (stride_h < 1 || stride_w < 1)
      return errors::invalid_argument(name, ": strides must be >= 1, got stride_h ", stride_h, " and stride_w ",
                                      stride_w);
    if (dilation_h < 1 || dilation_w < 1)
      return errors::invalid_argument(name, ": dilations must be >= 1, got dilation_h ", dilation_h,
                                      " and dilation_w ", dilation_w);
    if (stride_h > max_window_attr || stride_w > max_window_attr || dilation_h > max_window_attr ||
        dilation_w > max_window_attr)
      return errors::invalid_argument(name, ": strides and dilations must be at most ", max_window_attr, ", got strides ",
                                      stride_h, " x ", stride_w, " and dilations ", dilation_h, " x ", dilation_w);
    if (pad != padding::same && pad != padding::valid)
      return errors::invalid_argument(name, ": invalid padding code ", static_cast<int>(pad));
    if (f[0] == 0 || f[1] == 0)
      return errors::invalid_argument(name, ": the filter's height and width must be >= 1, got filter shape ", f);
    if (!detail::compatible(x[3], f[2]))
      return errors::invalid_argument(name, ": input 0 has ", x[3], " channels but the filter expects ", f[2],
                                      " (input shape ", x, ", filter shape ", f, ")");
    const std::int64_t oh = windowed_output_size(x[1], f[0], stride_h, dilation_h, pad);
    const std::int64_t ow = windowed_output_size(x[2], f[1], stride_w, dilation_w, pad);
    // With valid padding a filter that does not fit leaves no output; an empty image stays empty.
    if (pad == padding::valid) {
      const std::int64_t eh = effective_window(f[0], dilation_h);
      const std::int64_t ew = effective_window(f[1], dilation_w);
      if ((x[1] != dyn && eh != dyn && x[1] > 0 && eh > x[1]) || (x[2] != dyn && ew != dyn && x[2] > 0 && ew > x[2]))
        return errors::invalid_argument(name, ": with valid padding the filter (", eh, " x ", ew,
                                        " after dilation) is larger than the input's ", x[1], " x ", x[2],
                                        " image, so the output would be empty (input shape ", x, ", filter shape ",
                                        f, ")");
    }
    return shape{x[0], oh, ow, f[3]};
  }

  friend constexpr bool operator==(const conv2d&, const conv2d&) = default;
};

} // namespace typeflow::ops
