// SPDX-License-Identifier: Apache-2.0
// GPU kernels of bias_add, layer_norm and batch_norm (ops/nn.hpp).
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>

#include <typeflow/core/shape.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/nn.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/nn.hpp>

namespace typeflow::cuda_kernels {

// value [..., c] + bias [c]: the binary add, broadcasting the bias over the rows.
template <class Op, class Device, class T>
struct cuda_bias_add_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::bias_add&, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::binary(ctx.device.streams().current(),
                       {.op = gpu::binary_op::add, .type = detail::elem_of<T>, .a = ctx.inputs[0].data(),
                        .a_dims = detail::dims_of(ctx.inputs[0]), .b = ctx.inputs[1].data(),
                        .b_dims = detail::dims_of(ctx.inputs[1]), .out = ctx.outputs[0].data(),
                        .out_dims = detail::dims_of(ctx.outputs[0])});
  }
};

template <class Op, class Device, class T>
struct cuda_layer_norm_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::layer_norm& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    const auto axis = normalize_axis(op.axis, x.rank());
    if (!axis.ok()) return axis.status().with_context(Op::name);
    std::int64_t rows = 1, n = 1;
    for (std::size_t i = 0; i < x.rank(); ++i) (i < *axis ? rows : n) *= x.dim(i);
    return gpu::layer_norm(ctx.device.streams().current(),
                           {.type = detail::elem_of<T>, .x = x.data(), .rows = rows, .n = n, .scale = ctx.inputs[1].data(),
                            .offset = ctx.inputs[2].data(), .epsilon = op.epsilon, .y = ctx.outputs[0].data()});
  }
};

template <class Op, class Device, class T>
struct cuda_batch_norm_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::batch_norm& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    const std::int64_t channels = x.dim(x.rank() - 1);
    return gpu::batch_norm(ctx.device.streams().current(),
                           {.type = detail::elem_of<T>, .x = x.data(), .rows = channels == 0 ? 0 : x.num_elements() / channels,
                            .channels = channels, .scale = ctx.inputs[1].data(), .offset = ctx.inputs[2].data(),
                            .mean = ctx.inputs[3].data(), .variance = ctx.inputs[4].data(), .epsilon = op.epsilon,
                            .y = ctx.outputs[0].data()});
  }
};

} // namespace typeflow::cuda_kernels
