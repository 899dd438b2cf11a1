// SPDX-License-Identifier: Apache-2.0
// Windowed ops' padding (conv2d, the pools), TensorFlow's and ONNX's output-size arithmetic for
// one spatial dimension, and the checks and output shape the windowed ops share. Sizes may be
// dyn; a dyn operand makes a dyn result.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <typeflow/core/detail/checked_int.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/ops/data_format.hpp>
#include <typeflow/ops/detail/named_enum.hpp>

namespace typeflow::ops {

// same: the output has ceil(in / stride) positions and the input is zero-padded (split evenly,
// the extra one after) so that the windows cover it. valid: only windows wholly inside the input.
// explicit: the op's pad_top, pad_bottom, pad_left and pad_right, as ONNX's pads and TensorFlow's
// explicit_paddings; windows wholly inside the padded input.
enum class padding : unsigned char { same, valid, explicit_ };

// A named enum (ops/detail/named_enum.hpp): a string in graph files and op_with.
constexpr std::array<std::string_view, 3> names_of(padding) noexcept { return {"same", "valid", "explicit"}; }

// The largest window, stride, dilation or explicit padding an op accepts (TensorFlow keeps them
// in int32), so that the kernels' index arithmetic stays far from overflow.
inline constexpr std::int64_t max_window_attr = 2147483647;

// The extent a window of `size` taps spaced `dilation` apart covers: (size - 1) * dilation + 1.
constexpr std::int64_t effective_window(std::int64_t size, std::int64_t dilation) noexcept {
  if (size == dyn || dilation == dyn) return dyn;
  return typeflow::detail::saturating_add(typeflow::detail::saturating_mul(size - 1, dilation), 1);
}

// One spatial axis of a windowed op: `size` taps spaced `dilation` apart, moved by `stride`;
// `before` and `after` are the explicit padding (used by padding::explicit_ only); `ceil` rounds
// the output size up (ONNX's and PyTorch's ceil_mode; not with same padding).
struct window_axis {
  std::int64_t size = 1;
  std::int64_t stride = 1;
  std::int64_t dilation = 1;
  std::int64_t before = 0;
  std::int64_t after = 0;
  bool ceil = false;
};

// Output positions along one axis of `in` positions (all attributes >= 1 where known; a dyn
// operand makes a dyn result):
//   same:     ceil(in / stride)
//   valid:    floor((in - extent) / stride) + 1, 0 when the window does not fit
//   explicit: the same with in + before + after positions
// where extent = (size - 1) * dilation + 1. With `ceil`, the division rounds up, but the last
// window must start inside the input or its padding before (ONNX's and PyTorch's rule). An empty
// input has no output positions.
constexpr std::int64_t windowed_output_size(std::int64_t in, const window_axis& a, padding pad) noexcept {
  using typeflow::detail::saturating_add;
  if (in == dyn || a.stride == dyn) return dyn;
  if (in == 0) return 0;
  if (pad == padding::same) return saturating_add(in, a.stride - 1) / a.stride;
  const std::int64_t extent = effective_window(a.size, a.dilation);
  if (extent == dyn) return dyn;
  const std::int64_t before = pad == padding::explicit_ ? a.before : 0;
  const std::int64_t padded = pad == padding::explicit_ ? saturating_add(saturating_add(in, a.before), a.after) : in;
  if (extent > padded) return 0;
  const std::int64_t span = padded - extent;
  std::int64_t out = (a.ceil ? saturating_add(span, a.stride - 1) : span) / a.stride + 1;
  if (a.ceil && (out - 1) * a.stride >= in + before) --out;
  return out;
}

// Positions of padding before the input along one axis: the explicit `before`; 0 for valid; for
// same, half the total padding, rounded down, as TensorFlow does:
//   max((out - 1) * stride + (size - 1) * dilation + 1 - in, 0) / 2.
constexpr std::int64_t padding_before(std::int64_t in, std::int64_t out, const window_axis& a, padding pad) noexcept {
  if (pad == padding::explicit_) return a.before;
  if (pad == padding::valid || out <= 0) return 0;
  const std::int64_t total = typeflow::detail::saturating_add(typeflow::detail::saturating_mul(out - 1, a.stride),
                                                             effective_window(a.size, a.dilation)) - in;
  return total > 0 ? total / 2 : 0;
}

// Positions of padding after the input along one axis: the explicit `after`; 0 for valid; for same,
// what the windows reach past the input once `padding_before` is placed.
constexpr std::int64_t padding_after(std::int64_t in, std::int64_t out, const window_axis& a, padding pad) noexcept {
  if (pad == padding::explicit_) return a.after;
  if (pad == padding::valid || out <= 0) return 0;
  const std::int64_t total = typeflow::detail::saturating_add(typeflow::detail::saturating_mul(out - 1, a.stride),
                                                             effective_window(a.size, a.dilation)) - in;
  return total > 0 ? total - padding_before(in, out, a, pad) : 0;
}

// The spatial attributes of conv2d and the pools (window_of reads them from the op).
struct window2d {
  window_axis h, w;
  padding pad = padding::valid;
  data_format format = data_format::nhwc;
};

// The window2d of `op` whose window is kh x kw (the filter's for conv2d): the op's strides,
// dilations, padding, explicit pads, data format and ceil_mode (false for an op without one).
template <class Op>
constexpr window2d window_of(const Op& op, std::int64_t kh, std::int64_t kw) noexcept {
  bool ceil = false;
  if constexpr (requires { op.ceil_mode; }) ceil = op.ceil_mode;
  return {{kh, op.stride_h, op.dilation_h, op.pad_top, op.pad_bottom, ceil},
          {kw, op.stride_w, op.dilation_w, op.pad_left, op.pad_right, ceil},
          op.pad,
          op.format};
}

namespace detail {

// The attributes of `w` that do not depend on the input: strides and dilations in [1,
// max_window_attr], explicit pads in [0, max_window_attr] and only with explicit padding, known
// padding and format codes, no ceil_mode with same padding.
constexpr status check_window(std::string_view op, const window2d& w) {
  const window_axis& h = w.h;
  const window_axis& v = w.w;
  if (h.stride < 1 || v.stride < 1)
    return errors::invalid_argument(op, ": strides must be >= 1, got stride_h ", h.stride, " and stride_w ", v.stride);
  if (h.dilation < 1 || v.dilation < 1)
    return errors::invalid_argument(op, ": dilations must be >= 1, got dilation_h ", h.dilation, " and dilation_w ",
                                    v.dilation);
  if (h.stride > max_window_attr || v.stride > max_window_attr || h.dilation > max_window_attr ||
      v.dilation > max_window_attr)
    return errors::invalid_argument(op, ": strides and dilations must be at most ", max_window_attr, ", got strides ",
                                    h.stride, " x ", v.stride, " and dilations ", h.dilation, " x ", v.dilation);
  if (!is_named(w.pad))
    return errors::invalid_argument(op, ": invalid padding code ", static_cast<int>(w.pad));
  if (!is_named(w.format))
    return errors::invalid_argument(op, ": invalid data_format code ", static_cast<int>(w.format));
  const bool any_pad = h.before != 0 || h.after != 0 || v.before != 0 || v.after != 0;
  if (w.pad != padding::explicit_ && any_pad)
    return errors::invalid_argument(op, ": pad_top, pad_bottom, pad_left and pad_right are for explicit padding; with ",
                                    w.pad, " padding they must be 0, got ", h.before, ", ", h.after, ", ", v.before,
                                    ", ", v.after);
  for (const std::int64_t p : {h.before, h.after, v.before, v.after})
    if (p < 0 || p > max_window_attr)
      return errors::invalid_argument(op, ": explicit pads must be in [0, ", max_window_attr, "], got pad_top ",
                                      h.before, ", pad_bottom ", h.after, ", pad_left ", v.before, " and pad_right ",
                                      v.after);
  if (w.pad == padding::same && (h.ceil || v.ceil))
    return errors::invalid_argument(op, ": ceil_mode applies to valid and explicit padding, not to same");
  return ok_status();
}

// The output of a windowed op on image x (rank 4, w.format's layout): the same batch, the
// windowed height and width, `channels` channels. `what` names the window in messages ("filter",
// "window"). A window larger than a non-empty image (with its explicit padding) is an error.
constexpr result<shape> windowed_shape(std::string_view op, std::string_view what, const shape& x, const window2d& w,
                                       std::int64_t channels) {
  const image_axes ax = axes_of(w.format);
  const std::int64_t h = x[ax.h], v = x[ax.w];
  if (w.pad != padding::same) {
    const bool expl = w.pad == padding::explicit_;
    const std::int64_t eh = effective_window(w.h.size, w.h.dilation), ev = effective_window(w.w.size, w.w.dilation);
    const std::int64_t ph = h == dyn ? dyn : expl ? h + w.h.before + w.h.after : h;
    const std::int64_t pv = v == dyn ? dyn : expl ? v + w.w.before + w.w.after : v;
    if ((h != dyn && eh != dyn && h > 0 && eh > ph) || (v != dyn && ev != dyn && v > 0 && ev > pv)) {
      if (expl)
        return errors::invalid_argument(op, ": with explicit padding the ", what, " (", eh, " x ", ev,
                                        " after dilation) is larger than the input's ", h, " x ", v,
                                        " image with its padding (", ph, " x ", pv,
                                        "), so the output would be empty (input shape ", x, ")");
      return errors::invalid_argument(op, ": with valid padding the ", what, " (", eh, " x ", ev,
                                      " after dilation) is larger than the input's ", h, " x ", v,
                                      " image, so the output would be empty (input shape ", x, ")");
    }
  }
  shape out = x;
  out[ax.h] = windowed_output_size(h, w.h, w.pad);
  out[ax.w] = windowed_output_size(v, w.w, w.pad);
  out[ax.c] = channels;
  return out;
}

}  // namespace detail

} // namespace typeflow::ops
