// SPDX-License-Identifier: Apache-2.0
// GEMM backends of the matmul and conv2d kernels. A backend is a type with
//   static bool run(bool trans_a, bool trans_b, m, n, k, const T* a, lda, const T* b, ldb, T* c, ldc)
// computing c[m, n] = op(a) x op(b) on the calling thread, every matrix row-major: op(a) is a[m, k],
// or a[k, m] transposed when trans_a (b likewise: [k, n], or [n, k] transposed); lda, ldb and ldc
// are the elements from one row to the next. It returns false when the library it wraps refused the
// call (the kernel turns that into a status naming the backend, `name`). The kernels split their
// work over the policy's threads and call the backend once per block, so a backend never starts
// threads of its own: one thread budget, the policy's. `threads_itself` says that the kernel may
// instead hand a whole product to the policy's Eigen device (Eigen's own parallel contraction).
//
// eigen_gemm is the default: Eigen's tensor contraction on the calling thread with its packing
// blocks from the thread's scratch cache (no heap allocation in a step), or, for strided operands
// (a block of columns of a transposed matrix), Eigen's matrix product on strided maps. Both run the
// same GEBP kernel (measured equal on this project's shapes). oneDNN's sgemm is the optional
// backend of kernels/onednn/.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <string_view>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/scratch.hpp>

namespace typeflow::cpu_kernels {

struct eigen_gemm {
  static constexpr std::string_view name = "Eigen";
  static constexpr bool threads_itself = true;

  template <class T>
  static bool run(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
    const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    const std::int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    if (lda == a_cols && ldb == b_cols && ldc == n) {
      using const_map = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::Index>>;
      using map = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::Index>>;
      const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{
          Eigen::IndexPair<Eigen::Index>(trans_a ? 0 : 1, trans_b ? 1 : 0)};
      map out(c, m, n);
      eigen_assign(eigen_scratch_device{}, out, const_map(a, a_rows, a_cols).contract(const_map(b, b_rows, b_cols), dims));
      return true;
    }
    using matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using const_map = Eigen::Map<const matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
    const const_map am(a, a_rows, a_cols, Eigen::OuterStride<>(lda));
    const const_map bm(b, b_rows, b_cols, Eigen::OuterStride<>(ldb));
    Eigen::Map<matrix, Eigen::Unaligned, Eigen::OuterStride<>> cm(c, m, n, Eigen::OuterStride<>(ldc));
    auto times = [&](const auto& lhs) {
      if (trans_b) cm.noalias() = lhs * bm.transpose();
      else cm.noalias() = lhs * bm;
    };
    if (trans_a) times(am.transpose());
    else times(am);
    return true;
  }
};

}  // namespace typeflow::cpu_kernels
