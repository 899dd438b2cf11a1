// SPDX-License-Identifier: Apache-2.0
// CPU kernel for conv2d: im2col + GEMM, on a GEMM backend (kernels/cpu/gemm.hpp). A 1x1 stride-1 convolution is one GEMM over the image as
// it lies; otherwise the patch rows of a chunk of output pixels are gathered into a scratch
// matrix and multiplied by the filter, chunk by chunk, the chunks split over the policy's threads.
// f32 NHWC on the Eigen backend, where fma_gemm runs, skips the scratch matrix: fma_gemm packs the
// patch rows straight from the image (detail::patch_packer). There a 3x3 convolution of stride 1 without
// dilation, of 8 channels or more in and out, runs Winograd's F(2x2, 3x3) instead (detail::winograd_3x3:
// 2.25x fewer multiply-adds; on a 2-core AVX-512 Xeon, one thread, the CNN's second and third
// convolutions at batch 1 took 0.65 and 0.77 of the packed patches' time at -O2, 0.61 and 0.72 at -O3
// -march=native), with the filter transformed once a call, or once for all the runs of a static
// session where it is a variable (pack, compute_packed: kernels/packed_operand.hpp).
// NCHW images take the transposed product per image (compute_nchw), so neither layout is
// transposed around the convolution.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/scratch.hpp>
#include <typeflow/kernels/cpu/detail/im2col.hpp>
#include <typeflow/kernels/cpu/detail/winograd.hpp>
#include <typeflow/kernels/cpu/gemm.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/conv.hpp>

namespace typeflow::cpu_kernels {

template <class Op, class Device, class T, class Gemm>
struct basic_im2col_conv2d_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  // Bytes of patch matrix per chunk. Small enough to stay in a core's L2 between im2col writing
  // it and the GEMM reading it, large enough that each GEMM has a few hundred rows (where fma_gemm
  // packs the patches from the image there is no patch matrix; the chunks stay as sized). Measured on
  // 3x3 64->64 f32 through im2col, before Winograd took that shape (benchmarks/bench_kernels.cpp, -O3
  // -march=native, AVX-512 Xeon): 1 MiB is 5% (1x56x56) and 15% (32x28x28) faster than 8 MiB, and
  // 3-7% faster than 256 KiB.
  static constexpr std::int64_t chunk_bytes = std::int64_t{1} << 20;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    const tensor& f = ctx.inputs[1];
    tensor& y = ctx.outputs[0];
    const auto g = detail::conv_geometry::of(op, x, f, y);
    const std::int64_t rows = g.output_rows();
    if (rows == 0 || g.c_out == 0) return ok_status();
    T* out = y.unchecked_data<T>();
    if (g.c_in == 0) {  // every sum is empty
      std::fill_n(out, y.num_elements(), T(0));
      return ok_status();
    }
    const T* in = x.unchecked_data<const T>();
    if (op.format == ops::data_format::nchw) return compute_nchw(g, in, f.unchecked_data<const T>(), out, ctx);
    if constexpr (has_winograd) {
      if (detail::winograd_3x3::applies(g) && detail::winograd_3x3::tiles(g) >= min_winograd_tiles) {
        const scratch_buffer<float> u(static_cast<std::size_t>(detail::winograd_3x3::packed_filter_size(g)));
        detail::winograd_3x3::transform_filter(g, f.unchecked_data<const T>(), u.data());
        winograd(g, in, u.data(), out, ctx);
        return ok_status();
      }
    }
    const std::int64_t k = g.patch_size();
    // Cycles per output row, counting a multiply-add as one.
    const double row_cost = static_cast<double>(k) * static_cast<double>(g.c_out);

    std::atomic<bool> failed{false};
    if (g.is_pointwise()) {
      // [n*h*w, c_in] x [c_in, c_out] -> [n*h*w, c_out]
      ctx.device.parallel_for(rows, row_cost, [&](std::int64_t first, std::int64_t last) {
        gemm(in + first * k, last - first, k, f.unchecked_data<const T>(), g.c_out, out + first * g.c_out, failed);
      });
      return checked(failed, x, f);
    }

