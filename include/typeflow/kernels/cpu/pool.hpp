// SPDX-License-Identifier: Apache-2.0
// CPU kernels for max_pool2d and avg_pool2d on NHWC images: each output pixel reduces the
// c-vectors of its window's input pixels (contiguous in NHWC, so vectorised over channels).
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <typeflow/core/detail/dependent_false.hpp>
#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/padding.hpp>
#include <typeflow/ops/pool.hpp>

namespace typeflow::cpu_kernels {

template <class Op, class Device, class T>
struct pool2d_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    using vector = Eigen::Array<T, Eigen::Dynamic, 1>;
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    const std::int64_t h = x.dim(1), w = x.dim(2), c = x.dim(3);
    const std::int64_t oh = y.dim(1), ow = y.dim(2);
    const std::int64_t rows = y.dim(0) * oh * ow;  // output pixels
    if (rows == 0 || c == 0) return ok_status();
    const std::int64_t pad_top = ops::padding_before(h, oh, op.window_h, op.stride_h, 1, op.pad);
    const std::int64_t pad_left = ops::padding_before(w, ow, op.window_w, op.stride_w, 1, op.pad);
    const T* in = x.unchecked_data<const T>();
    T* out = y.unchecked_data<T>();
    const double pixel_cost = static_cast<double>(op.window_h * op.window_w * c);

    ctx.device.parallel_for(rows, pixel_cost, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const std::int64_t ox = r % ow, oy = (r / ow) % oh, b = r / (ow * oh);
        // The window clipped to the image; never empty (padding is less than a window).
        const std::int64_t y0 = std::max<std::int64_t>(oy * op.stride_h - pad_top, 0);
        const std::int64_t y1 = std::min(oy * op.stride_h - pad_top + op.window_h, h);
        const std::int64_t x0 = std::max<std::int64_t>(ox * op.stride_w - pad_left, 0);
        const std::int64_t x1 = std::min(ox * op.stride_w - pad_left + op.window_w, w);
        Eigen::Map<vector> acc(out + r * c, c);  // [c]
        if constexpr (std::is_same_v<Op, ops::max_pool2d>) acc.setConstant(std::numeric_limits<T>::lowest());
        else if constexpr (std::is_same_v<Op, ops::avg_pool2d>) acc.setZero();
        else static_assert(typeflow::detail::dependent_false<Op>, "pool2d_kernel: Op must be max_pool2d or avg_pool2d");
        for (std::int64_t iy = y0; iy < y1; ++iy) {
          for (std::int64_t ix = x0; ix < x1; ++ix) {
            const Eigen::Map<const vector> v(in + ((b * h + iy) * w + ix) * c, c);
            if constexpr (std::is_same_v<Op, ops::max_pool2d>) acc = acc.max(v);
            else acc += v;
          }
        }
        if constexpr (std::is_same_v<Op, ops::avg_pool2d>) acc /= static_cast<T>((y1 - y0) * (x1 - x0));
      }
    });
    return ok_status();
  }
};

struct pool_kernels
    : named_kernel_list<
          kernel_list<kernel_family<pool2d_kernel, ops::max_pool2d, host_devices, dtypes<float, double, std::int32_t>>,
                      kernel_family<pool2d_kernel, ops::avg_pool2d, host_devices, float_types>>> {};

}  // namespace typeflow::cpu_kernels
