// SPDX-License-Identifier: Apache-2.0
// matmul: every dtype and all four transpose combinations against a triple-loop reference (double
// precision, batch broadcasting written out again here) on random inputs, on both host policies;
// shape inference at compile time, dyn dimensions included; run-time errors.
#include "support.hpp"

#include <algorithm>
#include <cmath>

namespace tf = typeflow;
using tf::dyn;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;
using tf::test::require_error;

namespace {

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
// broadcast either way, that are all ones (one GEMM over stacked rows), that are empty, many
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
};

// |error| of a k-term dot product grows with k; the tolerance is the dtype's per-element one
// scaled by sqrt(k) (f16 rounds every partial sum to 11 bits, hence its own constant).
template <class T>
double matmul_tolerance(std::int64_t k) {
  const double scale = std::sqrt(static_cast<double>(std::max<std::int64_t>(k, 1)));
  if constexpr (std::is_same_v<T, Eigen::half>) return 4e-3 * scale;
  else return tf::test::default_tolerance<T>() * scale;
}

template <class T, class Device>
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
        auto y = tf::call<T>(device, op, a, b);
        REQUIRE(y.ok());
        tf::shape expected_shape;
        const auto expected = reference_matmul(sa, sb, as_doubles<T>(a), as_doubles<T>(b), op, expected_shape);
        require_close<T>(*y, expected_shape, expected, matmul_tolerance<T>(c.k));
      }
    }
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("matmul matches a triple-loop reference", "[linalg][matmul]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_matmul<float>(device); }
  SECTION("f64") { check_matmul<double>(device); }
  SECTION("f16") { check_matmul<Eigen::half>(device); }
  SECTION("i32") { check_matmul<std::int32_t>(device); }
  SECTION("i64") { check_matmul<std::int64_t>(device); }
}

TEMPLATE_LIST_TEST_CASE("matmul of k = 0 is zeros, whatever the output buffer held", "[linalg][matmul]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  // The kernel alone, on an output filled with garbage, as an executor reusing a buffer runs it.
  using kernel = tf::default_registry::kernel<tf::ops::matmul, TestType, float>;
  const tf::tensor inputs[] = {random_tensor<float>(tf::shape{2, 3, 0}, 1), random_tensor<float>(tf::shape{0, 4}, 2)};
  tf::tensor y = *tf::tensor::filled(tf::shape{2, 3, 4}, 7.0f);
  tf::kernel_context<TestType> ctx{device, inputs, std::span<tf::tensor>(&y, 1)};
  REQUIRE(kernel::compute(tf::ops::matmul{}, ctx).ok());
  require_close<float>(y, tf::shape{2, 3, 4}, std::vector<double>(24, 0.0));
}

TEST_CASE("matmul shape inference at compile time", "[linalg][matmul][static]") {
  using tf::spec;
  using tf::static_shape;
  using tf::ops::matmul;
  // [?, 784] x [784, 256] -> [?, 256]
  STATIC_REQUIRE(tf::static_infer_v<matmul{}, spec<float, static_shape<dyn, 784>>, spec<float, static_shape<784, 256>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 256}});
  // Transposes choose which dimensions are m, k and n.
  STATIC_REQUIRE(tf::static_infer_v<matmul{.transpose_a = true, .transpose_b = true}, spec<double, static_shape<3, 2>>,
                                    spec<double, static_shape<5, 3>>> ==
                 tf::tensor_spec{tf::dtype::f64, tf::shape{2, 5}});
  // An unknown inner dimension is accepted; batch dimensions broadcast, dyn ones included.
  STATIC_REQUIRE(tf::static_infer_v<matmul{}, spec<float, static_shape<dyn, 1, 3, dyn>>,
                                    spec<float, static_shape<5, 4, dyn>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 5, 3, dyn}});
  STATIC_REQUIRE(tf::static_infer_v<matmul{}, spec<std::int32_t, static_shape<2, 1, 3, 4>>,
                                    spec<std::int32_t, static_shape<5, 4, 6>>> ==
                 tf::tensor_spec{tf::dtype::i32, tf::shape{2, 5, 3, 6}});
  // What is certainly wrong is rejected at compile time too.
  STATIC_REQUIRE(!tf::infer(matmul{}, std::array{tf::tensor_spec{tf::dtype::f32, tf::shape{2, 3}},
                                                 tf::tensor_spec{tf::dtype::f32, tf::shape{4, 5}}})
                      .ok());
  STATIC_REQUIRE(!tf::infer(matmul{}, std::array{tf::tensor_spec{tf::dtype::f32, tf::shape{2, 2, 3}},
                                                 tf::tensor_spec{tf::dtype::f32, tf::shape{3, 3, 5}}})
                      .ok());
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::matmul, tf::thread_pool, std::int64_t>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::matmul, tf::cpu, std::int8_t>);
}

TEST_CASE("matmul reports bad inputs", "[linalg][matmul][errors]") {
  tf::cpu device;
  const auto f = [](const tf::shape& s) { return random_tensor<float>(s, 3); };
  require_error(tf::call<float>(device, tf::ops::matmul{}, f({2, 3}), f({4, 5})), tf::status_code::invalid_argument,
                "matmul: inner dimensions differ: a is [2, 3] (k = 3), b is [4, 5] (k = 4)");
  require_error(tf::call<float>(device, tf::ops::matmul{.transpose_b = true}, f({2, 3}), f({3, 4})),
                tf::status_code::invalid_argument,
                "matmul: inner dimensions differ: a is [2, 3] (k = 3), b is [3, 4] (transposed, k = 4)");
  require_error(tf::call<float>(device, tf::ops::matmul{.transpose_a = true}, f({2, 3}), f({3, 4})),
                tf::status_code::invalid_argument, "a is [2, 3] (transposed, k = 2), b is [3, 4] (k = 3)");
  require_error(tf::call<float>(device, tf::ops::matmul{}, f({2, 3, 4}), f({5, 4, 6})),
                tf::status_code::invalid_argument,
                "matmul: the batch dimensions of a [2, 3, 4] and b [5, 4, 6] do not broadcast (shapes [2] and [5]");
  require_error(tf::call<float>(device, tf::ops::matmul{}, f({3}), f({3, 4})), tf::status_code::invalid_argument,
                "matmul: input 0 (a) must have rank >= 2, got shape [3]");
  require_error(tf::call<float>(device, tf::ops::matmul{}, f({2, 3}), f({3})), tf::status_code::invalid_argument,
                "matmul: input 1 (b) must have rank >= 2, got shape [3]");
  require_error(tf::call<float>(device, tf::ops::matmul{}, f({2, 3}), random_tensor<double>(tf::shape{3, 4}, 1)),
                tf::status_code::invalid_argument, "matmul: all inputs must have one dtype, input 0 is f32 and input 1 is f64");
  require_error(tf::call<float>(device, tf::ops::matmul{}, random_tensor<bool>(tf::shape{2, 2}, 1),
                                random_tensor<bool>(tf::shape{2, 2}, 2)),
                tf::status_code::invalid_argument, "matmul: input dtype bool is not supported");
  require_error(tf::call<double>(device, tf::ops::matmul{}, f({2, 3}), f({3, 4})), tf::status_code::invalid_argument,
                "matmul: called with the kernel for f64 but input 0 has dtype f32");
  require_error(tf::call<float>(device, tf::ops::matmul{}, f({2, 3})), tf::status_code::invalid_argument,
                "matmul: expects 2 inputs, got 1");
}
