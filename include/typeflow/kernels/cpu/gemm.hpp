// SPDX-License-Identifier: Apache-2.0
// GEMM backends of the matmul and conv2d kernels. A backend is a type with
//   static bool run(bool trans_a, bool trans_b, m, n, k, const T* a, lda, const T* b, ldb, T* c, ldc)
// computing c[m, n] = op(a) x op(b) on the calling thread, every matrix row-major: op(a) is a[m, k],
// or a[k, m] transposed when trans_a (b likewise: [k, n], or [n, k] transposed); lda, ldb and ldc
// are the elements from one row to the next. It returns false when the library it wraps refused the
// call (the kernel turns that into a status naming the backend, `name`). The kernels split their
// work over the policy's threads and call the backend once per block, so a backend never starts
// threads of its own: one thread budget, the policy's.
//
// eigen_gemm is the default. f32 products of at least fma_gemm_min_rows rows go through fma_gemm
// (kernels/cpu/detail/fma_gemm.hpp) where the processor has AVX2 and FMA: operands packed as they
// lie, transposed or blocks of wider matrices, b into the thread's scratch on every call. Fewer rows
// stay on Eigen, whose product of a few rows packed b faster (fma_gemm on [8, 784] x [784, 1024],
// b packed in the call: 0.96-1.18 of Eigen's; on 16 rows 0.78-0.90). Everything else is
// Eigen's tensor contraction on the calling thread with its packing
// blocks from the thread's scratch cache (no heap allocation in a step). An operand that is a block
// of a wider matrix (a block of columns, or of rows of a transposed matrix: how the kernels split a
// product over threads when it has few rows) is first copied into rows of its own length, from the
// scratch cache too, and so is the output: the copies cost O(rows x columns) against the product's
// O(rows x columns x depth). Eigen's matrix product on strided maps, which needs no copy, takes its
// blocking buffers from the heap on every call, and is a second GEBP instantiation per dtype. The
// exception is one row of f32 or f64 against a block of b's columns: a matrix-vector product, where
// the copy would cost as much as the product, and Eigen's (on strided maps) takes nothing from the
// heap.
// oneDNN's sgemm is the optional backend of kernels/onednn/.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/scratch.hpp>
#include <typeflow/kernels/cpu/detail/fma_gemm.hpp>

namespace typeflow::cpu_kernels {

struct eigen_gemm {
  static constexpr std::string_view name = "Eigen";
  static constexpr std::int64_t fma_gemm_min_rows = 16;

  template <class T>
  static bool run(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
    if constexpr (std::is_same_v<T, float>) {
      if (m >= fma_gemm_min_rows && detail::fma_gemm::available()) {
        detail::fma_gemm::gemm(trans_a ? detail::strided_matrix{a, 1, lda} : detail::strided_matrix{a, lda, 1},
                               trans_b ? detail::strided_matrix{b, 1, ldb} : detail::strided_matrix{b, ldb, 1}, m, n, k, c,
                               ldc);
        return true;
      }
    }
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      // One row of a against a block of b's columns (matmul splitting a matrix-vector product over
      // threads): Eigen's matrix-vector product reads b's rows where they lie, no copy and no heap.
      if (m == 1 && !trans_a && !trans_b && ldb != n) {
        using rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        using row = Eigen::Matrix<T, 1, Eigen::Dynamic>;
        Eigen::Map<row>(c, n).noalias() =
            Eigen::Map<const row>(a, k) * Eigen::Map<const rows, 0, Eigen::OuterStride<>>(b, k, n, Eigen::OuterStride<>(ldb));
        return true;
      }
    }
    const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    const std::int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    std::optional<scratch_buffer<T>> a_rows_copy, b_rows_copy, c_rows;
    if (lda != a_cols) a = packed(a, a_rows, a_cols, lda, a_rows_copy);
    if (ldb != b_cols) b = packed(b, b_rows, b_cols, ldb, b_rows_copy);
    T* out = c;
    if (ldc != n) out = c_rows.emplace(static_cast<std::size_t>(m * n)).data();

    using const_map = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::Index>>;
    using map = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::Index>>;
    const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{
        Eigen::IndexPair<Eigen::Index>(trans_a ? 0 : 1, trans_b ? 1 : 0)};
    map result(out, m, n);
    eigen_assign(eigen_scratch_device{}, result, const_map(a, a_rows, a_cols).contract(const_map(b, b_rows, b_cols), dims));

    if (ldc != n)
      for (std::int64_t i = 0; i < m; ++i) std::copy_n(out + i * n, n, c + i * ldc);
    return true;
  }

 private:
  // The rows x cols block at p (rows ld apart) copied into `copy`, rows next to each other.
  template <class T>
  static const T* packed(const T* p, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                         std::optional<scratch_buffer<T>>& copy) {
    T* dense = copy.emplace(static_cast<std::size_t>(rows * cols)).data();
    for (std::int64_t i = 0; i < rows; ++i) std::copy_n(p + i * ld, cols, dense + i * cols);
    return dense;
  }
};

}  // namespace typeflow::cpu_kernels
