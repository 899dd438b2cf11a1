// SPDX-License-Identifier: Apache-2.0
// CPU kernel for resize, nearest and bilinear, NHWC and NCHW. Each run first maps every output
// row and column to the input rows and columns it reads (and, bilinear, their weights), into
// scratch tables of h_out + w_out entries; then the output rows are split over the policy's
// threads. NHWC pixels are c-vectors, contiguous: copied (nearest) or blended with Eigen
// (bilinear), vectorised over channels. NCHW rows gather element by element.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/scratch.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/resize_map.hpp>
#include <typeflow/ops/resize.hpp>

namespace typeflow::cpu_kernels {

template <class Op, class Device, class T>
struct resize_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  // Bilinear arithmetic: float for f32, f16 and bf16; double for f64.
  using acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    static_assert(std::is_same_v<Op, ops::resize>, "resize_kernel: Op must be ops::resize");
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const ops::image_axes a = ops::axes_of(op.format);
    const std::int64_t h = x.dim(a.h), w = x.dim(a.w), c = x.dim(a.c);
    const std::int64_t oh = y.dim(a.h), ow = y.dim(a.w);
    const bool bilinear = op.method == ops::resize_method::bilinear;
    if constexpr (std::is_integral_v<T>) {  // inference refuses it first
      if (bilinear)
        return errors::invalid_argument(op.name, ": method bilinear needs a floating-point input, got ", dtype_of<T>);
    }

    // Positions [oh | ow], then second positions [oh | ow]; their weights likewise.
    const auto positions = static_cast<std::size_t>(oh + ow);
    scratch_buffer<std::int64_t> index(2 * positions);
    scratch_buffer<acc> weight(2 * positions);
    const resize_map::axis<acc> rows{index.data(), index.data() + positions, weight.data(), weight.data() + positions};
    const resize_map::axis<acc> cols{rows.first + oh, rows.second + oh, rows.first_weight + oh, rows.second_weight + oh};
    resize_map::map_axis(op, h, oh, op.scale_h, rows);
    resize_map::map_axis(op, w, ow, op.scale_w, cols);

    const T* in = x.unchecked_data<const T>();
    T* out = y.unchecked_data<T>();
    // An NHWC image of one channel lies as an NCHW one does.
    const bool planar = op.format == ops::data_format::nchw || c == 1;
    // Output rows: [n * oh] of ow pixels of c channels (NHWC), or [n * c * oh] of ow values.
    const std::int64_t count = planar ? y.num_elements() / ow : y.dim(0) * oh;
    const std::int64_t row_values = planar ? ow : ow * c;
    const std::int64_t plane_values = planar ? h * w : h * w * c;  // one image (NHWC) or channel (NCHW)
    const std::int64_t line_values = planar ? w : w * c;            // one input row of it
    // Cycles per output row: a copy per value for nearest, 4 reads and 6 flops for bilinear.
    const double row_cost = static_cast<double>(row_values) * (bilinear ? 10.0 : 1.0) + static_cast<double>(ow);

    ctx.device.parallel_for(count, row_cost, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const std::int64_t oy = r % oh;
        const T* src = in + (r / oh) * plane_values;
        const T* top = src + rows.first[oy] * line_values;
        T* dst = out + r * row_values;
        if (!bilinear) {
          if (planar) gather_row(top, cols.first, ow, dst);
          else copy_row(top, cols.first, ow, c, dst);
          continue;
        }
        const T* bottom = src + rows.second[oy] * line_values;
        if (planar) blend_row(top, bottom, rows.first_weight[oy], rows.second_weight[oy], cols, ow, dst);
        else blend_row(top, bottom, rows.first_weight[oy], rows.second_weight[oy], cols, ow, c, dst);
      }
    });
    return ok_status();
  }

 private:
  // dst[x] = row[columns[x]]: a row of single values (NCHW).
  static void gather_row(const T* row, const std::int64_t* columns, std::int64_t ow, T* dst) {
    for (std::int64_t ox = 0; ox < ow; ++ox) dst[ox] = row[columns[ox]];
  }

  // The same for a row of c-vectors (NHWC): one copy of c values per output pixel.
  static void copy_row(const T* row, const std::int64_t* columns, std::int64_t ow, std::int64_t c, T* dst) {
    for (std::int64_t ox = 0; ox < ow; ++ox) std::copy_n(row + columns[ox] * c, c, dst + ox * c);
  }

  // dst[x] = top_weight * top(x) + bottom_weight * bottom(x), each the blend of its row's two
  // columns for x: a row of single values (NCHW).
  static void blend_row(const T* top, const T* bottom, acc top_weight, acc bottom_weight,
                        const resize_map::axis<acc>& cols, std::int64_t ow, T* dst) {
    if constexpr (!std::is_integral_v<T>) {
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        const std::int64_t i0 = cols.first[ox], i1 = cols.second[ox];
        const acc w0 = cols.first_weight[ox], w1 = cols.second_weight[ox];
        const acc t = w0 * static_cast<acc>(top[i0]) + w1 * static_cast<acc>(top[i1]);
        const acc b = w0 * static_cast<acc>(bottom[i0]) + w1 * static_cast<acc>(bottom[i1]);
        dst[ox] = static_cast<T>(top_weight * t + bottom_weight * b);
      }
    }
  }

  // The same for a row of c-vectors (NHWC), blended with Eigen over the channels.
  static void blend_row(const T* top, const T* bottom, acc top_weight, acc bottom_weight,
                        const resize_map::axis<acc>& cols, std::int64_t ow, std::int64_t c, T* dst) {
    if constexpr (!std::is_integral_v<T>) {
      using const_vector = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
      using vector = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        const std::int64_t i0 = cols.first[ox] * c, i1 = cols.second[ox] * c;
        const acc w0 = cols.first_weight[ox], w1 = cols.second_weight[ox];
        // [c] each: the four neighbours in the accumulation type (a no-op cast for f32 and f64).
        const auto top0 = const_vector(top + i0, c).template cast<acc>();
        const auto top1 = const_vector(top + i1, c).template cast<acc>();
        const auto bottom0 = const_vector(bottom + i0, c).template cast<acc>();
        const auto bottom1 = const_vector(bottom + i1, c).template cast<acc>();
        vector(dst + ox * c, c) =
            (top_weight * (w0 * top0 + w1 * top1) + bottom_weight * (w0 * bottom0 + w1 * bottom1)).template cast<T>();
      }
    }
  }
};

struct resize_kernels
    : named_kernel_list<kernel_list<kernel_family<resize_kernel, ops::resize, host_devices,
                                                  dtypes<float, double, Eigen::half, Eigen::bfloat16, std::uint8_t,
                                                         std::int8_t, std::int32_t, std::int64_t>>>> {};

}  // namespace typeflow::cpu_kernels
