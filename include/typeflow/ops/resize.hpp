// SPDX-License-Identifier: Apache-2.0
// resize: the height and width of NHWC or NCHW images resized by nearest-neighbour or bilinear
// interpolation (TensorFlow's tf.image.resize, ONNX's Resize with mode nearest or linear). Where
// each output pixel reads from follows ONNX's coordinate transformation modes.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/ops/data_format.hpp>
#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/detail/named_enum.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::ops {

// nearest: each output pixel is the input pixel its source coordinate rounds to (by a
// nearest_rounding); bilinear: the four input pixels around the source coordinate, weighted by
// their distance along each axis.
enum class resize_method : unsigned char { nearest, bilinear };

constexpr std::array<std::string_view, 2> names_of(resize_method) noexcept { return {"nearest", "bilinear"}; }

// Where output position x (along an axis of `in` input and `out` output positions, scale s)
// reads from, as ONNX's coordinate_transformation_mode:
//   half_pixel:         (x + 0.5) / s - 0.5      (TensorFlow 2's tf.image.resize)
//   pytorch_half_pixel: the same, 0 when the axis is resized to length 1
//   align_corners:      x * (in - 1) / (length - 1), 0 when length is 1 (TensorFlow 1's align_corners)
//   asymmetric:         x / s                    (TensorFlow 1's default)
// `length` is the resized axis's length: out, or in * s unrounded when the scale is given, as ONNX
// defines it (4 by 0.6 gives 2 pixels but aligns the corners of a length of 2.4).
enum class resize_coordinates : unsigned char { half_pixel, pytorch_half_pixel, align_corners, asymmetric };

constexpr std::array<std::string_view, 4> names_of(resize_coordinates) noexcept {
  return {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
}

// How nearest rounds a source coordinate to a pixel (ONNX's nearest_mode): to the nearest pixel
// with halves down (round_prefer_floor) or up (round_prefer_ceil), or down (floor) or up (ceil).
enum class nearest_rounding : unsigned char { round_prefer_floor, round_prefer_ceil, floor, ceil };

constexpr std::array<std::string_view, 4> names_of(nearest_rounding) noexcept {
  return {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
}

namespace detail {

// floor(v) for |v| < 2^62 (std::floor is not constexpr in C++20).
constexpr std::int64_t floor_to_int(double v) {
  const auto t = static_cast<std::int64_t>(v);
  return static_cast<double>(t) > v ? t - 1 : t;
}

// The output length along one axis of `in` positions (dyn when unknown) from the op's size and
// scale for it; `size_name` and `scale_name` name them in messages.
constexpr result<std::int64_t> resized_length(std::string_view op, std::string_view size_name,
                                              std::string_view scale_name, std::int64_t in, std::int64_t size,
                                              double scale, const shape& x) {
  if (size < 0)
    return errors::invalid_argument(op, ": ", size_name, " must be >= 0 (0 takes it from ", scale_name, "), got ", size);
  if (!(scale >= 0) || scale > std::numeric_limits<double>::max())
    return errors::invalid_argument(op, ": ", scale_name, " must be finite and >= 0 (0 takes it from ", size_name,
                                    "), got ", scale);
  if (size == 0 && scale == 0)
    return errors::invalid_argument(op, ": neither ", size_name, " nor ", scale_name,
                                    " is given (both are 0); give the output's ", size_name, ", the scale, or both");
  std::int64_t out = size;
  if (size == 0) {
    if (in == dyn) return dyn;
    const double length = static_cast<double>(in) * scale;
    if (length >= static_cast<double>(max_num_elements))
      return errors::invalid_argument(op, ": ", scale_name, " ", scale, " of the input's ", size_name, " ", in,
                                      " makes an output ", size_name, " past ", max_num_elements);
    out = floor_to_int(length);
  }
  if (in == 0 && out > 0)
    return errors::invalid_argument(op, ": the input's ", size_name, " is 0 (input shape ", x,
                                    "); an empty image cannot be resized to ", size_name, " ", out);
  if (out == 0 && in > 0 && known_num_elements(x) != 0)
    return errors::invalid_argument(op, ": ", scale_name, " ", scale, " of the input's ", size_name, " ", in,
                                    " makes an output ", size_name, " of 0 (input shape ", x, ")");
  return out;
}

}  // namespace detail

// [n, h, w, c] -> [n, height, width, c] (NHWC), or [n, c, h, w] -> [n, c, height, width] (NCHW).
// Along each axis the output length is the size given (height, width) or else floor(in * scale)
// (scale_h, scale_w); at least one of the two is given (> 0). When both are, the size is the
// output's and the scale maps coordinates (as TensorFlow's ScaleAndTranslate takes them; ONNX
// gives one).
// Without a scale, an axis scales by out / in. Output pixel x reads from source coordinate
// source_coordinate(...) below, computed in double; then
//   nearest:  the pixel that coordinate rounds to by `rounding`, clamped to [0, in - 1];
//   bilinear: the coordinate clamped to [0, in - 1], i0 = floor, i1 = min(i0 + 1, in - 1),
//             weight t = coordinate - i0: (1 - t) * x[i0] + t * x[i1] along each axis, in the
//             element type's precision (float for f32, f16 and bf16; double for f64).
// nearest takes every numeric dtype, bilinear floating point only.
struct resize {
  static constexpr std::string_view name = "resize";
  static constexpr int num_inputs = 1;
  std::int64_t height = 0;  // the output's height; 0: floor(h * scale_h)
  std::int64_t width = 0;   // the output's width; 0: floor(w * scale_w)
  double scale_h = 0;       // 0: height / h
  double scale_w = 0;       // 0: width / w
  resize_method method = resize_method::bilinear;
  resize_coordinates coordinates = resize_coordinates::half_pixel;
  nearest_rounding rounding = nearest_rounding::round_prefer_floor;
  data_format format = data_format::nhwc;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    if (method == resize_method::bilinear && is_valid(in[0]) && !is_floating(in[0]))
      return errors::invalid_argument(name, ": method bilinear needs a floating-point input (f16, bf16, f32, f64), got ",
                                      in[0], "; nearest takes any numeric dtype");
    return detail::same_dtype(name, in, detail::accepts::numbers);
  }

  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    if (!is_named(format))
      return errors::invalid_argument(name, ": invalid data_format code ", static_cast<int>(format));
    if (auto st = detail::require_rank(name, format == data_format::nchw ? "input (NCHW images)" : "input (NHWC images)",
                                       x, 4);
        !st.ok())
      return st;
    if (!is_named(method))
      return errors::invalid_argument(name, ": invalid method code ", static_cast<int>(method));
    if (!is_named(coordinates))
      return errors::invalid_argument(name, ": invalid coordinates code ", static_cast<int>(coordinates));
    if (!is_named(rounding))
      return errors::invalid_argument(name, ": invalid nearest_mode code ", static_cast<int>(rounding));
    const image_axes a = axes_of(format);
    const auto h = detail::resized_length(name, "height", "scale_h", x[a.h], height, scale_h, x);
    if (!h.ok()) return h.status();
    const auto w = detail::resized_length(name, "width", "scale_w", x[a.w], width, scale_w, x);
    if (!w.ok()) return w.status();
    shape out = x;
    out[a.h] = *h;
    out[a.w] = *w;
    return out;
  }

  friend constexpr bool operator==(const resize&, const resize&) = default;
};

