// SPDX-License-Identifier: Apache-2.0
// Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", CVPR 2016) for f32 NHWC 3x3 convolutions of stride 1 without dilation, on fma_gemm.
//
// Each 2x2 tile of output pixels is Y = A^T [U . V] A (. element by element), where V = B^T d B is the 4x4 window of input
// pixels d the tile reads, transformed, and U = G f G^T the 3x3 filter f, transformed once a call. Over
// channels the element-wise product is a sum, so each of the 16 positions of the 4x4 transform is one
// product: M_p [tiles, c_out] = V_p [tiles, c_in] x U_p [c_in, c_out]. A tile costs 16 c_in c_out
// multiply-adds against 36 for the four pixels directly (2.25x fewer), plus the transforms, which are
// additions over c_in and c_out values (and a halving of the filter's).
// The transforms' coefficients are 0, +-1 and +-1/2, so the result differs from the direct sum by a
// few roundings: 6e-6 to 1e-5 from a double reference on outputs up to 30 for the CNN's convolutions'
// shapes (measured; test_conv checks 1e-4 relative). A non-finite input stays in the outputs whose
// windows hold it, but one may be NaN where the direct sum gives an infinity (the transforms subtract).
//
// Tiles are taken in blocks of block_tiles(): the block's V (16 matrices of [tiles, c_in]) and M
// ([tiles, c_out]) stay in L2 between the transforms and the products; threads split the blocks.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <typeflow/device/scratch.hpp>
#include <typeflow/kernels/cpu/detail/fma_gemm.hpp>
#include <typeflow/kernels/cpu/detail/im2col.hpp>

// The windows' small loops unrolled whole, so that their vectors stay in registers (GCC -O2 does not
// unroll them itself: the CNN's convolutions took 1.3x as long).
#if defined(__clang__)
#define TYPEFLOW_WINOGRAD_UNROLL _Pragma("unroll")
#else
#define TYPEFLOW_WINOGRAD_UNROLL _Pragma("GCC unroll 16")
#endif
#if TYPEFLOW_FMA_GEMM
#include <immintrin.h>
#define TYPEFLOW_WINOGRAD_TARGET __attribute__((target("avx2,fma")))
#define TYPEFLOW_WINOGRAD_AVX512_TARGET __attribute__((target("avx2,fma,avx512f")))
#else
#define TYPEFLOW_WINOGRAD_TARGET
#endif

namespace typeflow::cpu_kernels::detail {

struct winograd_3x3 {
  static constexpr std::int64_t positions = 16;  // of a 4x4 window and of its transform
  // Fewer channels than this on either side and the products are too thin to pay for the transforms
  // (the CNN's first convolution, 1 -> 32, stays on the patches).
  static constexpr std::int64_t min_channels = 8;

  // Whether the convolution is one this computes (NHWC is the caller's to check), and the processor
  // runs fma_gemm.
  static bool applies(const conv_geometry& g) noexcept {
    return g.kh == 3 && g.kw == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 &&
           g.dilation_w == 1 && g.c_in >= min_channels && g.c_out >= min_channels && fma_gemm::available();
  }

  static std::int64_t tiles_h(const conv_geometry& g) noexcept { return (g.oh + 1) / 2; }
  static std::int64_t tiles_w(const conv_geometry& g) noexcept { return (g.ow + 1) / 2; }
  // Output tiles of the whole batch, flat over [n, tiles_h, tiles_w].
  static std::int64_t tiles(const conv_geometry& g) noexcept { return g.n * tiles_h(g) * tiles_w(g); }
  // Tiles a block: its V and M (16 x tiles x (c_in + c_out) floats) in 256 KiB, whole panels of
  // fma_gemm's 6 rows, at least one panel (more than 256 KiB past 682 channels in and out together)
  // and at most one of fma_gemm's row blocks.
  static std::int64_t block_tiles(const conv_geometry& g) noexcept {
    const std::int64_t fit = (std::int64_t{256} << 10) / (positions * (g.c_in + g.c_out) * 4);
    return std::clamp<std::int64_t>(fit / fma_gemm::mr * fma_gemm::mr, fma_gemm::mr, fma_gemm::mc);
  }
  // Multiply-adds of a tile, for the threads' cost model.
  static double tile_cost(const conv_geometry& g) noexcept {
    return static_cast<double>(positions) * static_cast<double>(g.c_in) * static_cast<double>(g.c_out + 2);
  }

  // Floats of the transformed filter: one [c_in, c_out] matrix per position, packed for fma_gemm.
  static std::int64_t packed_filter_size(const conv_geometry& g) noexcept {
    return positions * fma_gemm::packed_b_size(g.c_in, g.c_out);
  }

