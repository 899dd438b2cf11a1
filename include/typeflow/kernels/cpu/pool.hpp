// SPDX-License-Identifier: Apache-2.0
// CPU kernels for max_pool2d and avg_pool2d on NHWC and NCHW images.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/padding.hpp>
#include <typeflow/ops/pool.hpp>

namespace typeflow::cpu_kernels {

namespace detail {

// The taps [first, last) of a window of `size` taps `dilation` apart starting at `start` whose
// positions start + i * dilation lie in [lo, hi).
struct tap_range {
  std::int64_t first, last;
  std::int64_t count() const { return last - first; }
};

inline tap_range taps_within(std::int64_t start, std::int64_t size, std::int64_t dilation, std::int64_t lo,
                             std::int64_t hi) {
  const std::int64_t first = start >= lo ? 0 : (lo - start + dilation - 1) / dilation;
  const std::int64_t last = start >= hi ? 0 : std::min(size, (hi - 1 - start) / dilation + 1);
  return {first, std::max(first, last)};
}

// One spatial axis of a pool as the kernel walks it: window starts, taps inside the image, and
// the bounds of the image with its padding (what count_include_pad counts).
struct pool_axis {
  std::int64_t in, size, stride, dilation, before, padded_end;

  static pool_axis of(std::int64_t in, std::int64_t out, const ops::window_axis& a, ops::padding pad) {
    const std::int64_t before = ops::padding_before(in, out, a, pad);
    const std::int64_t after = ops::padding_after(in, out, a, pad);
    return {in, a.size, a.stride, a.dilation, before, in + after};
  }
  std::int64_t start(std::int64_t o) const { return o * stride - before; }
  tap_range inside(std::int64_t o) const { return taps_within(start(o), size, dilation, 0, in); }
  tap_range padded(std::int64_t o) const { return taps_within(start(o), size, dilation, -before, padded_end); }
};

}  // namespace detail

// NHWC: each output pixel reduces the c-vectors of its window's taps (contiguous, so vectorised
// over channels). NCHW: each output row of one channel plane, tap by tap. Max starts from -inf
// (the lowest value for integers), so padding is never the maximum; the mean divides by the taps
// inside the image, or with count_include_pad by those inside the image with its padding. A
// window with no tap inside the image (dilations can step over a small one) gives -inf (lowest)
// and 0.
template <class Op, class Device, class T>
struct pool2d_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;
  static constexpr bool is_max = std::is_same_v<Op, ops::max_pool2d>;
  static_assert(is_max || std::is_same_v<Op, ops::avg_pool2d>, "pool2d_kernel: Op must be max_pool2d or avg_pool2d");

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    const ops::image_axes ax = ops::axes_of(op.format);
    const std::int64_t c = x.dim(ax.c), oh = y.dim(ax.h), ow = y.dim(ax.w);
    if (y.num_elements() == 0) return ok_status();
    const ops::window2d win = ops::window_of(op, op.window_h, op.window_w);
    const auto ry = detail::pool_axis::of(x.dim(ax.h), oh, win.h, op.pad);
    const auto rx = detail::pool_axis::of(x.dim(ax.w), ow, win.w, op.pad);
    const T* in = x.unchecked_data<const T>();
    T* out = y.unchecked_data<T>();
    const double pixel_cost = static_cast<double>(op.window_h * op.window_w);
    if (op.format == ops::data_format::nhwc) {
      using vector = Eigen::Array<T, Eigen::Dynamic, 1>;
      ctx.device.parallel_for(y.dim(0) * oh * ow, pixel_cost * static_cast<double>(c),
                              [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t r = first; r < last; ++r) {
          const std::int64_t ox = r % ow, oy = (r / ow) % oh, b = r / (ow * oh);
          const auto ty = ry.inside(oy), tx = rx.inside(ox);
          Eigen::Map<vector> acc(out + r * c, c);  // [c]
          acc.setConstant(is_max ? initial_max() : T(0));
          for (std::int64_t i = ty.first; i < ty.last; ++i) {
            const std::int64_t iy = ry.start(oy) + i * ry.dilation;
            for (std::int64_t j = tx.first; j < tx.last; ++j) {
              const Eigen::Map<const vector> v(in + ((b * ry.in + iy) * rx.in + rx.start(ox) + j * rx.dilation) * c, c);
              if constexpr (is_max) acc = acc.max(v);
              else acc += v;
            }
          }
          if constexpr (!is_max) {
            if (const T d = divisor(op, ry, rx, oy, ox); d != T(0)) acc /= d;
          }
        }
      });
      return ok_status();
    }
    // NCHW: rows of one plane.
    const std::int64_t planes = y.dim(0) * c;
    ctx.device.parallel_for(planes * oh, pixel_cost * static_cast<double>(ow), [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const std::int64_t oy = r % oh, plane = r / oh;
        const T* image = in + plane * ry.in * rx.in;
        T* row = out + r * ow;
        const auto ty = ry.inside(oy);
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const auto tx = rx.inside(ox);
          T acc = is_max ? initial_max() : T(0);
          for (std::int64_t i = ty.first; i < ty.last; ++i) {
            const std::int64_t at = (ry.start(oy) + i * ry.dilation) * rx.in + rx.start(ox);
            for (std::int64_t j = tx.first; j < tx.last; ++j) {
              const T v = image[at + j * rx.dilation];
              if constexpr (is_max) acc = v > acc ? v : acc;
              else acc += v;
            }
          }
          if constexpr (!is_max) {
            if (const T d = divisor(op, ry, rx, oy, ox); d != T(0)) acc /= d;
          }
          row[ox] = acc;
        }
      }
    });
    return ok_status();
  }

 private:
  static T initial_max() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  static T divisor(const Op& op, const detail::pool_axis& ry, const detail::pool_axis& rx, std::int64_t oy,
                   std::int64_t ox) {
    if constexpr (!is_max) {
      if (op.count_include_pad) return static_cast<T>(ry.padded(oy).count() * rx.padded(ox).count());
    }
    return static_cast<T>(ry.inside(oy).count() * rx.inside(ox).count());
  }
};

struct pool_kernels
    : named_kernel_list<kernel_list<
          kernel_family<pool2d_kernel, ops::max_pool2d, host_devices,
                        dtypes<float, double, std::int32_t, std::uint8_t, std::int8_t>>,
          kernel_family<pool2d_kernel, ops::avg_pool2d, host_devices, float_types>>> {};

}  // namespace typeflow::cpu_kernels
