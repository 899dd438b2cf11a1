// SPDX-License-Identifier: Apache-2.0
// GPU kernels of the array ops (ops/array.hpp): reshape, squeeze, expand_dims and identity copy;
// transpose, slice, concat, split and broadcast_to are strided copies; pad, gather and fill have
// kernels of their own. An index outside gather's axis is an invalid_argument (read back from the device).
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstdint>

#include <typeflow/core/shape.hpp>
#include <typeflow/cuda/array.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/array.hpp>

namespace typeflow::cuda_kernels {

namespace detail {

// Row-major strides (in elements) of a tensor.
inline std::array<std::int64_t, max_rank> strides_of(const tensor& t) {
  std::array<std::int64_t, max_rank> s{};
  std::int64_t step = 1;
  for (std::size_t i = t.rank(); i-- > 0;) {
    s[i] = step;
    step *= t.dim(i);
  }
  return s;
}

inline std::span<const std::int64_t> first(const std::array<std::int64_t, max_rank>& a, std::size_t n) {
  return {a.data(), n};
}

// Output 0 (row-major) from src, element i... of the output read at sum(i_d * from_d).
template <class T, class Device>
status copy_to_output(kernel_context<Device>& ctx, std::string_view op, const void* src,
                      const std::array<std::int64_t, max_rank>& from, std::size_t output = 0) {
  const tensor& y = ctx.outputs[output];
  const auto to = strides_of(y);
  return gpu::strided_copy(ctx.device.streams().current(),
                           {.type = elem_of<T>, .dims = dims_of(y), .src = src, .src_strides = first(from, y.rank()),
                            .dst = y.data(), .dst_strides = first(to, y.rank())},
                           op);
}

} // namespace detail

static_assert(static_cast<int>(gpu::pad_mode::constant) == static_cast<int>(ops::pad_mode::constant) &&
                  static_cast<int>(gpu::pad_mode::reflect) == static_cast<int>(ops::pad_mode::reflect) &&
                  static_cast<int>(gpu::pad_mode::symmetric) == static_cast<int>(ops::pad_mode::symmetric) &&
                  static_cast<int>(gpu::pad_mode::edge) == static_cast<int>(ops::pad_mode::edge),
              "gpu::pad_mode lists ops::pad_mode's values in its order");

// The output holds the input's elements in the same order (reshape, squeeze, expand_dims, identity).
template <class Op, class Device, class T>
struct cuda_copy_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    if (ctx.outputs[0].data() == ctx.inputs[0].data()) return ok_status();  // forwarded in place
    return gpu::copy_async(ctx.device.streams().current(), ctx.outputs[0].data(), ctx.inputs[0].data(),
                           ctx.inputs[0].bytes(), gpu::copy_kind::device_to_device);
  }
};

template <class Op, class Device, class T>
struct cuda_transpose_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::transpose& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    const tensor& y = ctx.outputs[0];
    const int_list perm = op.permutation(x.rank());
    const auto in = detail::strides_of(x);
    std::array<std::int64_t, max_rank> from{};
    for (std::size_t i = 0; i < y.rank(); ++i) from[i] = in[static_cast<std::size_t>(perm[i])];
    return detail::copy_to_output<T>(ctx, Op::name, x.data(), from);
  }
};

template <class Op, class Device, class T>
struct cuda_slice_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::slice& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    const auto in = detail::strides_of(x);
    std::array<std::int64_t, max_rank> from{};
    std::int64_t base = 0;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      auto axis = op.resolve(x.shape(), i);
      if (!axis.ok()) return axis.status();
      base += axis->begin * in[i];
      from[i] = axis->stride * in[i];
    }
    return detail::copy_to_output<T>(ctx, Op::name, static_cast<const T*>(x.data()) + base, from);
  }
};

template <class Op, class Device, class T>
struct cuda_concat_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::concat& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    tensor& y = ctx.outputs[0];
    const auto axis = normalize_axis(op.axis, y.rank());
    if (!axis.ok()) return axis.status().with_context(Op::name);
    const auto to = detail::strides_of(y);
    std::int64_t offset = 0;  // along the axis
    for (const tensor& x : ctx.inputs) {
      const auto from = detail::strides_of(x);
      if (auto s = gpu::strided_copy(ctx.device.streams().current(),
                                     {.type = detail::elem_of<T>, .dims = detail::dims_of(x), .src = x.data(),
                                      .src_strides = detail::first(from, x.rank()),
                                      .dst = static_cast<T*>(y.data()) + offset * to[*axis],
                                      .dst_strides = detail::first(to, y.rank())},
                                     Op::name);
          !s.ok())
        return s;
      offset += x.dim(*axis);
    }
    return ok_status();
  }
};

