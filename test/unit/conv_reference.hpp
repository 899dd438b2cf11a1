// SPDX-License-Identifier: Apache-2.0
// conv2d's nested-loop reference (double precision, TensorFlow's and ONNX's padding arithmetic
// written out again), its cases, and the check of a registry's conv2d kernel against it on random
// inputs; used by test_conv (the default kernels) and test_onednn.
#pragma once

#include "support.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace conv_reference {

namespace tf = typeflow;
using tf::ops::data_format;
using tf::ops::padding;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;

// One spatial dimension as TensorFlow (same, valid) and ONNX (explicit pads, ceil_mode) compute
// it: output positions, padding before, and where the padded input ends.
struct window_1d {
  std::int64_t out, pad_before, padded_end;
};

window_1d ref_window(std::int64_t in, std::int64_t size, std::int64_t stride, std::int64_t dilation, padding pad,
                     std::int64_t before = 0, std::int64_t after = 0, bool ceil = false) {
  const std::int64_t extent = (size - 1) * dilation + 1;
  if (in == 0) return {0, 0, 0};
  if (pad == padding::same) {
    const std::int64_t out = (in + stride - 1) / stride;
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + extent - in, 0);
    return {out, total / 2, in + total - total / 2};
  }
  if (pad == padding::valid) before = after = 0;
  const std::int64_t padded = in + before + after;
  if (padded < extent) return {0, before, in + after};
  const double steps = static_cast<double>(padded - extent) / static_cast<double>(stride);
  std::int64_t out = static_cast<std::int64_t>(ceil ? std::ceil(steps) : std::floor(steps)) + 1;
  if (ceil && (out - 1) * stride >= in + before) --out;  // the last window starts in the image or its front padding
  return {out, before, in + after};
}

// Flat index of pixel (b, y, x) channel c of an image [n, h, w, c] laid out in `format`.
std::size_t image_index(data_format format, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t b,
                        std::int64_t y, std::int64_t x, std::int64_t ci) {
  return static_cast<std::size_t>(format == data_format::nhwc ? ((b * h + y) * w + x) * c + ci
                                                              : ((b * c + ci) * h + y) * w + x);
}

// The image shape [n, h, w, c] in `format`.
tf::shape image_shape(data_format format, std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c) {
  return format == data_format::nhwc ? tf::shape{n, h, w, c} : tf::shape{n, c, h, w};
}

// y[b, i, j, o] = sum over (di, dj, c) of x[b, i*sh + di*dh - top, j*sw + dj*dw - left, c] * f[di, dj, c, o],
// x zero outside the image; read and written in the op's format.
std::vector<double> reference_conv2d(const tf::shape& xs, const tf::tensor& f_t, const std::vector<double>& x,
                                     const std::vector<double>& f, const tf::ops::conv2d& op, tf::shape& out_shape) {
  const bool nhwc = op.format == data_format::nhwc;
  const std::int64_t n = xs[0], h = xs[nhwc ? 1 : 2], w = xs[nhwc ? 2 : 3], c = xs[nhwc ? 3 : 1];
  const std::int64_t kh = f_t.dim(0), kw = f_t.dim(1), k = f_t.dim(3);
  const auto wy = ref_window(h, kh, op.stride_h, op.dilation_h, op.pad, op.pad_top, op.pad_bottom);
  const auto wx = ref_window(w, kw, op.stride_w, op.dilation_w, op.pad, op.pad_left, op.pad_right);
  out_shape = image_shape(op.format, n, wy.out, wx.out, k);
  std::vector<double> y(static_cast<std::size_t>(n * wy.out * wx.out * k));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < wy.out; ++i)
      for (std::int64_t j = 0; j < wx.out; ++j)
        for (std::int64_t o = 0; o < k; ++o) {
          double sum = 0;
          for (std::int64_t di = 0; di < kh; ++di)
            for (std::int64_t dj = 0; dj < kw; ++dj) {
              const std::int64_t iy = i * op.stride_h + di * op.dilation_h - wy.pad_before;
              const std::int64_t ix = j * op.stride_w + dj * op.dilation_w - wx.pad_before;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (std::int64_t ci = 0; ci < c; ++ci)
                sum += x[image_index(op.format, h, w, c, b, iy, ix, ci)] *
                       f[static_cast<std::size_t>(((di * kw + dj) * c + ci) * k + o)];
            }
          y[image_index(op.format, wy.out, wx.out, k, b, i, j, o)] = sum;
        }
  return y;
}

struct conv_case {
  tf::shape x, f;  // x as NHWC; checked in both formats
  tf::ops::conv2d op;
};