    // Chunks of output rows: at most chunk_bytes of patches each.
    const std::int64_t bytes_per_row = k * static_cast<std::int64_t>(sizeof(T));
    const auto [chunks, chunk_rows] = even_parts(rows, std::max<std::int64_t>(1, chunk_bytes / bytes_per_row), ctx);

    ctx.device.parallel_for(chunks, row_cost * static_cast<double>(chunk_rows),
                            [&](std::int64_t first, std::int64_t last) {
      if (packs_patches(chunk_rows)) {  // f32 on fma_gemm: the patches packed from the image
        for (std::int64_t chunk = first; chunk < last; ++chunk) {
          const std::int64_t r0 = chunk * chunk_rows;
          if constexpr (std::is_same_v<T, float>)
            detail::fma_gemm::gemm_with(detail::patch_packer{g, in, r0}, {f.unchecked_data<const T>(), g.c_out, 1},
                                        std::min(rows, r0 + chunk_rows) - r0, g.c_out, k, out + r0 * g.c_out, g.c_out);
        }
        return;
      }
      // [chunk rows, kh*kw*c_in]
      scratch_buffer<T> patches(static_cast<std::size_t>(std::min(chunk_rows, rows - first * chunk_rows) * k));
      for (std::int64_t chunk = first; chunk < last; ++chunk) {
        const std::int64_t r0 = chunk * chunk_rows;
        const std::int64_t r1 = std::min(rows, r0 + chunk_rows);
        detail::im2col(g, in, r0, r1, patches.data());
        // [chunk rows, kh*kw*c_in] x [kh*kw*c_in, c_out] -> [chunk rows, c_out]
        gemm(patches.data(), r1 - r0, k, f.unchecked_data<const T>(), g.c_out, out + r0 * g.c_out, failed);
      }
    });
    return checked(failed, x, f);
  }

  // The filter kept transformed for Winograd (detail::winograd_3x3) across the runs of a static session
  // where it is a variable: f32 NHWC 3x3 convolutions of stride 1 without dilation, of 8 channels or
  // more in and out, on the Eigen backend where the processor runs fma_gemm.
  static constexpr std::size_t packed_input = 1;
  static constexpr bool has_winograd = std::is_same_v<T, float> && std::is_same_v<Gemm, eigen_gemm>;
  static bool packable(const Op& op, std::span<const tensor> inputs)
    requires has_winograd
  {
    const tensor& f = inputs[1];
    return op.format == ops::data_format::nhwc && f.rank() == 4 && inputs[0].rank() == 4 &&
           detail::winograd_3x3::applies(filter_geometry(op, f));
  }
  // The transformed filter (nullptr when memory is short).
  static std::shared_ptr<const void> pack(const Op& op, std::span<const tensor> inputs)
    requires has_winograd
  {
    if (!packable(op, inputs)) return nullptr;
    try {
      const detail::conv_geometry g = filter_geometry(op, inputs[1]);
      result<tensor> packed = tensor::allocate(dtype::f32, shape{detail::winograd_3x3::packed_filter_size(g)});
      if (!packed.ok()) return nullptr;
      auto form = std::make_shared<winograd_filter>(winograd_filter{g.c_in, g.c_out, std::move(*packed)});
      detail::winograd_3x3::transform_filter(g, inputs[1].unchecked_data<const float>(),
                                             form->packed.template unchecked_data<float>());
      return form;
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  static status compute_packed(const Op& op, kernel_context<Device>& ctx, const void* form)
    requires has_winograd
  {
    const auto& filter = *static_cast<const winograd_filter*>(form);
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    // The form was made from a filter of this shape; anything else (which the session does not give)
    // as compute does.
    if (!packable(op, ctx.inputs) || ctx.inputs[1].dim(2) != filter.c_in || ctx.inputs[1].dim(3) != filter.c_out)
      return compute(op, ctx);
    // packable is Winograd's condition on the filter, and a kept filter is used for any tile count.
    winograd(detail::conv_geometry::of(op, x, ctx.inputs[1], y), x.unchecked_data<const float>(),
             filter.packed.template unchecked_data<const float>(), y.unchecked_data<float>(), ctx);
    return ok_status();
  }

 private:
  // The packed filter is a tensor for its alignment (default_alignment): its panels' rows are then
  // whole cache lines, one per load of the AVX-512 micro-kernel. A std::vector this size (128 KiB and
  // more, from mmap) started 16 bytes past a cache line, so every such load was split over two
  // (fma_gemm's products on b at 16 bytes past a line measured 4-14% slower than on aligned b).
  struct winograd_filter {
    std::int64_t c_in, c_out;
    tensor packed;  // [packed_filter_size] f32: detail::winograd_3x3::transform_filter's
  };

  // The filter's part of the geometry (sizes, strides, dilations), which is what decides Winograd.
  static detail::conv_geometry filter_geometry(const Op& op, const tensor& f) {
    detail::conv_geometry g{};
    g.kh = f.dim(0), g.kw = f.dim(1), g.c_in = f.dim(2), g.c_out = f.dim(3);
    g.stride_h = op.stride_h, g.stride_w = op.stride_w, g.dilation_h = op.dilation_h, g.dilation_w = op.dilation_w;
    return g;
  }

  // Output tiles a call that transforms its filter needs for Winograd (a kept filter: any).
  static constexpr std::int64_t min_winograd_tiles = 16;

  // `count` items (at least one) in parts of at most `most`, as many parts as a multiple of the
  // policy's thread count, so that every thread gets the same share, where there are items enough.
  struct parts_of {
    std::int64_t parts, per_part;
  };
  static parts_of even_parts(std::int64_t count, std::int64_t most, kernel_context<Device>& ctx) {
    const std::int64_t threads = std::max(1, ctx.device.num_threads());
    std::int64_t parts = (count + most - 1) / most;
    parts = std::min(count, (parts + threads - 1) / threads * threads);
    const std::int64_t per_part = (count + parts - 1) / parts;
    return {(count + per_part - 1) / per_part, per_part};
  }

  // y = x (*) the transformed filter u, the output tiles split over the policy's threads in parts of
  // at most a block each (detail::winograd_3x3::block_tiles).
  static void winograd(const detail::conv_geometry& g, const float* x, const float* u, float* y,
                       kernel_context<Device>& ctx) {
    using detail::winograd_3x3;
    const std::int64_t tiles = winograd_3x3::tiles(g);
    if (tiles == 0) return;  // an empty image (compute_packed does not return before, as compute does)
    const auto [parts, per_part] = even_parts(tiles, winograd_3x3::block_tiles(g), ctx);
    ctx.device.parallel_for(parts, winograd_3x3::tile_cost(g) * static_cast<double>(per_part),
                            [&](std::int64_t first, std::int64_t last) {
      winograd_3x3::compute(g, x, u, first * per_part, std::min(tiles, last * per_part), y);
    });
  }

  // Whether chunks of `rows` output pixels go to fma_gemm with their patches packed from the image
  // (detail::patch_packer) instead of im2col + Gemm: f32 on the Eigen backend, chunks of as many
  // rows as it gives fma_gemm (a shorter last chunk goes there too), where the processor runs it.
  static bool packs_patches(std::int64_t rows) {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<Gemm, eigen_gemm>)
      return rows >= eigen_gemm::fma_gemm_min_rows && detail::fma_gemm::available();
    return false;
  }

  // NCHW: per image, y[b] [c_out, oh*ow] = filter^T [c_out, k] x cols [k, oh*ow], the columns in
  // chunks of output pixels (im2col_nchw) split over the policy's threads. A pointwise
  // convolution multiplies the image as it lies. A chunk that is not a whole image is multiplied
  // into scratch and copied into its place, row by row.
  static status compute_nchw(const detail::conv_geometry& g, const T* in, const T* filter, T* out,
                             kernel_context<Device>& ctx) {
    std::atomic<bool> failed{false};
    const std::int64_t k = g.patch_size();
    const std::int64_t pixels = g.oh * g.ow;
    const double pixel_cost = static_cast<double>(k) * static_cast<double>(g.c_out);
    if (g.is_pointwise()) {
      ctx.device.parallel_for(g.n, pixel_cost * static_cast<double>(pixels), [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t b = first; b < last; ++b)
          gemm<true>(filter, g.c_out, k, in + b * k * pixels, pixels, out + b * g.c_out * pixels, failed);
      });
      return checked(failed, ctx.inputs[0], ctx.inputs[1]);
    }
    // Chunks of at most chunk_bytes of columns, at least as many in all as threads.
    const std::int64_t threads = std::max(1, ctx.device.num_threads());
    const std::int64_t bytes_per_pixel = k * static_cast<std::int64_t>(sizeof(T));
    std::int64_t per_image = (pixels * bytes_per_pixel + chunk_bytes - 1) / chunk_bytes;
    per_image = std::clamp<std::int64_t>(std::max(per_image, (threads + g.n - 1) / g.n), 1, pixels);
    const std::int64_t chunk_pixels = (pixels + per_image - 1) / per_image;
    per_image = (pixels + chunk_pixels - 1) / chunk_pixels;
    const bool whole = per_image == 1;
    ctx.device.parallel_for(g.n * per_image, pixel_cost * static_cast<double>(chunk_pixels),
                            [&](std::int64_t first, std::int64_t last) {
      scratch_buffer<T> cols(static_cast<std::size_t>(chunk_pixels * k));
      scratch_buffer<T> result(whole ? 0 : static_cast<std::size_t>(chunk_pixels * g.c_out));
      for (std::int64_t task = first; task < last; ++task) {
        const std::int64_t b = task / per_image;
        const std::int64_t p0 = task % per_image * chunk_pixels, p1 = std::min(pixels, p0 + chunk_pixels);
        const std::int64_t count = p1 - p0;
        detail::im2col_nchw(g, in, b, p0, p1, cols.data());
        T* image = out + b * g.c_out * pixels;
        if (whole) {
          gemm<true>(filter, g.c_out, k, cols.data(), count, image, failed);
          continue;
        }
        gemm<true>(filter, g.c_out, k, cols.data(), count, result.data(), failed);
        for (std::int64_t o = 0; o < g.c_out; ++o) std::copy_n(result.data() + o * count, count, image + o * pixels + p0);
      }
    });
    return checked(failed, ctx.inputs[0], ctx.inputs[1]);
  }

  // c[m, n] = a[m, k] x b[k, n] (Transposed: a[k, m]^T x b[k, n]) on the calling thread, by the
  // backend; `failed` is set when it fails.
  template <bool Transposed = false>
  static void gemm(const T* a, std::int64_t m, std::int64_t k, const T* b, std::int64_t n, T* c,
                   std::atomic<bool>& failed) {
    if (!Gemm::run(Transposed, false, m, n, k, a, Transposed ? m : k, b, n, c, n)) failed = true;
  }

  static status checked(const std::atomic<bool>& failed, const tensor& x, const tensor& f) {
    if (!failed) return ok_status();
    return errors::internal("conv2d: ", Gemm::name, "'s GEMM failed on image ", x.shape().to_string(), " and filter ",
                            f.shape().to_string());
  }
};

// The default kernel: conv2d on the Eigen backend (f32 on fma_gemm where the processor has AVX2 and
// FMA: each chunk's patches are 16 rows or more unless the image is smaller, and NHWC 3x3 convolutions
// of stride 1 by Winograd where they have 8 channels or more in and out).
template <class Op, class Device, class T>
struct im2col_conv2d_kernel : basic_im2col_conv2d_kernel<Op, Device, T, eigen_gemm> {};

struct conv2d_kernels
    : named_kernel_list<kernel_list<kernel_family<im2col_conv2d_kernel, ops::conv2d, host_devices, float_types>>> {};

}  // namespace typeflow::cpu_kernels
