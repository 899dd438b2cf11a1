// SPDX-License-Identifier: Apache-2.0
// GPU kernel of conv2d (ops/conv.hpp) through libtypeflow_cuda's cuDNN convolution: exact f32 (no
// TF32), f16 and bf16 accumulating in f32. The workspace cuDNN's plan needs (with the filter in
// cuDNN's layout) comes from the device's allocator for the length of the call: the stream it runs
// on (streams().current()) is the only one that touches it, so it returns to the pool at once (a
// CUDA-graph session's branch keeps it: cuda_branches' hold). NCHW images are transposed to
// NHWC and back around the NHWC convolution, through the same workspace pool.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>

#include <typeflow/cuda/array.hpp>
#include <typeflow/cuda/dnn.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/conv.hpp>
#include <typeflow/ops/padding.hpp>

namespace typeflow::cuda_kernels {

namespace detail {

// The convolution of op on NHWC images [n, h, w, c] with an HWIO filter f giving [n, oh, ow, k].
inline gpu::conv2d_params conv2d_params_of(const ops::conv2d& op, const std::int64_t (&x)[4], const tensor& f,
                                           std::int64_t oh, std::int64_t ow, gpu::elem type) {
  const ops::window2d win = ops::window_of(op, f.dim(0), f.dim(1));
  return {.type = type, .batch = x[0], .height = x[1], .width = x[2], .in_channels = x[3],
          .filter_h = f.dim(0), .filter_w = f.dim(1), .out_channels = f.dim(3), .out_h = oh, .out_w = ow,
          .stride_h = op.stride_h, .stride_w = op.stride_w, .dilation_h = op.dilation_h, .dilation_w = op.dilation_w,
          .pad_top = ops::padding_before(x[1], oh, win.h, op.pad), .pad_bottom = ops::padding_after(x[1], oh, win.h, op.pad),
          .pad_left = ops::padding_before(x[2], ow, win.w, op.pad), .pad_right = ops::padding_after(x[2], ow, win.w, op.pad),
          .filter = f.data()};
}

// [n, a, b, c] <-> [n, c, a, b]: to_nhwc copies NCHW src into NHWC dst of dims nhwc, or back.
inline status transpose_images(const gpu::stream& s, gpu::elem type, const std::int64_t (&nhwc)[4], const void* src,
                               void* dst, bool to_nhwc, std::string_view op) {
  const std::int64_t h = nhwc[1], w = nhwc[2], c = nhwc[3];
  const std::int64_t nhwc_strides[] = {h * w * c, w * c, c, 1};
  const std::int64_t nchw_strides[] = {c * h * w, w, 1, h * w};  // of NCHW, walked in NHWC order
  return gpu::strided_copy(s, {.type = type, .dims = nhwc, .src = src, .src_strides = to_nhwc ? nchw_strides : nhwc_strides,
                               .dst = dst, .dst_strides = to_nhwc ? nhwc_strides : nchw_strides},
                           op);
}

}  // namespace detail

template <class Op, class Device, class T>
struct cuda_conv2d_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;  // enqueues

  static status compute(const ops::conv2d& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    const tensor& f = ctx.inputs[1];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const bool nchw = op.format == ops::data_format::nchw;
    const ops::image_axes ax = ops::axes_of(op.format);
    const std::int64_t xd[4] = {x.dim(0), x.dim(ax.h), x.dim(ax.w), x.dim(ax.c)};
    const std::int64_t yd[4] = {y.dim(0), y.dim(ax.h), y.dim(ax.w), y.dim(ax.c)};
    gpu::conv2d_params p = detail::conv2d_params_of(op, xd, f, yd[1], yd[2], detail::elem_of<T>);
    p.x = x.data();
    p.y = y.data();
    auto& streams = ctx.device.streams();
    // NCHW: the images and the output in NHWC temporaries.
    tensor x_nhwc, y_nhwc;
    if (nchw) {
      auto xt = ctx.device.allocate(dtype_of<T>, shape{xd[0], xd[1], xd[2], xd[3]});
      if (!xt.ok()) return xt.status().with_context(Op::name);
      auto yt = ctx.device.allocate(dtype_of<T>, shape{yd[0], yd[1], yd[2], yd[3]});
      if (!yt.ok()) return yt.status().with_context(Op::name);
      x_nhwc = std::move(xt).value();
      y_nhwc = std::move(yt).value();
      if (auto s = detail::transpose_images(streams.current(), p.type, xd, x.data(), x_nhwc.data(), true, Op::name); !s.ok())
        return s;
      p.x = x_nhwc.data();
      p.y = y_nhwc.data();
    }
    auto bytes = streams.conv2d_workspace(p, Op::name);
    if (!bytes.ok()) return bytes.status();
    tensor workspace;
    if (*bytes > 0) {
      auto w = ctx.device.allocate(dtype::u8, shape{static_cast<std::int64_t>(*bytes)});
      if (!w.ok()) return w.status().with_context(Op::name);
      workspace = std::move(w).value();
    }
    if (auto s = streams.conv2d(p, workspace.data(), *bytes, Op::name); !s.ok()) return s;
    if (nchw) return detail::transpose_images(streams.current(), p.type, yd, y_nhwc.data(), y.data(), false, Op::name);
    return ok_status();
  }
};

}  // namespace typeflow::cuda_kernels
