// SPDX-License-Identifier: Apache-2.0
// The GPU kernel of fused_elementwise<Tree>: the tree becomes, at compile time, a program of
// gpu::fused_steps (a constexpr array, one per tree), which libtypeflow_cuda compiles with NVRTC into
// one kernel the first time it runs on a device (cuda/fused.hpp). So a static graph's elementwise
// chains run on the GPU as they do on the host, one pass over memory, and the user's code never
// goes through nvcc.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

#include <typeflow/cuda/fused.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/cuda/elementwise.hpp>
#include <typeflow/kernels/fused_inputs.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/fused.hpp>

namespace typeflow::cuda_kernels {

namespace detail {

// Writes a tree's steps in postfix order: operands first, then the op.
template <class Node>
struct fused_writer;

template <std::size_t I, fused::leaf_layout L>
struct fused_writer<fused::leaf<I, L>> {
  static constexpr std::size_t steps = 1;
  static constexpr void write(gpu::fused_step*& out) {
    *out++ = {.what = gpu::fused_step::kind::load,
              .layout = static_cast<gpu::fused_layout>(L),
              .input = static_cast<std::uint16_t>(I)};
  }
};

template <double Value>
struct fused_writer<fused::constant<Value>> {
  static constexpr std::size_t steps = 1;
  static constexpr void write(gpu::fused_step*& out) { *out++ = {.what = gpu::fused_step::kind::constant, .a = Value}; }
};

template <auto Op, class X>
struct fused_writer<fused::unary<Op, X>> {
  static constexpr std::size_t steps = fused_writer<X>::steps + 1;
  static constexpr void write(gpu::fused_step*& out) {
    fused_writer<X>::write(out);
    const auto [alpha, beta] = unary_attributes(Op);
    *out++ = {.what = gpu::fused_step::kind::unary, .unary = unary_code(Op), .a = alpha, .b = beta};
  }
};

template <auto Op, class A, class B>
struct fused_writer<fused::binary<Op, A, B>> {
  static constexpr std::size_t steps = fused_writer<A>::steps + fused_writer<B>::steps + 1;
  static constexpr void write(gpu::fused_step*& out) {
    fused_writer<A>::write(out);
    fused_writer<B>::write(out);
    *out++ = {.what = gpu::fused_step::kind::binary, .binary = binary_code<std::remove_cvref_t<decltype(Op)>>()};
  }
};

}  // namespace detail

// A fused tree's program, as the GPU kernel passes it to the library.
template <class Tree>
inline constexpr auto fused_program = [] {
  std::array<gpu::fused_step, detail::fused_writer<Tree>::steps> program{};
  gpu::fused_step* out = program.data();
  detail::fused_writer<Tree>::write(out);
  return program;
}();

template <class Op, class Device, class T>
struct cuda_fused_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;  // enqueues

  using tree = typename Op::tree;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& y = ctx.outputs[0];
    if (auto s = fused::check_inputs<tree>(Op::name, ctx.inputs, y); !s.ok()) return s;
    if (y.num_elements() == 0) return ok_status();
    std::array<const void*, fused::leaf_count<tree>> inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i] = ctx.inputs[i].data();
    return gpu::fused_elementwise(ctx.device.streams().current(),
                                  {.program = fused_program<tree>, .type = detail::elem_of<T>, .inputs = inputs,
                                   .out = y.data(), .size = y.num_elements(), .inner = fused::row_length(y)});
  }
};

}  // namespace typeflow::cuda_kernels