// Padding modes, strides 1/2/3, dilations, 1x1 filters (the pointwise GEMM and the strided
// path), a filter as large as the image, c_in = 1, batches, odd and even sizes, size 0 and 1,
// explicit pads (asymmetric, larger than the filter, on a 1x1 filter), and cases large enough to
// need several im2col chunks and to split over threads.
const std::vector<conv_case> conv_cases = {
    {{1, 5, 5, 3}, {3, 3, 3, 4}, {}},
    {{1, 5, 5, 3}, {3, 3, 3, 4}, {.pad = padding::same}},
    {{2, 7, 9, 3}, {3, 3, 3, 5}, {.stride_h = 2, .stride_w = 2, .pad = padding::same}},
    {{2, 8, 6, 3}, {3, 3, 3, 5}, {.stride_h = 2, .stride_w = 2, .pad = padding::same}},
    {{2, 7, 9, 3}, {3, 3, 3, 5}, {.stride_h = 2, .stride_w = 2}},
    {{1, 11, 10, 2}, {2, 3, 2, 3}, {.stride_h = 3, .stride_w = 2}},
    {{1, 11, 10, 2}, {2, 3, 2, 3}, {.stride_h = 3, .stride_w = 3, .pad = padding::same}},
    {{1, 9, 8, 4}, {3, 3, 4, 2}, {.dilation_h = 2, .dilation_w = 2}},
    {{2, 9, 8, 4}, {3, 3, 4, 2}, {.pad = padding::same, .dilation_h = 2, .dilation_w = 3}},
    {{1, 10, 11, 2}, {3, 2, 2, 3}, {.stride_h = 2, .stride_w = 3, .pad = padding::same, .dilation_h = 2}},
    {{1, 6, 7, 3}, {2, 2, 3, 2}, {.pad = padding::same}},  // even filter: the extra pad goes after
    {{1, 6, 7, 3}, {4, 4, 3, 2}, {.pad = padding::same}},
    {{2, 6, 5, 7}, {1, 1, 7, 3}, {}},
    {{2, 6, 5, 7}, {1, 1, 7, 3}, {.pad = padding::same, .dilation_h = 2}},
    {{2, 6, 5, 7}, {1, 1, 7, 3}, {.stride_h = 2, .stride_w = 2, .pad = padding::same}},
    {{2, 4, 5, 3}, {4, 5, 3, 6}, {}},
    {{2, 4, 5, 3}, {4, 5, 3, 6}, {.pad = padding::same}},
    {{3, 8, 8, 1}, {3, 3, 1, 2}, {.pad = padding::same}},
    {{1, 1, 1, 1}, {1, 1, 1, 1}, {}},
    {{1, 1, 1, 3}, {3, 3, 3, 2}, {.pad = padding::same}},
    {{0, 5, 5, 3}, {3, 3, 3, 4}, {.pad = padding::same}},
    {{1, 0, 5, 3}, {3, 3, 3, 4}, {.pad = padding::same}},
    {{1, 0, 5, 3}, {3, 3, 3, 4}, {}},
    {{1, 5, 5, 3}, {3, 3, 3, 0}, {.pad = padding::same}},
    {{1, 4, 4, 0}, {3, 3, 0, 2}, {.pad = padding::same}},
    {{1, 4, 4, 0}, {1, 1, 0, 2}, {}},
    {{1, 6, 7, 3}, {3, 3, 3, 4}, {.pad = padding::explicit_, .pad_top = 1, .pad_bottom = 2, .pad_left = 0, .pad_right = 1}},
    {{2, 5, 6, 2}, {3, 2, 2, 3}, {.stride_h = 2, .stride_w = 3, .pad = padding::explicit_, .dilation_h = 2, .pad_top = 2,
                                  .pad_bottom = 0, .pad_left = 1, .pad_right = 3}},
    {{1, 3, 4, 2}, {2, 2, 2, 3}, {.pad = padding::explicit_, .pad_top = 4, .pad_bottom = 3, .pad_left = 5, .pad_right = 2}},
    {{2, 5, 4, 3}, {1, 1, 3, 2}, {.pad = padding::explicit_, .pad_top = 1, .pad_bottom = 1, .pad_left = 0, .pad_right = 2}},
    {{1, 2, 2, 1}, {3, 3, 1, 1}, {.pad = padding::explicit_, .pad_top = 1, .pad_bottom = 0, .pad_left = 0, .pad_right = 1}},
    {{2, 40, 40, 32}, {3, 3, 32, 16}, {.pad = padding::same}},
    {{2, 40, 40, 32}, {4, 3, 32, 16}, {.pad = padding::same}},  // f32 NHWC patches in five chunks
    {{3, 33, 31, 16}, {3, 3, 16, 8}, {.stride_h = 1, .stride_w = 2}},
    {{4, 32, 32, 8}, {1, 1, 8, 4}, {}},
    {{2, 37, 29, 24}, {3, 3, 24, 8}, {.pad = padding::explicit_, .pad_top = 1, .pad_bottom = 1, .pad_left = 2, .pad_right = 0}},
    // f32 patches packed from the image for fma_gemm (16 output pixels or more): 37 channels (four
    // runs of 8 and 5 left), 444 deep (fma_gemm's depth block of 256 ends inside a tap), 143 pixels
    // (the last panel of 6 short); dilated taps of 9 channels in panels inside the image; strided
    // and dilated taps in explicit padding.
    {{1, 11, 13, 37}, {3, 4, 37, 20}, {.pad = padding::same}},
    {{1, 14, 16, 9}, {3, 3, 9, 5}, {.dilation_w = 2}},
    // Runs of a filter row's taps shorter than 8 (channels x filter width), packed element by element:
    // the CNN's first layer (one channel, in a batch of 2); 3 channels 258 deep, whose second depth
    // block starts inside a tap (256 = 85 taps and a channel); 2 channels with strides, a dilation and
    // explicit pads.
    {{2, 28, 28, 1}, {3, 3, 1, 32}, {.pad = padding::same}},
    {{1, 50, 9, 3}, {43, 2, 3, 4}, {}},
    {{1, 13, 12, 2}, {3, 3, 2, 5}, {.stride_h = 2, .pad = padding::explicit_, .dilation_w = 2, .pad_top = 1,
                                    .pad_bottom = 2, .pad_left = 2, .pad_right = 0}},
    {{2, 13, 11, 12}, {3, 3, 12, 18}, {.stride_h = 2, .stride_w = 2, .pad = padding::explicit_, .dilation_h = 2,
                                       .dilation_w = 2, .pad_top = 2, .pad_bottom = 1, .pad_left = 1, .pad_right = 2}},
    // f32 NHWC 3x3 of stride 1 with 8 channels or more in and out and 16 output tiles or more:
    // Winograd (kernels/cpu/detail/winograd.hpp; the NCHW runs take the patches). Odd output sizes
    // (a tile's second row and column past the image), 8 channels (no channel left after the vectors
    // of 8, half a panel of 16 outputs), 13 -> 21 (5 left of each), 37 -> 20 in a batch of 2, 260
    // deep (two depth blocks of fma_gemm), asymmetric explicit pads, and the first case above too.
    {{1, 9, 11, 8}, {3, 3, 8, 8}, {}},
    {{2, 10, 12, 13}, {3, 3, 13, 21}, {.pad = padding::same}},
    {{2, 11, 13, 37}, {3, 3, 37, 20}, {.pad = padding::same}},
    {{1, 9, 8, 260}, {3, 3, 260, 9}, {.pad = padding::same}},
    {{3, 15, 14, 16}, {3, 3, 16, 40}, {.pad = padding::explicit_, .pad_top = 0, .pad_bottom = 2, .pad_left = 2, .pad_right = 1}},
};

