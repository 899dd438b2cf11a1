// SPDX-License-Identifier: Apache-2.0
// GPU kernels of the reductions, argmax (ops/reduction.hpp), softmax and log_softmax (ops/nn.hpp).
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstdint>
#include <span>

#include <typeflow/cuda/reduction.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/nn.hpp>
#include <typeflow/ops/reduction.hpp>

namespace typeflow::cuda_kernels {

template <class Op, class Device, class T>
struct cuda_reduce_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    std::array<int, int_list::capacity> axes{};
    for (std::size_t i = 0; i < op.axes.size(); ++i) axes[i] = static_cast<int>(op.axes[i]);
    // keep_dims only changes the output's shape, not its elements.
    return gpu::reduce(ctx.device.streams().current(),
                       {.op = static_cast<gpu::reduce_op>(Op::kind), .type = detail::elem_of<T>, .x = ctx.inputs[0].data(),
                        .x_dims = detail::dims_of(ctx.inputs[0]),
                        .axes = std::span<const int>(axes.data(), op.axes.size()), .y = ctx.outputs[0].data()});
  }
};

template <class Op, class Device, class T>
struct cuda_argmax_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::argmax& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::argmax(ctx.device.streams().current(),
                       {.type = detail::elem_of<T>, .x = ctx.inputs[0].data(), .x_dims = detail::dims_of(ctx.inputs[0]),
                        .axis = static_cast<int>(op.axis), .select_last_index = op.select_last_index,
                        .y = static_cast<std::int64_t*>(ctx.outputs[0].data())});
  }
};

template <class Op, class Device, class T>
struct cuda_softmax_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::softmax(ctx.device.streams().current(),
                        {.type = detail::elem_of<T>, .x = ctx.inputs[0].data(), .x_dims = detail::dims_of(ctx.inputs[0]),
                         .axis = static_cast<int>(op.axis), .log = Op::log, .y = ctx.outputs[0].data()});
  }
};

} // namespace typeflow::cuda_kernels
