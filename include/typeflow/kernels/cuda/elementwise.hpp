// SPDX-License-Identifier: Apache-2.0
// GPU kernels of the elementwise ops (ops/unary.hpp, ops/binary.hpp, cast): header-only kernel types
// that launch libtypeflow_cuda's kernels on the device's current stream (streams().current()).
#pragma once

#include <typeflow/fwd.hpp>

#include <type_traits>

#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/binary.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow::cuda_kernels {

namespace detail {

template <class Op>
constexpr gpu::unary_op unary_code(const Op& op) {
  if constexpr (std::is_same_v<Op, ops::neg>) return gpu::unary_op::neg;
  else if constexpr (std::is_same_v<Op, ops::abs>) return gpu::unary_op::abs;
  else if constexpr (std::is_same_v<Op, ops::exp>) return gpu::unary_op::exp;
  else if constexpr (std::is_same_v<Op, ops::log>) return gpu::unary_op::log;
  else if constexpr (std::is_same_v<Op, ops::sqrt>) return gpu::unary_op::sqrt;
  else if constexpr (std::is_same_v<Op, ops::rsqrt>) return gpu::unary_op::rsqrt;
  else if constexpr (std::is_same_v<Op, ops::square>) return gpu::unary_op::square;
  else if constexpr (std::is_same_v<Op, ops::tanh>) return gpu::unary_op::tanh;
  else if constexpr (std::is_same_v<Op, ops::sigmoid>) return gpu::unary_op::sigmoid;
  else if constexpr (std::is_same_v<Op, ops::relu>) return gpu::unary_op::relu;
  else if constexpr (std::is_same_v<Op, ops::softplus>) return gpu::unary_op::softplus;
  else if constexpr (std::is_same_v<Op, ops::erf>) return gpu::unary_op::erf;
  else if constexpr (std::is_same_v<Op, ops::gelu>) return op.approximate ? gpu::unary_op::gelu_tanh : gpu::unary_op::gelu;
  else if constexpr (std::is_same_v<Op, ops::leaky_relu>) return gpu::unary_op::leaky_relu;
  else if constexpr (std::is_same_v<Op, ops::hard_sigmoid>) return gpu::unary_op::hard_sigmoid;
  else {
    static_assert(std::is_same_v<Op, ops::clip>, "unary_code: not a unary op of ops/unary.hpp");
    return gpu::unary_op::clip;
  }
}

template <class Op>
constexpr std::pair<double, double> unary_attributes(const Op& op) {
  if constexpr (std::is_same_v<Op, ops::leaky_relu>) return {op.alpha, 0.0};
  else if constexpr (std::is_same_v<Op, ops::hard_sigmoid>) return {op.alpha, op.beta};
  else if constexpr (std::is_same_v<Op, ops::clip>) return {op.min, op.max};
  else return {0.0, 0.0};
}

template <class Op>
constexpr gpu::binary_op binary_code() {
  if constexpr (std::is_same_v<Op, ops::add>) return gpu::binary_op::add;
  else if constexpr (std::is_same_v<Op, ops::sub>) return gpu::binary_op::sub;
  else if constexpr (std::is_same_v<Op, ops::mul>) return gpu::binary_op::mul;
  else if constexpr (std::is_same_v<Op, ops::div>) return gpu::binary_op::div;
  else if constexpr (std::is_same_v<Op, ops::maximum>) return gpu::binary_op::maximum;
  else if constexpr (std::is_same_v<Op, ops::minimum>) return gpu::binary_op::minimum;
  else if constexpr (std::is_same_v<Op, ops::pow>) return gpu::binary_op::pow;
  else if constexpr (std::is_same_v<Op, ops::equal>) return gpu::binary_op::equal;
  else if constexpr (std::is_same_v<Op, ops::less>) return gpu::binary_op::less;
  else {
    static_assert(std::is_same_v<Op, ops::greater>, "binary_code: not a binary op of ops/binary.hpp");
    return gpu::binary_op::greater;
  }
}

} // namespace detail

template <class Op, class Device, class T>
struct cuda_unary_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;  // enqueues

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const auto [alpha, beta] = detail::unary_attributes(op);
    return gpu::unary(ctx.device.streams().current(),
                      {.op = detail::unary_code(op), .type = detail::elem_of<T>, .x = ctx.inputs[0].data(),
                       .y = ctx.outputs[0].data(), .size = ctx.outputs[0].num_elements(), .alpha = alpha, .beta = beta});
  }
};

template <class Op, class Device, class T>
struct cuda_binary_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    constexpr gpu::binary_op code = detail::binary_code<Op>();
    gpu::binary_params p{.op = code, .type = detail::elem_of<T>, .a = ctx.inputs[0].data(),
                         .a_dims = detail::dims_of(ctx.inputs[0]), .b = ctx.inputs[1].data(),
                         .b_dims = detail::dims_of(ctx.inputs[1]), .out = ctx.outputs[0].data(),
                         .out_dims = detail::dims_of(ctx.outputs[0])};
    // Integer division and powers can fail on the data: those wait for the kernel's verdict.
    if constexpr (std::is_integral_v<T> && (code == gpu::binary_op::div || code == gpu::binary_op::pow)) {
      return ctx.device.streams().checked(Op::name, [&](unsigned* error_word) {
        p.error_word = error_word;
        return gpu::binary(ctx.device.streams().current(), p);
      });
    } else
      return gpu::binary(ctx.device.streams().current(), p);
  }
};

template <class Op, class Device, class T>
struct cuda_cast_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::cast& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::cast(ctx.device.streams().current(),
                     {.from = detail::elem_of<T>, .to = static_cast<gpu::elem>(op.to), .x = ctx.inputs[0].data(),
                      .y = ctx.outputs[0].data(), .size = ctx.outputs[0].num_elements()});
  }
};

} // namespace typeflow::cuda_kernels
