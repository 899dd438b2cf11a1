// SPDX-License-Identifier: Apache-2.0
// fma_gemm: the f32 GEMM of the default CPU kernels on x86-64 processors with AVX2 and FMA, which it
// checks for when the program runs (fma_gemm::available()), so a build for plain x86-64 uses it too.
// Elsewhere the kernels keep Eigen's (gebp) GEMM.
//
// Why by hand: on the 2-core AVX2 machine of the peer table, one thread, Eigen 3.4's gebp kernel
// ran the MLP's and CNN's products at 48-60 GFLOP/s ([64, 1024] x [1024, 1024]: 2.65 ms); ONNX
// Runtime's MLAS runs the whole MLP at about 68. This micro-kernel, on b packed once, ran the same
// products at 72-85 GFLOP/s (1.58-1.98 ms; [784, 288] x [288, 64], the CNN's second convolution,
// 0.35 against 0.50 ms). Eigen's public API has no packed-b entry point and its gebp kernel is the
// slower part; oneDNN's sgemm is the optional backend (kernels/onednn/).
//
// The layout is the one BLIS and MLAS use for AVX2:
//  - the micro-kernel computes a 6 x 16 block of c in 12 ymm registers: per step of depth it loads
//    16 floats of packed b (two registers) and broadcasts 6 floats of packed a, 12 FMAs;
//  - b is packed in depth blocks of `kc` rows; in each, panels of 16 columns, each panel `depth` x
//    16 contiguous (the last panel padded with zeros), so the micro-kernel streams one panel (16
//    KiB at kc = 256) from L1;
//  - a's rows are packed `mc` at a time (in L2) as panels of 6 rows, each `depth` x 6 (the last
//    panel padded with zeros);
//  - loops: depth blocks, row blocks of a, panels of b, panels of a.
// On processors with AVX-512 (checked at run time too) the micro-kernel takes two panels of a at once:
// a 12 x 16 block of c in 12 zmm registers, one load of b and 12 broadcasts of a for 12 FMAs a step,
// the packed layouts unchanged; a panel of a left alone takes a 6-row kernel on zmm, and a processor
// without AVX-512 the AVX2 one. On a 2-core AVX-512 Xeon, one thread, [144, 256] x [256, 1024] packed: 110 GFLOP/s
// against 75 for the AVX2 kernel (86 for 6 x 16 on zmm, 86 for 6 x 32, whose two panels of b fill L1).
// Every matrix is given by strides, (row stride, column stride), so transposed operands and
// blocks of wider matrices are packed as they lie. c is row-major with `ldc`. An a that is never
// stored (a convolution's patch rows) is packed by a function of the caller's (gemm_with), and a
// product on a packed b can be computed for a range of b's panels (threads splitting it by columns).
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <typeflow/device/scratch.hpp>

// -DTYPEFLOW_FMA_GEMM=0 leaves every f32 product on Eigen (the same in every unit of a program).
#ifndef TYPEFLOW_FMA_GEMM
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define TYPEFLOW_FMA_GEMM 1
#else
#define TYPEFLOW_FMA_GEMM 0
#endif
#endif
// -DTYPEFLOW_FMA_GEMM_AVX512=0 leaves every processor on the AVX2 micro-kernel (the same in every unit
// of a program; without TYPEFLOW_FMA_GEMM it is off).
#ifndef TYPEFLOW_FMA_GEMM_AVX512
#define TYPEFLOW_FMA_GEMM_AVX512 TYPEFLOW_FMA_GEMM
#endif
#if TYPEFLOW_FMA_GEMM
#include <immintrin.h>
#define TYPEFLOW_FMA_TARGET __attribute__((target("avx2,fma")))
#define TYPEFLOW_AVX512_TARGET __attribute__((target("avx512f")))
#endif

namespace typeflow::cpu_kernels::detail {

// A strided view of a matrix: element (i, j) is data[i * row_stride + j * column_stride].
struct strided_matrix {
  const float* data;
  std::int64_t row_stride, column_stride;
  const float* at(std::int64_t i, std::int64_t j) const { return data + i * row_stride + j * column_stride; }
};

struct fma_gemm {
  static constexpr std::int64_t mr = 6, nr = 16;  // a panel of a's rows, of b's columns (the AVX2 kernel's block of c)
  // Depth per block: a panel of b (kc x 16 floats, 16 KiB) stays in L1 while the row panels of a
  // pass. Rows of a per block: mc x kc floats (144 KiB) stay in L2. Measured on [64, 1024] x [1024,
  // 1024], [64, 784] x [784, 1024], [784, 288] x [288, 64] and [196, 576] x [576, 64] against kc of
  // 384, 512 and all of the depth, and mc of 72 and all of the rows: within 5% of the best on each.
  static constexpr std::int64_t kc = 256, mc = 144;