  // U = G f G^T of the HWIO filter [3, 3, c_in, c_out], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
  // each position's [c_in, c_out] written packed for fma_gemm into `packed` (packed_filter_size floats).
  // 16 output channels at a time, which are one row of a packed panel in each position's matrix.
  TYPEFLOW_WINOGRAD_TARGET static void transform_filter(const conv_geometry& g, const float* filter,
                                                        float* packed) noexcept {
    constexpr std::int64_t nr = fma_gemm::nr;
    const std::int64_t c_in = g.c_in, c_out = g.c_out, plane = c_in * c_out;
    const std::int64_t stride = fma_gemm::packed_b_size(c_in, c_out);
    for (std::int64_t c = 0; c < c_in; ++c)
      for (std::int64_t j = 0; j < fma_gemm::panels(c_out); ++j) {
        const std::int64_t k0 = j * nr, width = std::min(nr, c_out - k0);
        // The taps of 16 output channels (zeros past the last), 8 at a time.
        alignas(32) float f[9][nr] = {}, u[positions][nr];
        TYPEFLOW_WINOGRAD_UNROLL
        for (int i = 0; i < 9; ++i) std::copy_n(filter + i * plane + c * c_out + k0, width, f[i]);
#if TYPEFLOW_FMA_GEMM  // (without it applies() is false and nothing calls this)
        TYPEFLOW_WINOGRAD_UNROLL
        for (int half = 0; half < 2; ++half) {
          __m256 a[3][3], b[4][4];
          TYPEFLOW_WINOGRAD_UNROLL
          for (int i = 0; i < 9; ++i) a[i / 3][i % 3] = _mm256_load_ps(f[i] + half * 8);
          filter_window(a, b);
          TYPEFLOW_WINOGRAD_UNROLL
          for (int p = 0; p < positions; ++p) _mm256_store_ps(u[p] + half * 8, b[p / 4][p % 4]);
        }
#endif
        const std::int64_t row = fma_gemm::panel_offset(c_in, c_out, c / fma_gemm::kc * fma_gemm::kc, j) +
                                  c % fma_gemm::kc * nr;
        for (std::int64_t p = 0; p < positions; ++p) std::copy_n(u[p], nr, packed + p * stride + row);
      }
  }

  // Output tiles first..last (of tiles()) of y [n, oh, ow, c_out] from x [n, h, w, c_in] and the
  // transformed filter, on the calling thread. Requires applies().
  static void compute(const conv_geometry& g, const float* x, const float* packed_filter, std::int64_t first,
                      std::int64_t last, float* y) {
    const std::int64_t block = block_tiles(g);
    const std::int64_t count = std::min(block, last - first);
    if (count <= 0) return;
    const scratch_buffer<float> v(static_cast<std::size_t>(positions * count * g.c_in));
    const scratch_buffer<float> m(static_cast<std::size_t>(positions * count * g.c_out));
    const scratch_buffer<float> zeros(static_cast<std::size_t>(g.c_in));
    std::fill_n(zeros.data(), g.c_in, 0.0f);
    const std::int64_t stride = fma_gemm::packed_b_size(g.c_in, g.c_out);
    for (std::int64_t t0 = first; t0 < last; t0 += block) {
      const std::int64_t tiles = std::min(block, last - t0);
      transform_input(g, x, zeros.data(), t0, tiles, v.data());
      for (std::int64_t p = 0; p < positions; ++p)  // M_p = V_p x U_p
        fma_gemm::multiply({v.data() + p * tiles * g.c_in, g.c_in, 1}, 0, tiles, g.c_out, g.c_in,
                           packed_filter + p * stride, m.data() + p * tiles * g.c_out, g.c_out);
      transform_output(g, m.data(), t0, tiles, y);
    }
  }

 private:
  // The tile's image, output row and column.
  struct tile_at {
    std::int64_t image, row, column;
    tile_at(const conv_geometry& g, std::int64_t t) noexcept
        : image(t / (tiles_h(g) * tiles_w(g))), row(t / tiles_w(g) % tiles_h(g) * 2), column(t % tiles_w(g) * 2) {}
    void next(const conv_geometry& g) noexcept {
      if ((column += 2) < g.ow) return;
      column = 0;
      if ((row += 2) < g.oh) return;
      row = 0;
      ++image;
    }
  };

