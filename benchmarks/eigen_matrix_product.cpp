// SPDX-License-Identifier: Apache-2.0
// See eigen_matrix_product.hpp. Compiled with OpenMP (benchmarks/meson.build).
#include "eigen_matrix_product.hpp"

#include <cstdio>

#include <Eigen/Core>

namespace typeflow::bench {

void eigen_matrix_product(const float* a, const float* b, float* c, std::int64_t m, std::int64_t k, std::int64_t n,
                          int threads) {
  using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::setNbThreads(threads);
  // Eigen's threading functions are inline and differ with OpenMP: a copy from a unit built without
  // it, kept by the linker, would run the product on one thread.
  if (Eigen::nbThreads() != threads)
    std::printf("!! Eigen's matrix product runs on %d threads, not %d\n", Eigen::nbThreads(), threads);
  const Eigen::Map<const row_major> x(a, m, k);
  const Eigen::Map<const row_major> y(b, k, n);
  Eigen::Map<row_major> z(c, m, n);
  z.noalias() = x * y;
}

}  // namespace typeflow::bench
