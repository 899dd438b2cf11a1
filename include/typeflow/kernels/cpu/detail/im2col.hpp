// SPDX-License-Identifier: Apache-2.0
// The geometry of a 2-D convolution and im2col: the patch matrix whose rows are the receptive
// fields of output pixels, so that the convolution is one GEMM with the HWIO filter.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <algorithm>
#include <cstdint>

#include <typeflow/core/tensor.hpp>
#include <typeflow/kernels/cpu/detail/fma_gemm.hpp>
#include <typeflow/ops/conv.hpp>
#include <typeflow/ops/padding.hpp>

namespace typeflow::cpu_kernels::detail {

// Sizes of input [n, h, w, c_in], filter [kh, kw, c_in, c_out] and output [n, oh, ow, c_out]
// (the images NCHW, [n, c_in, h, w] and [n, c_out, oh, ow], in that format).
struct conv_geometry {
  std::int64_t n, h, w, c_in;
  std::int64_t kh, kw, c_out;
  std::int64_t oh, ow;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w;
  std::int64_t pad_top, pad_left;

  static conv_geometry of(const ops::conv2d& op, const tensor& x, const tensor& filter, const tensor& y) {
    const ops::image_axes ax = ops::axes_of(op.format);
    conv_geometry g{};
    g.n = x.dim(0);
    g.h = x.dim(ax.h);
    g.w = x.dim(ax.w);
    g.c_in = x.dim(ax.c);
    g.kh = filter.dim(0);
    g.kw = filter.dim(1);
    g.c_out = filter.dim(3);
    g.oh = y.dim(ax.h);
    g.ow = y.dim(ax.w);
    const ops::window2d win = ops::window_of(op, g.kh, g.kw);
    g.stride_h = op.stride_h;
    g.stride_w = op.stride_w;
    g.dilation_h = op.dilation_h;
    g.dilation_w = op.dilation_w;
    g.pad_top = ops::padding_before(g.h, g.oh, win.h, op.pad);
    g.pad_left = ops::padding_before(g.w, g.ow, win.w, op.pad);
    return g;
  }

  std::int64_t output_rows() const { return n * oh * ow; }
  // Length of one patch row: [kh, kw, c_in] flattened, the filter's row order.
  std::int64_t patch_size() const { return kh * kw * c_in; }
  // The output pixel is the input pixel: the convolution is [n*h*w, c_in] x [c_in, c_out]
  // (NHWC; [c_out, c_in] x [c_in, h*w] per image in NCHW).
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0 && oh == h &&
           ow == w;
  }
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

// The patch rows of output pixels row0 + i0 .. row0 + i0 + rows (NHWC), depth k0..k0 + depth,
// packed for fma_gemm straight from the image (fma_gemm::gemm_with's PackA): what im2col writes,
// in the panels fma_gemm's micro-kernel reads, without the patch matrix between them. A panel's
// stretch of one tap is c_in values of each of its 6 pixels, transposed 8 at a time. On the CNN
// at batch 1 (one thread), im2col and the copies it makes were 10% of the time, packing its patch
// matrix again 9%.
struct patch_packer {
  const conv_geometry& g;
  const float* x;
  std::int64_t row0;

  void operator()(std::int64_t i0, std::int64_t rows, std::int64_t k0, std::int64_t depth, float* out) const noexcept {
    constexpr std::int64_t mr = fma_gemm::mr;
    // The first row's output pixel and the first tap and channel of the depth, then stepped (a
    // division per row and tap was half of the packing's time).
    const std::int64_t first = row0 + i0;
    std::int64_t ox = first % g.ow, oy = first / g.ow % g.oh, image = first / (g.ow * g.oh);
    const std::int64_t first_tap = k0 / g.c_in, first_channel = k0 % g.c_in;
    for (std::int64_t p = 0; p < rows; p += mr, out += mr * depth) {
      // Each row's image and the input pixel at its window's top left; rows past the last: none.
      std::int64_t images[mr], top[mr], left[mr];
      for (std::int64_t r = 0; r < mr; ++r) {
        images[r] = p + r < rows ? image : -1;
        top[r] = oy * g.stride_h - g.pad_top;
        left[r] = ox * g.stride_w - g.pad_left;
        if (++ox == g.ow) {
          ox = 0;
          if (++oy == g.oh) oy = 0, ++image;
        }
      }
      std::int64_t di = first_tap / g.kw, dj = first_tap % g.kw, c = first_channel;
      if (g.c_in * g.kw < 8) {
        // Runs of a filter row's taps shorter than a transpose (the CNN's first layer: one channel,
        // runs of 3): element by element, with no call per tap. Through the runs below, the first
        // layer's packing took as long as its product.
        for (std::int64_t q = 0; q < depth; ++q) {
          for (std::int64_t r = 0; r < mr; ++r) {
            const std::int64_t iy = top[r] + di * g.dilation_h, ix = left[r] + dj * g.dilation_w;
            out[q * mr + r] = images[r] >= 0 && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w
                                  ? x[((images[r] * g.h + iy) * g.w + ix) * g.c_in + c]
                                  : 0.0f;
          }
          if (++c == g.c_in) {
            c = 0;
            if (++dj == g.kw) dj = 0, ++di;
          }
        }
        continue;
      }
      if (inside(images, top, left)) {
        // Every tap in the image: no checks, and a filter row's taps, undilated, are one run.
        const float* base[mr];
        for (std::int64_t r = 0; r < mr; ++r) base[r] = x + ((images[r] * g.h + top[r]) * g.w + left[r]) * g.c_in;
        const std::int64_t run = g.dilation_w == 1 ? g.kw * g.c_in : g.c_in;
        for (std::int64_t q = 0; q < depth;) {
          const std::int64_t at = g.dilation_w == 1 ? dj * g.c_in + c : c;
          const std::int64_t count = std::min(run - at, depth - q);
          const std::int64_t offset = (di * g.dilation_h * g.w + dj * g.dilation_w) * g.c_in + c;
          const float* src[mr];
          for (std::int64_t r = 0; r < mr; ++r) src[r] = base[r] + offset;
          fma_gemm::pack_rows_panel(src, count, out + q * mr);
          q += count;
          c = 0;
          if (g.dilation_w == 1 || ++dj == g.kw) dj = 0, ++di;
        }
        continue;
      }
      for (std::int64_t q = 0; q < depth; c = 0) {
        const std::int64_t count = std::min(g.c_in - c, depth - q);
        const float* src[mr];
        for (std::int64_t r = 0; r < mr; ++r) {
          const std::int64_t iy = top[r] + di * g.dilation_h, ix = left[r] + dj * g.dilation_w;
          src[r] = images[r] >= 0 && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w
                       ? x + ((images[r] * g.h + iy) * g.w + ix) * g.c_in + c
                       : nullptr;
        }
        fma_gemm::pack_rows_panel(src, count, out + q * mr);
        q += count;
        if (++dj == g.kw) dj = 0, ++di;
      }
    }
  }

