// SPDX-License-Identifier: Apache-2.0
// matmul's triple-loop reference (double precision, batch broadcasting written out again), its
// cases, and the check of a registry's matmul kernel against it on random inputs; used by
// test_linalg (the default kernels) and test_onednn.
#pragma once

#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace matmul_reference {

namespace tf = typeflow;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;

// A matmul problem: batch dimensions of a and b, and the matrix sizes m x k times k x n. The
// operands' shapes follow from the transposes.
struct matmul_case {
  tf::shape batch_a, batch_b;
  std::int64_t m, k, n;
};

tf::shape with_matrix(tf::shape s, std::int64_t rows, std::int64_t cols) {
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

// c[batch..., i, j] = sum over p of a'[batch_a..., i, p] * b'[batch_b..., p, j], with a' and b'
// the (transposed) operands and each batch index taken as 0 along dimensions of size 1.
std::vector<double> reference_matmul(const tf::shape& a_shape, const tf::shape& b_shape, const std::vector<double>& a,
                                     const std::vector<double>& b, const tf::ops::matmul& op, tf::shape& out_shape) {
  const std::size_t ra = a_shape.rank(), rb = b_shape.rank();
  const std::int64_t m = op.transpose_a ? a_shape[ra - 1] : a_shape[ra - 2];
  const std::int64_t k = op.transpose_a ? a_shape[ra - 2] : a_shape[ra - 1];
  const std::int64_t n = op.transpose_b ? b_shape[rb - 2] : b_shape[rb - 1];
  const std::size_t batch_rank = std::max(ra, rb) - 2;
  // Batch dimension i of a (or b), 1 where it has none.
  auto dim_a = [&](std::size_t i) { return i + (ra - 2) >= batch_rank ? a_shape[i + (ra - 2) - batch_rank] : 1; };
  auto dim_b = [&](std::size_t i) { return i + (rb - 2) >= batch_rank ? b_shape[i + (rb - 2) - batch_rank] : 1; };
  out_shape = tf::shape{};
  for (std::size_t i = 0; i < batch_rank; ++i) out_shape.push_back(dim_a(i) == 1 ? dim_b(i) : dim_a(i));
  const std::int64_t batches = out_shape.num_elements();
  out_shape.push_back(m);
  out_shape.push_back(n);

  std::vector<double> c;
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    // The batch's multi-index, and the offsets of a's and b's matrices.
    std::int64_t rest = batch, a_offset = 0, b_offset = 0, a_stride = m * k, b_stride = k * n;
    for (std::size_t i = batch_rank; i-- > 0;) {
      const std::int64_t index = rest % out_shape[i];
      rest /= out_shape[i];
      if (dim_a(i) != 1) a_offset += index * a_stride;
      if (dim_b(i) != 1) b_offset += index * b_stride;
      a_stride *= dim_a(i);
      b_stride *= dim_b(i);
    }
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double x = a[static_cast<std::size_t>(a_offset + (op.transpose_a ? p * m + i : i * k + p))];
          const double y = b[static_cast<std::size_t>(b_offset + (op.transpose_b ? j * k + p : p * n + j))];
          sum += x * y;
        }
        c.push_back(sum);
      }
  }
  return c;
}

// Square, odd, size-1 and size-0 matrices; a large one that the thread pool splits; batches that
// broadcast either way, that are all ones or absent in b (one GEMM over stacked rows), that are empty, many
// small batches and a few large ones.
const std::vector<matmul_case> matmul_cases = {
    {{}, {}, 2, 3, 4},
    {{}, {}, 1, 1, 1},
    {{}, {}, 7, 5, 3},
    {{}, {}, 1, 9, 1},
    {{}, {}, 130, 257, 65},
    {{}, {}, 0, 3, 4},
    {{}, {}, 3, 0, 4},
    {{}, {}, 3, 4, 0},
    {{2, 1}, {5}, 3, 4, 6},
    {{4}, {}, 5, 6, 7},
    {{2, 3}, {1}, 5, 6, 7},
    {{}, {3}, 5, 6, 7},
    {{1}, {1, 1}, 5, 6, 7},
    {{3}, {3}, 17, 9, 33},
    {{2, 3}, {1, 3}, 4, 0, 5},
    {{0}, {1}, 3, 4, 5},
    {{64}, {64}, 8, 8, 8},
    {{2}, {2}, 70, 130, 90},
    {{3, 1}, {1, 2}, 33, 20, 1},
    // a's batches against one matrix b: one tall GEMM, whose ranges of rows on two threads start
    // and end inside a batch (21 rows: 0..10 and 10..21).
    {{3}, {}, 7, 5, 9},
    {{3}, {1}, 7, 5, 9},
    // Few rows and wide outputs: split by columns on two threads (a backend that does not thread itself).
    {{}, {}, 4, 33, 300},
    {{2}, {2}, 5, 7, 200},
    {{3}, {}, 5, 7, 200},
    {{3}, {3}, 2, 9, 150},  // too few rows in all to split
    // One row against a wide b: a matrix-vector product, split by columns on two threads (f32 and
    // f64: each block Eigen's matrix-vector product on b's rows where they lie); batched, b's too.
    {{}, {}, 1, 300, 1000},
    {{2}, {2}, 1, 257, 600},
};

// |error| of a k-term dot product grows with k; the tolerance is the dtype's per-element one
// scaled by sqrt(k) (f16 rounds every partial sum to 11 bits, hence its own constant).
template <class T>
double matmul_tolerance(std::int64_t k) {
  const double scale = std::sqrt(static_cast<double>(std::max<std::int64_t>(k, 1)));
  if constexpr (std::is_same_v<T, Eigen::half>) return 4e-3 * scale;
  else return tf::test::default_tolerance<T>() * scale;
}

template <class T, class Registry = tf::default_registry, class Device>
void check_matmul(Device& device) {
  // Integers in a small range so that every product and sum is exact.
  const double lo = std::is_integral_v<T> ? -10 : -1;
  const double hi = std::is_integral_v<T> ? 10 : 1;
  std::uint64_t seed = 100;
  for (const auto& c : matmul_cases) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        const tf::ops::matmul op{.transpose_a = ta, .transpose_b = tb};
        const tf::shape sa = ta ? with_matrix(c.batch_a, c.k, c.m) : with_matrix(c.batch_a, c.m, c.k);
        const tf::shape sb = tb ? with_matrix(c.batch_b, c.n, c.k) : with_matrix(c.batch_b, c.k, c.n);
        INFO("dtype " << tf::name_of(tf::dtype_of<T>) << ": a " << sa.to_string() << (ta ? " transposed" : "")
                      << " x b " << sb.to_string() << (tb ? " transposed" : ""));
        const auto a = random_tensor<T>(sa, seed++, lo, hi);
        const auto b = random_tensor<T>(sb, seed++, lo, hi);
        auto y = tf::call<T, Registry>(device, op, a, b);
        REQUIRE(y.ok());
        tf::shape expected_shape;
        const auto expected = reference_matmul(sa, sb, as_doubles<T>(a), as_doubles<T>(b), op, expected_shape);
        require_close<T>(*y, expected_shape, expected, matmul_tolerance<T>(c.k));
      }
    }
  }
}

}  // namespace matmul_reference