  // U = G f G^T, on float or on 8 output channels at once.
  template <class F>
  TYPEFLOW_WINOGRAD_TARGET static void filter_window(const F (&f)[3][3], F (&u)[4][4]) noexcept {
    const F half = F{} + 0.5f;
    F t[4][3];
    TYPEFLOW_WINOGRAD_UNROLL
    for (int j = 0; j < 3; ++j) {  // t = G f
      t[0][j] = f[0][j];
      t[1][j] = half * (f[0][j] + f[1][j] + f[2][j]);
      t[2][j] = half * (f[0][j] - f[1][j] + f[2][j]);
      t[3][j] = f[2][j];
    }
    TYPEFLOW_WINOGRAD_UNROLL
    for (int i = 0; i < 4; ++i) {  // U = t G^T
      u[i][0] = t[i][0];
      u[i][1] = half * (t[i][0] + t[i][1] + t[i][2]);
      u[i][2] = half * (t[i][0] - t[i][1] + t[i][2]);
      u[i][3] = t[i][2];
    }
  }
  // V = B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], on float or on 8 or 16 channels at
  // once (on 16, inlined into the AVX-512 callers, whose target includes this one's).
  template <class F>
  TYPEFLOW_WINOGRAD_TARGET static void input_window(const F (&d)[4][4], F (&v)[4][4]) noexcept {
    F t[4][4];
    TYPEFLOW_WINOGRAD_UNROLL
    for (int j = 0; j < 4; ++j) {
      t[0][j] = d[0][j] - d[2][j];
      t[1][j] = d[1][j] + d[2][j];
      t[2][j] = d[2][j] - d[1][j];
      t[3][j] = d[1][j] - d[3][j];
    }
    TYPEFLOW_WINOGRAD_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i][0] = t[i][0] - t[i][2];
      v[i][1] = t[i][1] + t[i][2];
      v[i][2] = t[i][2] - t[i][1];
      v[i][3] = t[i][1] - t[i][3];
    }
  }
  // Y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1].
  template <class F>
  TYPEFLOW_WINOGRAD_TARGET static void output_window(const F (&m)[4][4], F (&y)[2][2]) noexcept {
    F t[2][4];
    TYPEFLOW_WINOGRAD_UNROLL
    for (int j = 0; j < 4; ++j) {
      t[0][j] = m[0][j] + m[1][j] + m[2][j];
      t[1][j] = m[1][j] - m[2][j] - m[3][j];
    }
    TYPEFLOW_WINOGRAD_UNROLL
    for (int i = 0; i < 2; ++i) {
      y[i][0] = t[i][0] + t[i][1] + t[i][2];
      y[i][1] = t[i][1] - t[i][2] - t[i][3];
    }
  }

#if TYPEFLOW_FMA_GEMM
  // One tile's channels 16 at a time on AVX-512 (zmm), as transform_input and transform_output do 8
  // at a time on AVX2: the channels done, a multiple of 16. On the CNN's layers (32 and 64 channels)
  // the transforms were 12% of its time at batch 1 on 8 channels at a time.
  TYPEFLOW_WINOGRAD_AVX512_TARGET static std::int64_t input_channels_16(const float* const (&d)[4][4], std::int64_t c_in,
                                                                        std::int64_t plane, float* out) noexcept {
    std::int64_t c = 0;
    for (; c + 16 <= c_in; c += 16) {
      __m512 a[4][4], b[4][4];
      TYPEFLOW_WINOGRAD_UNROLL
      for (int i = 0; i < 4; ++i)
        TYPEFLOW_WINOGRAD_UNROLL
        for (int j = 0; j < 4; ++j) a[i][j] = _mm512_loadu_ps(d[i][j] + c);
      input_window(a, b);
      TYPEFLOW_WINOGRAD_UNROLL
      for (int p = 0; p < positions; ++p) _mm512_storeu_ps(out + p * plane + c, b[p / 4][p % 4]);
    }
    return c;
  }
  TYPEFLOW_WINOGRAD_AVX512_TARGET static std::int64_t output_channels_16(const float* in, std::int64_t c_out,
                                                                         std::int64_t plane, float* const (&out)[2][2],
                                                                         bool second_row, bool second_column) noexcept {
    std::int64_t c = 0;
    for (; c + 16 <= c_out; c += 16) {
      __m512 a[4][4], b[2][2];
      TYPEFLOW_WINOGRAD_UNROLL
      for (int p = 0; p < positions; ++p) a[p / 4][p % 4] = _mm512_loadu_ps(in + p * plane + c);
      output_window(a, b);
      _mm512_storeu_ps(out[0][0] + c, b[0][0]);
      if (second_column) _mm512_storeu_ps(out[0][1] + c, b[0][1]);
      if (!second_row) continue;
      _mm512_storeu_ps(out[1][0] + c, b[1][0]);
      if (second_column) _mm512_storeu_ps(out[1][1] + c, b[1][1]);
    }
    return c;
  }
