// SPDX-License-Identifier: Apache-2.0
// The geometry of a 2-D convolution and im2col: the patch matrix whose rows are the receptive
// fields of output pixels, so that the convolution is one GEMM with the HWIO filter.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <algorithm>
#include <cstdint>

#include <typeflow/core/tensor.hpp>
#include <typeflow/ops/conv.hpp>
#include <typeflow/ops/padding.hpp>

namespace typeflow::cpu_kernels::detail {

// Sizes of input [n, h, w, c_in], filter [kh, kw, c_in, c_out] and output [n, oh, ow, c_out].
struct conv_geometry {
  std::int64_t n, h, w, c_in;
  std::int64_t kh, kw, c_out;
  std::int64_t oh, ow;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w;
  std::int64_t pad_top, pad_left;

  static conv_geometry of(const ops::conv2d& op, const tensor& x, const tensor& filter, const tensor& y) {
    conv_geometry g{};
    g.n = x.dim(0);
    g.h = x.dim(1);
    g.w = x.dim(2);
    g.c_in = x.dim(3);
    g.kh = filter.dim(0);
    g.kw = filter.dim(1);
    g.c_out = filter.dim(3);
    g.oh = y.dim(1);
    g.ow = y.dim(2);
    g.stride_h = op.stride_h;
    g.stride_w = op.stride_w;
    g.dilation_h = op.dilation_h;
    g.dilation_w = op.dilation_w;
    g.pad_top = ops::padding_before(g.h, g.oh, g.kh, g.stride_h, g.dilation_h, op.pad);
    g.pad_left = ops::padding_before(g.w, g.ow, g.kw, g.stride_w, g.dilation_w, op.pad);
    return g;
  }

  std::int64_t output_rows() const { return n * oh * ow; }
  // Length of one patch row: [kh, kw, c_in] flattened, the filter's row order.
  std::int64_t patch_size() const { return kh * kw * c_in; }
  // The output pixel is the input pixel: the convolution is [n*h*w, c_in] x [c_in, c_out].
  bool is_pointwise() const { return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1; }
};

// Writes the patch rows of output pixels [first, last) (flat over [n, oh, ow]) to
// patches[(r - first) * patch_size() + (di * kw + dj) * c_in + c], zero where the filter tap
// falls in the padding. Cost: one copy of c_in values per tap.
template <class T>
void im2col(const conv_geometry& g, const T* x, std::int64_t first, std::int64_t last, T* patches) {
  const std::int64_t c = g.c_in;
  const std::int64_t tap_row = g.kw * c;  // one filter row of taps, contiguous in the patch
  std::int64_t ox = first % g.ow;
  std::int64_t oy = (first / g.ow) % g.oh;
  std::int64_t b = first / (g.ow * g.oh);
  for (std::int64_t r = first; r < last; ++r) {
    T* dst = patches + (r - first) * g.patch_size();
    const std::int64_t ix0 = ox * g.stride_w - g.pad_left;
    // The whole row of kw taps lies inside the image, contiguous when undilated.
    const bool row_inside = ix0 >= 0 && ix0 + (g.kw - 1) * g.dilation_w < g.w;
    for (std::int64_t di = 0; di < g.kh; ++di, dst += tap_row) {
      const std::int64_t iy = oy * g.stride_h - g.pad_top + di * g.dilation_h;
      if (iy < 0 || iy >= g.h) {
        std::fill_n(dst, tap_row, T(0));
        continue;
      }
      const T* src = x + ((b * g.h + iy) * g.w) * c;
      if (row_inside && g.dilation_w == 1) {
        std::copy_n(src + ix0 * c, tap_row, dst);
        continue;
      }
      for (std::int64_t dj = 0; dj < g.kw; ++dj) {
        const std::int64_t ix = ix0 + dj * g.dilation_w;
        if (ix < 0 || ix >= g.w) std::fill_n(dst + dj * c, c, T(0));
        else std::copy_n(src + ix * c, c, dst + dj * c);
      }
    }
    if (++ox == g.ow) {
      ox = 0;
      if (++oy == g.oh) { oy = 0; ++b; }
    }
  }
}

}  // namespace typeflow::cpu_kernels::detail