// The scale of an axis of `in` positions resized to `out`: the given one, or out / in.
constexpr double resize_scale(double scale, std::int64_t in, std::int64_t out) {
  return scale > 0 ? scale : static_cast<double>(out) / static_cast<double>(in);
}

// The source coordinate of output position x along an axis of `in` input and `out` output
// positions, for the op's scale attribute `scale` of that axis (0: not given); resize_coordinates
// says how. Not clamped: nearest and bilinear clamp it to [0, in - 1] each in its own way.
constexpr double source_coordinate(resize_coordinates mode, std::int64_t x, std::int64_t in, std::int64_t out,
                                   double scale) {
  const double s = resize_scale(scale, in, out);
  const double length = scale > 0 ? static_cast<double>(in) * scale : static_cast<double>(out);
  const auto pos = static_cast<double>(x);
  switch (mode) {
    case resize_coordinates::half_pixel: return (pos + 0.5) / s - 0.5;
    case resize_coordinates::pytorch_half_pixel: return length > 1 ? (pos + 0.5) / s - 0.5 : 0.0;
    case resize_coordinates::align_corners:
      return length == 1 ? 0.0 : pos * static_cast<double>(in - 1) / (length - 1);
    case resize_coordinates::asymmetric: return pos / s;
  }
  return 0.0;
}

// The input position nearest reads for source coordinate v, of an axis of `in` positions.
constexpr std::int64_t nearest_position(nearest_rounding r, double v, std::int64_t in) {
  const double bound = static_cast<double>(in - 1);
  if (!(v > 0)) return 0;  // also what clamping a NaN gives
  if (v >= bound) return in - 1;
  const std::int64_t f = detail::floor_to_int(v);
  const double fraction = v - static_cast<double>(f);
  std::int64_t p = f;
  switch (r) {
    case nearest_rounding::round_prefer_floor: p = fraction > 0.5 ? f + 1 : f; break;
    case nearest_rounding::round_prefer_ceil: p = fraction >= 0.5 ? f + 1 : f; break;
    case nearest_rounding::floor: p = f; break;
    case nearest_rounding::ceil: p = fraction > 0 ? f + 1 : f; break;
  }
  return p < in - 1 ? p : in - 1;
}

}  // namespace typeflow::ops