template <class Op, class Device, class T>
struct cuda_split_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::split& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    const auto axis = normalize_axis(op.axis, x.rank());
    if (!axis.ok()) return axis.status().with_context(Op::name);
    const auto from = detail::strides_of(x);
    for (std::size_t k = 0; k < ctx.outputs.size(); ++k) {
      // Output k starts k parts along the axis; it steps through x with x's strides.
      const std::int64_t start = static_cast<std::int64_t>(k) * ctx.outputs[k].dim(*axis);
      if (auto s = detail::copy_to_output<T>(ctx, Op::name, static_cast<const T*>(x.data()) + start * from[*axis], from, k);
          !s.ok())
        return s;
    }
    return ok_status();
  }
};

template <class Op, class Device, class T>
struct cuda_pad_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::pad& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::pad(ctx.device.streams().current(),
                    {.type = detail::elem_of<T>, .x = ctx.inputs[0].data(), .x_dims = detail::dims_of(ctx.inputs[0]),
                     .paddings = std::span<const std::int64_t>(op.paddings.begin(), op.paddings.size()),
                     .mode = static_cast<gpu::pad_mode>(op.mode), .value = op.value, .y = ctx.outputs[0].data()});
  }
};

template <class Op, class Device, class T>
struct cuda_broadcast_to_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::broadcast_to&, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    const tensor& y = ctx.outputs[0];
    const auto in = detail::strides_of(x);
    std::array<std::int64_t, max_rank> from{};  // 0 where x is broadcast
    const std::size_t lead = y.rank() - x.rank();
    for (std::size_t i = lead; i < y.rank(); ++i) from[i] = x.dim(i - lead) == 1 ? 0 : in[i - lead];
    return detail::copy_to_output<T>(ctx, Op::name, x.data(), from);
  }
};

// The kernel's dtype is x's (input 1); the condition is bool.
template <class Op, class Device, class T>
struct cuda_where_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::where&, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::select(ctx.device.streams().current(),
                       {.type = detail::elem_of<T>, .condition = static_cast<const bool*>(ctx.inputs[0].data()),
                        .condition_dims = detail::dims_of(ctx.inputs[0]), .x = ctx.inputs[1].data(),
                        .x_dims = detail::dims_of(ctx.inputs[1]), .y = ctx.inputs[2].data(),
                        .y_dims = detail::dims_of(ctx.inputs[2]), .out = ctx.outputs[0].data(),
                        .out_dims = detail::dims_of(ctx.outputs[0])});
  }
};

template <class Op, class Device, class T>
struct cuda_gather_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::gather& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& params = ctx.inputs[0];
    const tensor& indices = ctx.inputs[1];
    const auto axis = normalize_axis(op.axis, params.rank());
    if (!axis.ok()) return axis.status().with_context(Op::name);
    gpu::gather_params p{.type = detail::elem_of<T>, .params = params.data(), .axis = params.dim(*axis),
                         .index_type = static_cast<gpu::elem>(indices.dtype()), .indices = indices.data(),
                         .count = indices.num_elements(), .out = ctx.outputs[0].data()};
    for (std::size_t i = 0; i < *axis; ++i) p.outer *= params.dim(i);
    for (std::size_t i = *axis + 1; i < params.rank(); ++i) p.inner *= params.dim(i);
    // Indices outside the axis show only on the device: the check waits for its verdict.
    return ctx.device.streams().checked(Op::name, [&](unsigned* error_word) {
      p.error_word = error_word;
      return gpu::gather(ctx.device.streams().current(), p);
    });
  }
};

template <class Op, class Device, class T>
struct cuda_fill_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::fill& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    return gpu::fill(ctx.device.streams().current(), detail::elem_of<T>, ctx.outputs[0].data(),
                     ctx.outputs[0].num_elements(), op.value);
  }
};

} // namespace typeflow::cuda_kernels
