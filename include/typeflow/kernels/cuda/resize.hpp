// SPDX-License-Identifier: Apache-2.0
// GPU kernel of resize (ops/resize.hpp) through libtypeflow_cuda's resize kernel. The axes are mapped
// on the host by resize_map (the CPU kernel's mapping) into one table buffer, copied to a device
// buffer of the pool on the compute stream ahead of the kernel: out_h + out_w entries, so the copy is
// small next to the image.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include <typeflow/cuda/resize.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/resize_map.hpp>
#include <typeflow/ops/resize.hpp>

namespace typeflow::cuda_kernels {

namespace detail {

// The resize of x into y without its tables.
inline gpu::resize_params resize_params_of(const ops::resize& op, const tensor& x, const tensor& y, gpu::elem type) {
  const ops::image_axes a = ops::axes_of(op.format);
  return {.type = type, .bilinear = op.method == ops::resize_method::bilinear, .nchw = op.format == ops::data_format::nchw,
          .batch = x.dim(0), .channels = x.dim(a.c), .in_h = x.dim(a.h), .in_w = x.dim(a.w), .out_h = y.dim(a.h),
          .out_w = y.dim(a.w), .x = x.data(), .y = y.data()};
}

// The tables of p (gpu::resize_table_bytes of them) in host memory, as resize_map maps op's axes.
template <class A>
std::vector<unsigned char> resize_tables_of(const ops::resize& op, const gpu::resize_params& p) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(gpu::resize_table_bytes(p)));
  const std::int64_t n = gpu::resize_table_entries(p);
  auto* index = reinterpret_cast<std::int64_t*>(bytes.data());
  auto* weight = reinterpret_cast<A*>(index + 2 * n);
  const resize_map::axis<A> rows{index, index + n, weight, weight + n};
  const resize_map::axis<A> cols{rows.first + p.out_h, rows.second + p.out_h, rows.first_weight + p.out_h,
                                 rows.second_weight + p.out_h};
  resize_map::map_axis(op, p.in_h, p.out_h, op.scale_h, rows);
  resize_map::map_axis(op, p.in_w, p.out_w, op.scale_w, cols);
  return bytes;
}

}  // namespace detail

template <class Op, class Device, class T>
struct cuda_resize_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;  // enqueues
  // Bilinear arithmetic: f32 for f32, f16 and bf16; f64 for f64 (the CPU kernel's).
  using acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

  static status compute(const ops::resize& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    if (ctx.device.streams().capturing())
      return ctx.device.streams().refuse_capture(Op::name, "it copies its interpolation tables from host memory "
                                                           "that lives for the call only");
    gpu::resize_params p = detail::resize_params_of(op, x, y, detail::elem_of<T>);
    const std::vector<unsigned char> host = detail::resize_tables_of<acc>(op, p);
    auto tables = ctx.device.allocate(dtype::u8, shape{static_cast<std::int64_t>(host.size())});
    if (!tables.ok()) return tables.status().with_context(Op::name);
    auto& compute = ctx.device.streams().current();
    // From pageable memory: the call returns once the bytes are staged, so `host` may go.
    if (auto s = gpu::copy_async(compute, tables->data(), host.data(), host.size(), gpu::copy_kind::host_to_device); !s.ok())
      return s.with_context(Op::name);
    p.tables = tables->data();
    return gpu::resize(compute, p);
  }
};

}  // namespace typeflow::cuda_kernels