#endif

  // v[p][tile][c] for `tiles` tiles from t0: each tile's 4x4 window of input pixels (zeros outside the
  // image), transformed.
  TYPEFLOW_WINOGRAD_TARGET static void transform_input(const conv_geometry& g, const float* x, const float* zeros,
                                                       std::int64_t t0, std::int64_t tiles, float* v) noexcept {
    const std::int64_t c_in = g.c_in, plane = tiles * c_in;
    [[maybe_unused]] const bool wide = fma_gemm::avx512();
    tile_at at(g, t0);
    for (std::int64_t tile = 0; tile < tiles; ++tile, at.next(g)) {
      const float* d[4][4];
      TYPEFLOW_WINOGRAD_UNROLL
      for (int i = 0; i < 4; ++i)
        TYPEFLOW_WINOGRAD_UNROLL
        for (int j = 0; j < 4; ++j) {
          const std::int64_t iy = at.row - g.pad_top + i, ix = at.column - g.pad_left + j;
          d[i][j] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? x + ((at.image * g.h + iy) * g.w + ix) * c_in : zeros;
        }
      float* out = v + tile * c_in;
      std::int64_t c = 0;
#if TYPEFLOW_FMA_GEMM
      if (wide) c = input_channels_16(d, c_in, plane, out);
      for (; c + 8 <= c_in; c += 8) {
        __m256 a[4][4], b[4][4];
        TYPEFLOW_WINOGRAD_UNROLL
        for (int i = 0; i < 4; ++i)
          TYPEFLOW_WINOGRAD_UNROLL
          for (int j = 0; j < 4; ++j) a[i][j] = _mm256_loadu_ps(d[i][j] + c);
        input_window(a, b);
        TYPEFLOW_WINOGRAD_UNROLL
        for (int p = 0; p < positions; ++p) _mm256_storeu_ps(out + p * plane + c, b[p / 4][p % 4]);
      }
#endif
      for (; c < c_in; ++c) {
        float a[4][4], b[4][4];
        TYPEFLOW_WINOGRAD_UNROLL
        for (int i = 0; i < 4; ++i)
          TYPEFLOW_WINOGRAD_UNROLL
          for (int j = 0; j < 4; ++j) a[i][j] = d[i][j][c];
        input_window(a, b);
        TYPEFLOW_WINOGRAD_UNROLL
        for (int p = 0; p < positions; ++p) out[p * plane + c] = b[p / 4][p % 4];
      }
    }
  }

  // The output pixels of `tiles` tiles from t0 from m[p][tile][c_out] (those of a tile's second row
  // or column past the image's last are not written).
  TYPEFLOW_WINOGRAD_TARGET static void transform_output(const conv_geometry& g, const float* m, std::int64_t t0,
                                                        std::int64_t tiles, float* y) noexcept {
    const std::int64_t c_out = g.c_out, plane = tiles * c_out;
    [[maybe_unused]] const bool wide = fma_gemm::avx512();
    tile_at at(g, t0);
    for (std::int64_t tile = 0; tile < tiles; ++tile, at.next(g)) {
      const bool second_row = at.row + 1 < g.oh, second_column = at.column + 1 < g.ow;
      // The tile's four output pixels; where a second row or column is past the image, the first's
      // (not written).
      float* out[2][2];
      TYPEFLOW_WINOGRAD_UNROLL
      for (int i = 0; i < 2; ++i)
        TYPEFLOW_WINOGRAD_UNROLL
        for (int j = 0; j < 2; ++j)
          out[i][j] = y + ((at.image * g.oh + at.row + (second_row ? i : 0)) * g.ow + at.column +
                           (second_column ? j : 0)) * c_out;
      const float* in = m + tile * c_out;
      std::int64_t c = 0;
#if TYPEFLOW_FMA_GEMM
      if (wide) c = output_channels_16(in, c_out, plane, out, second_row, second_column);
      for (; c + 8 <= c_out; c += 8) {
        __m256 a[4][4], b[2][2];
        TYPEFLOW_WINOGRAD_UNROLL
        for (int p = 0; p < positions; ++p) a[p / 4][p % 4] = _mm256_loadu_ps(in + p * plane + c);
        output_window(a, b);
        _mm256_storeu_ps(out[0][0] + c, b[0][0]);
        if (second_column) _mm256_storeu_ps(out[0][1] + c, b[0][1]);
        if (!second_row) continue;
        _mm256_storeu_ps(out[1][0] + c, b[1][0]);
        if (second_column) _mm256_storeu_ps(out[1][1] + c, b[1][1]);
      }
#endif
      for (; c < c_out; ++c) {
        float a[4][4], b[2][2];
        TYPEFLOW_WINOGRAD_UNROLL
        for (int p = 0; p < positions; ++p) a[p / 4][p % 4] = in[p * plane + c];
        output_window(a, b);
        out[0][0][c] = b[0][0];
        if (second_column) out[0][1][c] = b[0][1];
        if (!second_row) continue;
        out[1][0][c] = b[1][0];
        if (second_column) out[1][1][c] = b[1][1];
      }
    }
  }
};

}  // namespace typeflow::cpu_kernels::detail

#undef TYPEFLOW_WINOGRAD_TARGET
#undef TYPEFLOW_WINOGRAD_AVX512_TARGET
#undef TYPEFLOW_WINOGRAD_UNROLL