  // Whether this processor runs the micro-kernel (AVX2 and FMA), checked once.
  static bool available() noexcept {
#if TYPEFLOW_FMA_GEMM
    static const bool yes = [] {
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return yes;
#else
    return false;
#endif
  }

  // Whether this processor runs the AVX-512 micro-kernel (two panels of a at once), checked once.
  static bool avx512() noexcept {
#if TYPEFLOW_FMA_GEMM && TYPEFLOW_FMA_GEMM_AVX512
    static const bool yes = [] {
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f");
    }();
    return yes;
#else
    return false;
#endif
  }

  // Floats of b [k, n] packed (depth blocks of kc, panels of 16 columns). Every panel row starts a
  // multiple of 64 bytes past the start of packed b, so packed b on 64-byte aligned memory gives
  // the AVX-512 kernels one cache line a load; 16 bytes past a line, every load is split over two
  // (the products 4-14% slower on an AVX-512 Xeon, docs/design.md).
  static std::int64_t packed_b_size(std::int64_t k, std::int64_t n) { return panels(n) * nr * k; }
  // Where depth block `k0` (a multiple of kc) starts in packed b, and panel `j` in it.
  static std::int64_t panel_offset(std::int64_t k, std::int64_t n, std::int64_t k0, std::int64_t j) {
    return k0 * panels(n) * nr + j * nr * std::min(kc, k - k0);
  }
  static std::int64_t panels(std::int64_t n) { return (n + nr - 1) / nr; }
  static std::int64_t depth_blocks(std::int64_t k) { return (k + kc - 1) / kc; }

  // Panels first..last of depth block k0 of b [k, n] into `packed` (packed_b_size floats). Packing
  // every panel of every block packs all of b; threads may pack disjoint ranges.
  static void pack_b_panels(strided_matrix b, std::int64_t k, std::int64_t n, std::int64_t k0, std::int64_t first,
                            std::int64_t last, float* packed) noexcept {
    const std::int64_t depth = std::min(kc, k - k0);
    for (std::int64_t j = first; j < last; ++j) {
      float* out = packed + panel_offset(k, n, k0, j);
      const std::int64_t j0 = j * nr, width = std::min(nr, n - j0);
      if (width == nr && b.column_stride == 1) {
        for (std::int64_t q = 0; q < depth; ++q) std::copy_n(b.at(k0 + q, j0), nr, out + q * nr);
        continue;
      }
      for (std::int64_t q = 0; q < depth; ++q) std::fill_n(out + q * nr + width, nr - width, 0.0f);
      for (std::int64_t col = 0; col < width; ++col) {  // along b's columns: contiguous when b is transposed
        const float* src = b.at(k0, j0 + col);
        for (std::int64_t q = 0; q < depth; ++q) out[q * nr + col] = src[q * b.row_stride];
      }
    }
  }
  static void pack_b(strided_matrix b, std::int64_t k, std::int64_t n, float* packed) noexcept {
    for (std::int64_t k0 = 0; k0 < k; k0 += kc) pack_b_panels(b, k, n, k0, 0, panels(n), packed);
  }

  // Rows first..last of c [m, n] = a [m, k] x b, b packed (pack_b), on the calling thread; a's rows
  // packed into the thread's scratch. Requires available().
  static void multiply(strided_matrix a, std::int64_t first, std::int64_t last, std::int64_t n, std::int64_t k,
                       const float* packed_b, float* c, std::int64_t ldc) {
    multiply(a, first, last, n, k, packed_b, 0, panels(n), c, ldc);
  }
  // The same for c's columns of b's panels first_panel..last_panel alone (16 columns a panel), so
  // that threads may split a product by columns: each then reads its part of b, where a split by
  // rows has every thread read all of it.
  static void multiply(strided_matrix a, std::int64_t first, std::int64_t last, std::int64_t n, std::int64_t k,
                       const float* packed_b, std::int64_t first_panel, std::int64_t last_panel, float* c,
                       std::int64_t ldc) {
    const std::int64_t column = first_panel * nr, width = std::min(n, last_panel * nr) - column;
    if (first >= last || width <= 0 || !has_depth(first, last, width, k, c + column, ldc)) return;
    const scratch_buffer<float> packed_a(packed_a_size(first, last, k));
    for (std::int64_t k0 = 0; k0 < k; k0 += kc)
      multiply_block(rows_of{a}, first, last, width, k0, std::min(kc, k - k0),
                     packed_b + panel_offset(k, n, k0, first_panel), c + column, ldc, packed_a.data());
  }

  // c [m, n] = a [m, k] x b [k, n] on the calling thread, b packed into the thread's scratch one depth
  // block at a time (kc x n floats: 1 MiB for n = 1024). Requires available().
  static void gemm(strided_matrix a, strided_matrix b, std::int64_t m, std::int64_t n, std::int64_t k, float* c,
                   std::int64_t ldc) {
    gemm_with(rows_of{a}, b, m, n, k, c, ldc);
  }
  // The same with a's rows packed by pack_a(i0, rows, k0, depth, out): rows i0..i0 + rows of a,
  // depth k0..k0 + depth, written as pack_rows_panel writes them, a panel of mr rows after another
  // (mr * depth floats each, the rows past the last zeros). For an a that is never stored whole:
  // a convolution's patch rows, packed from the image (kernels/cpu/detail/im2col.hpp).
  template <class PackA>
  static void gemm_with(const PackA& pack_a, strided_matrix b, std::int64_t m, std::int64_t n, std::int64_t k,
                        float* c, std::int64_t ldc) {
    if (m <= 0 || n <= 0 || !has_depth(0, m, n, k, c, ldc)) return;
    const scratch_buffer<float> packed_a(packed_a_size(0, m, k));
    const scratch_buffer<float> packed_b(static_cast<std::size_t>(packed_b_size(std::min(kc, k), n)));
    for (std::int64_t k0 = 0; k0 < k; k0 += kc) {
      // Depth block k0 alone, laid out as the first block of a b of its depth.
      const std::int64_t depth = std::min(kc, k - k0);
      pack_b_panels({b.at(k0, 0), b.row_stride, b.column_stride}, depth, n, 0, 0, panels(n), packed_b.data());
      multiply_block(pack_a, 0, m, n, k0, depth, packed_b.data(), c, ldc, packed_a.data());
    }
  }

  // out[t * mr + r] = rows[r][t] for t < count and each of the mr rows, 0 where rows[r] is null: one
  // panel's stretch of depth, from rows that need not be evenly spaced. Requires available().
#if TYPEFLOW_FMA_GEMM
  TYPEFLOW_FMA_TARGET static void pack_rows_panel(const float* const (&rows)[mr], std::int64_t count,
                                                  float* out) noexcept {
    static constexpr float zeros[8] = {};
    std::int64_t t = 0;
    for (const float* s[mr]; t + 8 <= count; t += 8) {
      for (std::int64_t r = 0; r < mr; ++r) s[r] = rows[r] != nullptr ? rows[r] + t : zeros;
      transpose_6x8(s, out + t * mr);
    }
    for (std::int64_t r = 0; r < mr; ++r)
      for (std::int64_t u = t; u < count; ++u) out[u * mr + r] = rows[r] != nullptr ? rows[r][u] : 0.0f;
  }
#else
  static void pack_rows_panel(const float* const (&)[mr], std::int64_t, float*) noexcept { std::abort(); }
#endif

 private:
  // Whether the product has depth; with k = 0 c's rows first..last are made zeros (every sum is
  // empty) and it has none.
  static bool has_depth(std::int64_t first, std::int64_t last, std::int64_t n, std::int64_t k, float* c,
                         std::int64_t ldc) {
    if (k > 0) return true;
    for (std::int64_t i = first; i < last; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return false;
  }
  // Floats of a's rows packed for one row block and depth block.
  static std::size_t packed_a_size(std::int64_t first, std::int64_t last, std::int64_t k) {
    return static_cast<std::size_t>((std::min(mc, last - first) + mr - 1) / mr * mr * std::min(kc, k));
  }

  // The packer of a stored a (gemm_with's PackA).
  struct rows_of {
    strided_matrix a;
    void operator()(std::int64_t i0, std::int64_t rows, std::int64_t k0, std::int64_t depth, float* out) const noexcept {
      pack_a(a, i0, rows, k0, depth, out);
    }
  };

#if TYPEFLOW_FMA_GEMM
  // Depth block k0 (`depth` deep) of c's rows first..last: packed_block is that block of packed b
  // (its panels at j * nr * depth); added to c unless k0 is the first block.
  template <class PackA>
  static void multiply_block(const PackA& pack, std::int64_t first, std::int64_t last, std::int64_t n, std::int64_t k0,
                             std::int64_t depth, const float* packed_block, float* c, std::int64_t ldc,
                             float* packed_a) noexcept {
    for (std::int64_t i0 = first; i0 < last; i0 += mc) {
      const std::int64_t rows = std::min(mc, last - i0);
      pack(i0, rows, k0, depth, packed_a);
      multiply_panels(packed_a, rows, depth, n, packed_block, c + i0 * ldc, ldc, k0 > 0);
    }
  }

  // a's rows i0..i0 + rows, depth k0..k0 + depth, as panels of 6 rows (zeros past the last row). A
  // whole panel of a row-major a goes 8 columns at a time: 6 rows of 8 loaded and transposed into 8
  // rows of 6. Element by element (row after row), packing took about half of the CNN's product time
  // at batch 1; 2.2x faster so, on its [784, 288] patches.
  TYPEFLOW_FMA_TARGET static void pack_a(strided_matrix a, std::int64_t i0, std::int64_t rows, std::int64_t k0,
                                         std::int64_t depth, float* out) noexcept {
    for (std::int64_t p = 0; p < rows; p += mr, out += mr * depth) {
      const std::int64_t height = std::min(mr, rows - p);
      std::int64_t q = 0;
      if (height == mr && a.column_stride == 1)
        for (const float* s = a.at(i0 + p, k0); q + 8 <= depth; q += 8) {
          const float* panel_rows[mr];
          for (std::int64_t r = 0; r < mr; ++r) panel_rows[r] = s + q + r * a.row_stride;
          transpose_6x8(panel_rows, out + q * mr);
        }
      for (std::int64_t r = 0; r < mr; ++r) {  // the rest along a's rows: contiguous unless a is transposed
        float* o = out + r;
        if (r >= height) {
          for (std::int64_t t = q; t < depth; ++t) o[t * mr] = 0.0f;
          continue;
        }
        const float* src = a.at(i0 + p + r, k0);
        for (std::int64_t t = q; t < depth; ++t) o[t * mr] = src[t * a.column_stride];
      }
    }
  }

  // out[j * 6 + i] = s[i][j] for 6 rows i and 8 columns j: 48 floats.
  TYPEFLOW_FMA_TARGET static inline void transpose_6x8(const float* const (&s)[mr], float* out) noexcept {
    const __m256 r0 = _mm256_loadu_ps(s[0]), r1 = _mm256_loadu_ps(s[1]), r2 = _mm256_loadu_ps(s[2]);
    const __m256 r3 = _mm256_loadu_ps(s[3]), r4 = _mm256_loadu_ps(s[4]), r5 = _mm256_loadu_ps(s[5]);
    // Per 128-bit lane (columns j..j+3 low, j+4..j+7 high): t0 = r0[0] r1[0] r0[1] r1[1], t1 the same
    // for columns 2 and 3; t2, t3 for rows 2 and 3; e, f for rows 4 and 5.
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 e = _mm256_unpacklo_ps(r4, r5), f = _mm256_unpackhi_ps(r4, r5);
    // Rows 0-3 of column j in the low lane, of column j + 4 in the high lane, j = 0..3.
    const __m256 top[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                           _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
    const __m256 bottom[2] = {e, f};  // rows 4-5 of columns j, j + 1: low half for even j, high for odd
    // Unrolled, so that the lane and parity tests fold away: GCC -O2 kept both loops, and packing the
    // CNN's [784, 288] patches took a third of the product's time.
#pragma GCC unroll 2
    for (int lane = 0; lane < 2; ++lane)
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m128 rows_0_3 = lane == 0 ? _mm256_castps256_ps128(top[j]) : _mm256_extractf128_ps(top[j], 1);
        const __m128 rows_4_5 = lane == 0 ? _mm256_castps256_ps128(bottom[j / 2]) : _mm256_extractf128_ps(bottom[j / 2], 1);
        float* o = out + (lane * 4 + j) * mr;
        _mm_storeu_ps(o, rows_0_3);
        if (j % 2 == 0) _mm_storel_pi(reinterpret_cast<__m64*>(o + 4), rows_4_5);
        else _mm_storeh_pi(reinterpret_cast<__m64*>(o + 4), rows_4_5);
      }
  }

  // Each panel of b against the panels of a: two at a time on AVX-512 (while more than one is left),
  // one at a time on AVX2.
  TYPEFLOW_FMA_TARGET static void multiply_panels(const float* packed_a, std::int64_t rows, std::int64_t depth,
                                                  std::int64_t n, const float* packed_block, float* c, std::int64_t ldc,
                                                  bool accumulate) noexcept {
    const bool wide = avx512();
    for (std::int64_t j = 0; j < panels(n); ++j) {
      const float* panel = packed_block + j * nr * depth;
      const std::int64_t width = std::min(nr, n - j * nr);
      std::int64_t p = 0;
      if (wide)
        for (; rows - p > mr; p += 2 * mr) {
          const std::int64_t height = std::min(2 * mr, rows - p);
          float* const block = c + p * ldc + j * nr;
          if (p == 0 && j + 1 < panels(n))  // the first pass over this panel fetches the next one
            micro_kernel_12<true>(depth, packed_a, panel, block, ldc, height, width, accumulate, panel + nr * depth);
          else
            micro_kernel_12<false>(depth, packed_a + p * depth, panel, block, ldc, height, width, accumulate, nullptr);
        }
      if (wide && p < rows)
        micro_kernel_6(depth, packed_a + p * depth, panel, c + p * ldc + j * nr, ldc, rows - p, width, accumulate);
      else
        for (; p < rows; p += mr)
          micro_kernel(depth, packed_a + p * depth, panel, c + p * ldc + j * nr, ldc, std::min(mr, rows - p), width,
                       accumulate);
    }
  }

  // Six rows of a 16-column block of c in zmm registers (members, not an array: see micro_kernel),
  // and one step of depth into them: row r += a[r] x.
  struct zmm_rows {
    __m512 r0, r1, r2, r3, r4, r5;
  };
  TYPEFLOW_AVX512_TARGET static inline zmm_rows zero_rows() noexcept {
    const __m512 z = _mm512_setzero_ps();
    return {z, z, z, z, z, z};
  }
  TYPEFLOW_AVX512_TARGET static inline void fma_rows(zmm_rows& c, const float* a, __m512 x) noexcept {
    c.r0 = _mm512_fmadd_ps(_mm512_set1_ps(a[0]), x, c.r0);
    c.r1 = _mm512_fmadd_ps(_mm512_set1_ps(a[1]), x, c.r1);
    c.r2 = _mm512_fmadd_ps(_mm512_set1_ps(a[2]), x, c.r2);
    c.r3 = _mm512_fmadd_ps(_mm512_set1_ps(a[3]), x, c.r3);
    c.r4 = _mm512_fmadd_ps(_mm512_set1_ps(a[4]), x, c.r4);
    c.r5 = _mm512_fmadd_ps(_mm512_set1_ps(a[5]), x, c.r5);
  }

  // c[0..height, 0..width] (=|+=) two packed a panels (a, then a + mr * depth) x a packed b panel,
  // over `depth`, height 7 to 12: 12 zmm accumulators, the columns past `width` masked off. With
  // Prefetch, each step also fetches a line of `next` (the next panel of b, as long as this one).
  template <bool Prefetch>
  TYPEFLOW_AVX512_TARGET static void micro_kernel_12(std::int64_t depth, const float* a, const float* b, float* c,
                                                     std::int64_t ldc, std::int64_t height, std::int64_t width,
                                                     bool accumulate, const float* next) noexcept {
    const float* a2 = a + mr * depth;
    zmm_rows top = zero_rows(), bottom = zero_rows();
    for (std::int64_t q = 0; q < depth; ++q, a += mr, a2 += mr, b += nr) {
      if constexpr (Prefetch) _mm_prefetch(reinterpret_cast<const char*>(next + q * nr), _MM_HINT_T0);
      const __m512 x = _mm512_loadu_ps(b);
      fma_rows(top, a, x);
      fma_rows(bottom, a2, x);
    }
    const __m512 acc[2 * mr] = {top.r0, top.r1, top.r2, top.r3, top.r4, top.r5,
                                bottom.r0, bottom.r1, bottom.r2, bottom.r3, bottom.r4, bottom.r5};
    store_rows(acc, c, ldc, height, width, accumulate);
  }

  // c[0..height, 0..width] (=|+=) a packed a panel x a packed b panel, over `depth`, height 1 to 6, on
  // AVX-512 (the panel of a left after the pairs): even and odd steps of depth on 6 zmm accumulators
  // each, so that 12 FMAs are in flight, as in micro_kernel_12.
  TYPEFLOW_AVX512_TARGET static void micro_kernel_6(std::int64_t depth, const float* a, const float* b, float* c,
                                                    std::int64_t ldc, std::int64_t height, std::int64_t width,
                                                    bool accumulate) noexcept {
    zmm_rows even = zero_rows(), odd = zero_rows();
    std::int64_t q = 0;
    for (; q + 2 <= depth; q += 2, a += 2 * mr, b += 2 * nr) {
      fma_rows(even, a, _mm512_loadu_ps(b));
      fma_rows(odd, a + mr, _mm512_loadu_ps(b + nr));
    }
    if (q < depth) fma_rows(even, a, _mm512_loadu_ps(b));
    const __m512 acc[mr] = {_mm512_add_ps(even.r0, odd.r0), _mm512_add_ps(even.r1, odd.r1),
                            _mm512_add_ps(even.r2, odd.r2), _mm512_add_ps(even.r3, odd.r3),
                            _mm512_add_ps(even.r4, odd.r4), _mm512_add_ps(even.r5, odd.r5)};
    store_rows(acc, c, ldc, height, width, accumulate);
  }

  // c's rows 0..height (=|+=) acc's, the columns past `width` masked off.
  TYPEFLOW_AVX512_TARGET static inline void store_rows(const __m512* acc, float* c, std::int64_t ldc, std::int64_t height,
                                                       std::int64_t width, bool accumulate) noexcept {
    const __mmask16 columns = static_cast<__mmask16>(width == nr ? 0xFFFF : (1u << width) - 1);
    for (std::int64_t r = 0; r < height; ++r) {
      float* row = c + r * ldc;
      const __m512 sum = accumulate ? _mm512_add_ps(acc[r], _mm512_maskz_loadu_ps(columns, row)) : acc[r];
      _mm512_mask_storeu_ps(row, columns, sum);
    }
  }

  // c[0..height, 0..width] (=|+=) packed a panel x packed b panel, over `depth`. The 12 accumulators
  // are named, not an array: GCC -O2 kept an array of them in memory (17 GFLOP/s against 75).
  TYPEFLOW_FMA_TARGET static inline void micro_kernel(std::int64_t depth, const float* a, const float* b, float* c,
                                                      std::int64_t ldc, std::int64_t height, std::int64_t width,
                                                      bool accumulate) noexcept {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (std::int64_t q = 0; q < depth; ++q, a += mr, b += nr) {
      const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
      __m256 x = _mm256_broadcast_ss(a);
      c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
      x = _mm256_broadcast_ss(a + 1);
      c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
      x = _mm256_broadcast_ss(a + 2);
      c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
      x = _mm256_broadcast_ss(a + 3);
      c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
      x = _mm256_broadcast_ss(a + 4);
      c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
      x = _mm256_broadcast_ss(a + 5);
      c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    const __m256 acc[mr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    if (height == mr && width == nr) {
      for (std::int64_t r = 0; r < mr; ++r) {
        float* row = c + r * ldc;
        _mm256_storeu_ps(row, accumulate ? _mm256_add_ps(acc[r][0], _mm256_loadu_ps(row)) : acc[r][0]);
        _mm256_storeu_ps(row + 8, accumulate ? _mm256_add_ps(acc[r][1], _mm256_loadu_ps(row + 8)) : acc[r][1]);
      }
      return;
    }
    alignas(32) float block[mr * nr];
    for (std::int64_t r = 0; r < mr; ++r) {
      _mm256_store_ps(block + r * nr, acc[r][0]);
      _mm256_store_ps(block + r * nr + 8, acc[r][1]);
    }
    for (std::int64_t r = 0; r < height; ++r)
      for (std::int64_t j = 0; j < width; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + block[r * nr + j] : block[r * nr + j];
  }
#else
  // available() is false here: no caller gets this far.
  template <class PackA>
  static void multiply_block(const PackA&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                             const float*, float*, std::int64_t, float*) noexcept {
    std::abort();
  }
  static void pack_a(strided_matrix, std::int64_t, std::int64_t, std::int64_t, std::int64_t, float*) noexcept {
    std::abort();
  }
#endif
};

}  // namespace typeflow::cpu_kernels::detail

#undef TYPEFLOW_FMA_TARGET
#undef TYPEFLOW_AVX512_TARGET
