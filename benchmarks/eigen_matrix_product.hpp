// SPDX-License-Identifier: Apache-2.0
// Eigen's matrix product (Eigen/Core's GEMM, not the Tensor module's contraction) as a baseline for
// bench_kernels: C = A B over row-major float buffers, on `threads` threads. Eigen's product is
// parallel only through OpenMP, so it lives in its own unit (eigen_matrix_product.cpp), the one
// compiled with -fopenmp: the rest of the benchmark, typeflow's kernels included, is built without.
#pragma once

#include <cstdint>

namespace typeflow::bench {

void eigen_matrix_product(const float* a, const float* b, float* c, std::int64_t m, std::int64_t k, std::int64_t n,
                          int threads);

}  // namespace typeflow::bench