template <class T, class Registry = tf::default_registry, class Device>
void check_conv2d(Device& device, double tol) {
  std::uint64_t seed = 100;
  for (const data_format format : {data_format::nhwc, data_format::nchw}) {
    for (const auto& c : conv_cases) {
      tf::ops::conv2d op = c.op;
      op.format = format;
      const tf::shape xs = image_shape(format, c.x[0], c.x[1], c.x[2], c.x[3]);
      INFO("conv2d " << tf::name_of(tf::dtype_of<T>) << ", " << tf::ops::name_of(format) << " input "
                     << xs.to_string() << ", filter " << c.f.to_string() << ", stride " << op.stride_h << "x"
                     << op.stride_w << ", dilation " << op.dilation_h << "x" << op.dilation_w << ", "
                     << tf::ops::name_of(op.pad) << " padding " << op.pad_top << " " << op.pad_bottom << " "
                     << op.pad_left << " " << op.pad_right);
      const tf::tensor x = random_tensor<T>(xs, seed++);
      const tf::tensor f = random_tensor<T>(c.f, seed++);
      auto y = tf::call<T, Registry>(device, op, x, f);
      REQUIRE(y.ok());
      tf::shape expected_shape;
      const auto expected = reference_conv2d(xs, f, as_doubles<T>(x), as_doubles<T>(f), op, expected_shape);
      require_close<T>(*y, expected_shape, expected, tol);
    }
  }
}

}  // namespace conv_reference
