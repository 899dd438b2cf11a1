// SPDX-License-Identifier: Apache-2.0
// GPU kernels of max_pool2d and avg_pool2d (ops/pool.hpp) through libtypeflow_cuda's pooling kernel:
// each spatial axis described as the CPU kernel walks it (ops::padding_before and padding_after), so
// both devices pool the same taps.
#pragma once

#include <typeflow/fwd.hpp>

#include <type_traits>

#include <typeflow/cuda/pool.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/padding.hpp>
#include <typeflow/ops/pool.hpp>

namespace typeflow::cuda_kernels {

namespace detail {

// One spatial axis of `in` positions and `out` windows of the op's window `a`.
constexpr gpu::pool_axis pool_axis_of(std::int64_t in, std::int64_t out, const ops::window_axis& a, ops::padding pad) {
  return {.in = in,
          .out = out,
          .size = a.size,
          .stride = a.stride,
          .dilation = a.dilation,
          .before = ops::padding_before(in, out, a, pad),
          .padded_end = in + ops::padding_after(in, out, a, pad)};
}

// The pool's parameters for op on images x giving y.
template <class Op>
gpu::pool_params pool_params_of(const Op& op, const tensor& x, const tensor& y, gpu::elem type) {
  constexpr bool is_max = std::is_same_v<Op, ops::max_pool2d>;
  const ops::image_axes ax = ops::axes_of(op.format);
  const ops::window2d win = ops::window_of(op, op.window_h, op.window_w);
  gpu::pool_params p{.kind = is_max ? gpu::pool_kind::max : gpu::pool_kind::average,
                     .type = type,
                     .nchw = op.format == ops::data_format::nchw,
                     .batch = x.dim(0),
                     .channels = x.dim(ax.c),
                     .h = pool_axis_of(x.dim(ax.h), y.dim(ax.h), win.h, op.pad),
                     .w = pool_axis_of(x.dim(ax.w), y.dim(ax.w), win.w, op.pad),
                     .x = x.data(),
                     .y = y.data()};
  if constexpr (!is_max) p.count_include_pad = op.count_include_pad;
  return p;
}

}  // namespace detail

template <class Op, class Device, class T>
struct cuda_pool_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;  // enqueues
  static_assert(std::is_same_v<Op, ops::max_pool2d> || std::is_same_v<Op, ops::avg_pool2d>,
                "cuda_pool_kernel: Op must be max_pool2d or avg_pool2d");

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::pool2d(ctx.device.streams().current(),
                       detail::pool_params_of(op, ctx.inputs[0], ctx.outputs[0], detail::elem_of<T>));
  }
};

}  // namespace typeflow::cuda_kernels