 private:
  // Whether all 6 rows are pixels whose windows lie inside the image.
  bool inside(const std::int64_t (&images)[fma_gemm::mr], const std::int64_t (&top)[fma_gemm::mr],
              const std::int64_t (&left)[fma_gemm::mr]) const noexcept {
    for (std::int64_t r = 0; r < fma_gemm::mr; ++r)
      if (images[r] < 0 || top[r] < 0 || top[r] + (g.kh - 1) * g.dilation_h >= g.h || left[r] < 0 ||
          left[r] + (g.kw - 1) * g.dilation_w >= g.w)
        return false;
    return true;
  }
};

// The NCHW patch matrix of image b, transposed: for output pixels [first, last) of the image
// (flat over [oh, ow]), writes cols[((di * kw + dj) * c_in + c) * (last - first) + (p - first)]
// = x[b, c, oy * stride_h - pad_top + di * dilation_h, ox * stride_w - pad_left + dj * dilation_w],
// zero in the padding. Its rows follow the filter's row order, so that the convolution of the
// chunk is filter^T [c_out, k] x cols [k, last - first]. Each row reads one input plane along
// output rows: a contiguous run per output row when stride_w is 1.
template <class T>
void im2col_nchw(const conv_geometry& g, const T* x, std::int64_t b, std::int64_t first, std::int64_t last, T* cols) {
  const std::int64_t count = last - first;
  for (std::int64_t di = 0; di < g.kh; ++di) {
    for (std::int64_t dj = 0; dj < g.kw; ++dj) {
      const std::int64_t dy = di * g.dilation_h - g.pad_top, dx = dj * g.dilation_w - g.pad_left;
      // The output columns ox whose tap ix = ox * stride_w + dx lies in [0, w): [ox0, ox1).
      const std::int64_t ox0 = std::clamp<std::int64_t>(dx >= 0 ? 0 : (-dx + g.stride_w - 1) / g.stride_w, 0, g.ow);
      const std::int64_t ox1 = std::clamp<std::int64_t>(g.w - dx <= 0 ? 0 : (g.w - dx + g.stride_w - 1) / g.stride_w, ox0, g.ow);
      for (std::int64_t c = 0; c < g.c_in; ++c) {
        T* dst = cols + ((di * g.kw + dj) * g.c_in + c) * count;
        const T* plane = x + (b * g.c_in + c) * g.h * g.w;
        std::int64_t p = first;
        while (p < last) {
          const std::int64_t oy = p / g.ow, ox = p % g.ow;
          const std::int64_t run_end = std::min(last, p + (g.ow - ox));  // the rest of this output row
          const std::int64_t iy = oy * g.stride_h + dy;
          T* out = dst + (p - first);
          const std::int64_t n = run_end - p;
          if (iy < 0 || iy >= g.h) {
            std::fill_n(out, n, T(0));
          } else {
            const T* row = plane + iy * g.w;
            // Columns ox .. ox + n - 1: zeros, then taps inside the image, then zeros.
            const std::int64_t in0 = std::clamp(ox0, ox, ox + n), in1 = std::clamp(ox1, in0, ox + n);
            std::fill_n(out, in0 - ox, T(0));
            if (g.stride_w == 1) {
              std::copy_n(row + in0 + dx, in1 - in0, out + (in0 - ox));
            } else {
              for (std::int64_t j = in0; j < in1; ++j) out[j - ox] = row[j * g.stride_w + dx];
            }
            std::fill_n(out + (in1 - ox), ox + n - in1, T(0));
          }
          p = run_end;
        }
      }
    }
  }
}

}  // namespace typeflow::cpu_kernels::detail
