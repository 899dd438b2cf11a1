// SPDX-License-Identifier: Apache-2.0
// matmul: every dtype and all four transpose combinations against a triple-loop reference (double
// precision, batch broadcasting written out again here) on random inputs, on both host policies;
// shape inference at compile time, dyn dimensions included; run-time errors, and those of a GEMM
// backend that fails (matmul and conv2d).
#include "matmul_reference.hpp"
#include "support.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

namespace tf = typeflow;
using tf::dyn;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;
using tf::test::require_error;

using namespace matmul_reference;

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

// c [m, n] = a [m, k] x b [k, n] (a and b as doubles), within matmul's tolerance.
template <class T>
void require_product(const std::vector<double>& a, const std::vector<double>& b, const std::vector<T>& c,
                     std::int64_t m, std::int64_t n, std::int64_t k) {
  const double tolerance = matmul_tolerance<T>(k);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (std::int64_t p = 0; p < k; ++p)
        expected += a[static_cast<std::size_t>(i * k + p)] * b[static_cast<std::size_t>(p * n + j)];
      const double actual = static_cast<double>(c[static_cast<std::size_t>(i * n + j)]);
      if (!(std::abs(actual - expected) <= tolerance * (1 + std::abs(expected)))) {
        INFO("c[" << i << ", " << j << "] = " << actual << ", expected " << expected);
        REQUIRE(false);
      }
    }
}

// The GEMM that f32/f64 matmuls run on several threads (b packed once for all of them), called
// directly: with Eigen's blocking, and with small blocks chosen so that small matrices cross every
// edge (several depth blocks, several row blocks of b, a block of b of several chunks of panels
// whose last rows take each of the packing's remainder paths, ranges of a's rows in several
// pieces). The cases marked parallel are large enough for parallel_for to give them every thread
// (checked); which thread packs which chunk is left to timing.
template <class T>
void check_shared_gemm(tf::thread_pool& device, std::int64_t m, std::int64_t n, std::int64_t k,
                       const tf::cpu_kernels::detail::shared_gemm_blocks& blocks, bool parallel) {
  INFO("dtype " << tf::name_of(tf::dtype_of<T>) << ", " << device.num_threads() << " threads: [" << m << ", " << k
                << "] x [" << k << ", " << n << "], blocks kc " << blocks.kc << " mc " << blocks.mc << " nc "
                << blocks.nc);
  if (parallel) REQUIRE(tf::cpu_kernels::detail::shared_gemm_threads<T>(device, m, n, k) == device.num_threads());
  const auto a = as_doubles<T>(random_tensor<T>(tf::shape{m, k}, static_cast<std::uint64_t>(m * 7 + k), -1, 1));
  const auto b = as_doubles<T>(random_tensor<T>(tf::shape{k, n}, static_cast<std::uint64_t>(n * 11 + k), -1, 1));
  const std::vector<T> a_t(a.begin(), a.end()), b_t(b.begin(), b.end());
  std::vector<T> c(static_cast<std::size_t>(m * n), std::numeric_limits<T>::quiet_NaN());  // overwritten, not added to
  tf::cpu_kernels::detail::shared_gemm(device, m, n, k, a_t.data(), b_t.data(), c.data(), blocks);
  require_product<T>(a, b, c, m, n, k);
}

TEMPLATE_TEST_CASE("the shared-packing GEMM matches a reference across its block edges", "[linalg][matmul]", float,
                   double) {
  using tf::cpu_kernels::detail::shared_gemm_blocks;
  constexpr std::int64_t mr = Eigen::internal::gebp_traits<TestType, TestType>::mr;
  constexpr std::int64_t packet = Eigen::internal::packet_traits<TestType>::size;
  for (const int threads : {2, 3}) {
    tf::thread_pool device(threads);
    check_shared_gemm<TestType>(device, 130, 65, 257, shared_gemm_blocks::of<TestType>(130, 65, 257), true);
    check_shared_gemm<TestType>(device, 37, 300, 600, shared_gemm_blocks::of<TestType>(37, 300, 600), true);
    for (const auto& [m, n, k] : {std::array<std::int64_t, 3>{64, 70, 9}, {5, 1, 1}, {12, 6, 0}})
      check_shared_gemm<TestType>(device, m, n, k, shared_gemm_blocks::of<TestType>(m, n, k), false);
    // Small blocks: 19 depth blocks (the last of 4), 3 row blocks of b (the last short), ranges of
    // a's rows in pieces of 5.
    const auto small = shared_gemm_blocks::with<TestType>(37, 70, 130, 7, 30, 5);
    REQUIRE(small.k_blocks == 19);
    REQUIRE(small.n_blocks == 3);
    check_shared_gemm<TestType>(device, 37, 70, 130, small, true);
    // One block of b of nine mr-row panels and a tail (three chunks of panels, the last ragged),
    // the tail taking the packing's remainder paths: one row, a packet and a row, two packets and
    // a row, three packets less one.
    for (const std::int64_t tail : {std::int64_t{1}, packet + 1, 2 * packet + 1, 3 * packet - 1}) {
      const std::int64_t rows = 9 * mr + tail;
      check_shared_gemm<TestType>(device, 240, rows, 80, shared_gemm_blocks::with<TestType>(240, rows, 80, 16, rows, 7),
                                  true);
    }
  }
}

// b packed once (what a static session keeps for a matmul of a variable) times a's of any number
// of rows, on one thread and on several: the packing made for one number of rows serves others.
template <class T>
std::vector<double> packed_matrix_b(std::int64_t n, std::int64_t k) {
  return as_doubles<T>(random_tensor<T>(tf::shape{k, n}, static_cast<std::uint64_t>(n * 13 + k), -1, 1));
}
template <class T, class Device>
void check_packed_matrix(Device& device, const tf::cpu_kernels::detail::packed_matrix<T>& packed, std::int64_t n,
                         std::int64_t k) {
  const auto b = packed_matrix_b<T>(n, k);
  for (const std::int64_t m : {std::int64_t{1}, std::int64_t{8}, std::int64_t{37}, std::int64_t{130}}) {
    INFO("dtype " << tf::name_of(tf::dtype_of<T>) << ", " << device.num_threads() << " threads: [" << m << ", " << k
                  << "] x [" << k << ", " << n << "], for fma_gemm " << packed.for_fma() << ", blocks kc "
                  << packed.blocks().kc << " mc " << packed.blocks().mc);
    if (m == 130 && n * k >= 5000)  // large enough for every thread
      REQUIRE(tf::cpu_kernels::detail::shared_gemm_threads<T>(device, m, n, k) == device.num_threads());
    const auto a = as_doubles<T>(random_tensor<T>(tf::shape{m, k}, static_cast<std::uint64_t>(m * 5 + k), -1, 1));
    const std::vector<T> a_t(a.begin(), a.end());
    std::vector<T> c(static_cast<std::size_t>(m * n), std::numeric_limits<T>::quiet_NaN());
    packed.multiply(device, m, a_t.data(), c.data());
    require_product<T>(a, b, c, m, n, k);
  }
}
template <class T, class Device>
void check_packed_matrix(Device& device, std::int64_t n, std::int64_t k,
                         const tf::cpu_kernels::detail::shared_gemm_blocks& blocks) {
  const auto b = packed_matrix_b<T>(n, k);
  const std::vector<T> b_t(b.begin(), b.end());
  const auto packed = tf::cpu_kernels::detail::packed_matrix<T>::pack(blocks, n, k, b_t.data());
  REQUIRE(packed != nullptr);
  REQUIRE(!packed->for_fma());
  check_packed_matrix<T>(device, *packed, n, k);
}

TEMPLATE_TEST_CASE("a b packed once multiplies a's of any number of rows", "[linalg][matmul]", float, double) {
  using tf::cpu_kernels::detail::shared_gemm_blocks;
  tf::cpu one;
  tf::thread_pool two(2), three(3);
  auto each_device = [&](std::int64_t n, std::int64_t k, const shared_gemm_blocks& blocks) {
    check_packed_matrix<TestType>(one, n, k, blocks);
    check_packed_matrix<TestType>(two, n, k, blocks);
    check_packed_matrix<TestType>(three, n, k, blocks);
  };
  // Eigen's blocking, for a number of rows other than the products'.
  for (const auto& [n, k, rows] : {std::array<std::int64_t, 3>{65, 257, 130}, {300, 600, 37}, {5, 3, 8}})
    each_device(n, k, shared_gemm_blocks::of<TestType>(rows, n, k));
  // Small blocks: 19 depth blocks (the last of 4) and 3 row blocks of b (the last short).
  const auto small = shared_gemm_blocks::with<TestType>(37, 70, 130, 7, 30, 5);
  REQUIRE(small.k_blocks == 19);
  REQUIRE(small.n_blocks == 3);
  each_device(70, 130, small);
  // Packed for the rows of a product: f32 for fma_gemm where the processor runs it.
  for (const auto& [n, k] : {std::array<std::int64_t, 2>{65, 257}, {300, 600}, {5, 3}}) {
    const auto b = packed_matrix_b<TestType>(n, k);
    const std::vector<TestType> b_t(b.begin(), b.end());
    const auto packed = tf::cpu_kernels::detail::packed_matrix<TestType>::pack(64, n, k, b_t.data());
    REQUIRE(packed != nullptr);
    CHECK(packed->for_fma() == (std::is_same_v<TestType, float> && tf::cpu_kernels::detail::fma_gemm::available()));
    check_packed_matrix<TestType>(one, *packed, n, k);
    check_packed_matrix<TestType>(three, *packed, n, k);
  }
}

TEST_CASE("a b packed for fma_gemm is split over threads by its panels for few rows, by rows for many",
          "[linalg][matmul]") {
  using tf::cpu_kernels::detail::fma_gemm_split_by_panels;
  using tf::cpu_kernels::detail::shared_gemm_threads;
  if (!tf::cpu_kernels::detail::fma_gemm::available()) {
    WARN("this processor has no AVX2 and FMA: fma_gemm is not used here, and not tested");
    return;
  }
  constexpr std::int64_t n = 300, k = 257;  // 19 panels, the last of 12 columns; two depth blocks
  const auto b = packed_matrix_b<float>(n, k);
  const std::vector<float> b_t(b.begin(), b.end());
  const auto packed = tf::cpu_kernels::detail::packed_matrix<float>::pack(64, n, k, b_t.data());
  REQUIRE(packed != nullptr);
  REQUIRE(packed->for_fma());
  for (const int threads : {2, 3}) {
    tf::thread_pool device(threads);
    // (rows, split by panels): panels while each thread's rows fit in one row block of a (144).
    for (const auto& [m, by_panels] : {std::array<std::int64_t, 2>{16, 1}, {64, 1}, {287, 1}, {2 * 144 * threads, 0}}) {
      INFO(threads << " threads: [" << m << ", " << k << "] x [" << k << ", " << n << "]");
      REQUIRE(shared_gemm_threads<float>(device, m, n, k) == threads);
      REQUIRE(fma_gemm_split_by_panels(m, n, threads) == (by_panels != 0));
      const auto a = as_doubles<float>(random_tensor<float>(tf::shape{m, k}, static_cast<std::uint64_t>(m + threads), -1, 1));
      const std::vector<float> a_t(a.begin(), a.end());
      std::vector<float> c(static_cast<std::size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
      packed->multiply(device, m, a_t.data(), c.data());
      require_product<float>(a, b, c, m, n, k);
    }
  }
  // Too few panels to give each thread two: by rows.
  CHECK(!fma_gemm_split_by_panels(64, 3 * 16, 2));
  CHECK(fma_gemm_split_by_panels(64, 3 * 16 + 1, 2));
}

// fma_gemm (f32 on AVX2 + FMA), called directly: a and b as they lie, transposed or blocks of wider
// matrices, c a block of a wider one; shapes that cross its micro-kernel's 6 x 16 block, its depth
// blocks (256) and its row blocks (144). c's other columns must keep what they held.
void check_fma_gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a, bool trans_b, std::int64_t pad) {
  using tf::cpu_kernels::detail::fma_gemm;
  using tf::cpu_kernels::detail::strided_matrix;
  INFO("[" << m << ", " << k << "] x [" << k << ", " << n << "], transposed a " << trans_a << ", b " << trans_b
           << ", rows " << pad << " longer");
  const auto a = as_doubles<float>(random_tensor<float>(tf::shape{m, k}, static_cast<std::uint64_t>(m * 3 + k), -1, 1));
  const auto b = as_doubles<float>(random_tensor<float>(tf::shape{k, n}, static_cast<std::uint64_t>(n * 7 + k), -1, 1));
  // Stored as they lie: a [m, k] or [k, m], rows `pad` longer than the matrix; b likewise.
  const std::int64_t lda = (trans_a ? m : k) + pad, ldb = (trans_b ? k : n) + pad, ldc = n + pad;
  std::vector<float> a_s(static_cast<std::size_t>((trans_a ? k : m) * lda), 99.0f);
  std::vector<float> b_s(static_cast<std::size_t>((trans_b ? n : k) * ldb), 99.0f);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p)
      a_s[static_cast<std::size_t>(trans_a ? p * lda + i : i * lda + p)] = static_cast<float>(a[static_cast<std::size_t>(i * k + p)]);
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j)
      b_s[static_cast<std::size_t>(trans_b ? j * ldb + p : p * ldb + j)] = static_cast<float>(b[static_cast<std::size_t>(p * n + j)]);
  std::vector<float> c_s(static_cast<std::size_t>(m * ldc), std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < m; ++i) std::fill_n(c_s.begin() + i * ldc + n, pad, -5.0f);
  fma_gemm::gemm(trans_a ? strided_matrix{a_s.data(), 1, lda} : strided_matrix{a_s.data(), lda, 1},
                 trans_b ? strided_matrix{b_s.data(), 1, ldb} : strided_matrix{b_s.data(), ldb, 1}, m, n, k, c_s.data(),
                 ldc);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    std::copy_n(c_s.begin() + i * ldc, n, c.begin() + i * n);
    for (std::int64_t j = n; j < ldc; ++j) REQUIRE(c_s[static_cast<std::size_t>(i * ldc + j)] == -5.0f);
  }
  require_product<float>(a, b, c, m, n, k);
}

TEST_CASE("fma_gemm matches a reference across its block edges, for operands as they lie", "[linalg][matmul]") {
  if (!tf::cpu_kernels::detail::fma_gemm::available()) {
    WARN("this processor has no AVX2 and FMA: fma_gemm is not used here, and not tested");
    return;
  }
  for (const bool trans_a : {false, true})
    for (const bool trans_b : {false, true})
      for (const std::int64_t pad : {std::int64_t{0}, std::int64_t{3}}) {
        check_fma_gemm(6, 16, 1, trans_a, trans_b, pad);      // one block of the micro-kernel
        check_fma_gemm(151, 37, 300, trans_a, trans_b, pad);  // two row blocks, two depth blocks, ragged edges
        check_fma_gemm(13, 70, 513, trans_a, trans_b, pad);   // three depth blocks, the last of one
        check_fma_gemm(1, 5, 9, trans_a, trans_b, pad);
      }
  // Every row count to 26: on AVX-512, two panels of a at once with 7 to 12 rows, and a panel left
  // alone (micro_kernel_6, whose depth goes two steps at a time: even and odd depths); on AVX2, one
  // panel at a time.
  for (std::int64_t m = 1; m <= 26; ++m)
    for (const std::int64_t k : {1, 40, 41}) check_fma_gemm(m, 21, k, false, false, 0);
  check_fma_gemm(288, 130, 256, false, false, 0);  // whole blocks: two row blocks, one depth block
  check_fma_gemm(4, 3, 0, false, false, 0);         // an empty depth: zeros
}

// fma_gemm::multiply on a range of b's panels: those columns of c are the product's, the others keep
// what they held; ranges that together cover every panel make the whole product.
TEST_CASE("fma_gemm multiplies a range of b's panels alone", "[linalg][matmul]") {
  using tf::cpu_kernels::detail::fma_gemm;
  if (!fma_gemm::available()) {
    WARN("this processor has no AVX2 and FMA: fma_gemm is not used here, and not tested");
    return;
  }
  for (const auto& [m, n, k] : {std::array<std::int64_t, 3>{151, 70, 300}, {7, 33, 513}, {3, 16, 5}, {2, 9, 0}}) {
    const auto a = as_doubles<float>(random_tensor<float>(tf::shape{m, k}, static_cast<std::uint64_t>(m + 3 * k), -1, 1));
    const auto b = as_doubles<float>(random_tensor<float>(tf::shape{k, n}, static_cast<std::uint64_t>(n + 5 * k), -1, 1));
    const std::vector<float> a_t(a.begin(), a.end()), b_t(b.begin(), b.end());
    std::vector<float> packed(static_cast<std::size_t>(std::max<std::int64_t>(fma_gemm::packed_b_size(k, n), 1)));
    fma_gemm::pack_b({b_t.data(), n, 1}, k, n, packed.data());
    const std::int64_t panels = fma_gemm::panels(n), ldc = n + 2;
    for (std::int64_t first = 0; first < panels; ++first)
      for (std::int64_t last = first + 1; last <= panels; ++last) {
        INFO("[" << m << ", " << k << "] x [" << k << ", " << n << "], panels " << first << ".." << last);
        std::vector<float> c(static_cast<std::size_t>(m * ldc), -5.0f);
        fma_gemm::multiply({a_t.data(), k, 1}, 0, m, n, k, packed.data(), first, last, c.data(), ldc);
        const std::int64_t j0 = first * 16, j1 = std::min(n, last * 16);
        std::vector<float> inside(static_cast<std::size_t>(m * (j1 - j0)));
        std::vector<double> b_inside(static_cast<std::size_t>(k * (j1 - j0)));
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < ldc; ++j) {
            const float v = c[static_cast<std::size_t>(i * ldc + j)];
            if (j >= j0 && j < j1) inside[static_cast<std::size_t>(i * (j1 - j0) + j - j0)] = v;
            else REQUIRE(v == -5.0f);
          }
        for (std::int64_t p = 0; p < k; ++p)
          for (std::int64_t j = j0; j < j1; ++j)
            b_inside[static_cast<std::size_t>(p * (j1 - j0) + j - j0)] = b[static_cast<std::size_t>(p * n + j)];
        require_product<float>(a, b_inside, inside, m, j1 - j0, k);
      }
  }
}

TEST_CASE("the shared-packing GEMM on fma_gemm matches a reference", "[linalg][matmul]") {
  using tf::cpu_kernels::detail::shared_gemm_threads;
  if (!tf::cpu_kernels::detail::fma_gemm::available()) {
    WARN("this processor has no AVX2 and FMA: fma_gemm is not used here, and not tested");
    return;
  }
  for (const int threads : {2, 3}) {
    tf::thread_pool device(threads);
    // (m, n, k, whether large enough for every thread): panels in chunks of 4, the last chunk short,
    // depth blocks of 256.
    for (const auto& [m, n, k, parallel] : {std::array<std::int64_t, 4>{130, 65, 257, 1}, {37, 300, 600, 1},
                                            {64, 70, 9, 0}, {5, 1, 1, 0}, {12, 6, 0, 0}}) {
      INFO(threads << " threads: [" << m << ", " << k << "] x [" << k << ", " << n << "]");
      if (parallel != 0) REQUIRE(shared_gemm_threads<float>(device, m, n, k) == threads);
      // Seeds of their own for each thread count, and no scratch kept from the case before: a chunk
      // left unpacked must not find the same values packed there already.
      tf::scratch_cache::trim();
      const auto a = as_doubles<float>(
          random_tensor<float>(tf::shape{m, k}, static_cast<std::uint64_t>(m + k + 1000 * threads), -1, 1));
      const auto b = as_doubles<float>(
          random_tensor<float>(tf::shape{k, n}, static_cast<std::uint64_t>(n + 2 * k + 1000 * threads), -1, 1));
      const std::vector<float> a_t(a.begin(), a.end()), b_t(b.begin(), b.end());
      std::vector<float> c(static_cast<std::size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
      tf::cpu_kernels::detail::shared_fma_gemm(device, m, n, k, a_t.data(), b_t.data(), c.data());
      require_product<float>(a, b, c, m, n, k);
    }
  }
}

// The matmul kernel's packed path (kernels/packed_operand.hpp): which products it packs, and that
// compute_packed multiplies by the packed b (given another b of its shape, it still gives a x the
// packed one), or runs compute where the rows are too few.
TEMPLATE_LIST_TEST_CASE("matmul packs b for a tall product only, and multiplies by the packed b",
                        "[linalg][matmul]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  using kernel = tf::default_registry::kernel<tf::ops::matmul, TestType, float>;
  STATIC_REQUIRE(tf::packs_operand<kernel>);
  STATIC_REQUIRE(!tf::packs_operand<tf::default_registry::kernel<tf::ops::matmul, TestType, std::int32_t>>);
  auto packable = [](const tf::ops::matmul& op, const tf::shape& a, const tf::shape& b) {
    const tf::tensor in[] = {random_tensor<float>(a, 1), random_tensor<float>(b, 2)};
    const bool yes = kernel::packable(op, in);
    CHECK((kernel::pack(op, in) != nullptr) == yes);
    return yes;
  };
  CHECK(packable({}, {8, 5}, {5, 7}));
  CHECK(packable({}, {2, 4, 5}, {5, 7}));   // a's batches stack into 8 rows
  CHECK(packable({}, {8, 5}, {1, 5, 7}));   // one matrix b
  CHECK(!packable({}, {7, 5}, {5, 7}));     // fewer than 8 rows: a matrix-vector product
  CHECK(!packable({.transpose_a = true}, {5, 8}, {5, 7}));
  CHECK(!packable({.transpose_b = true}, {8, 5}, {7, 5}));
  CHECK(!packable({}, {2, 8, 5}, {2, 5, 7}));  // a b per batch
  CHECK(!packable({}, {8, 0}, {0, 7}));

  const tf::tensor b1 = random_tensor<float>(tf::shape{70, 45}, 4), b2 = random_tensor<float>(tf::shape{70, 45}, 5);
  const tf::tensor tall[] = {random_tensor<float>(tf::shape{64, 70}, 3), b1};
  const auto form = kernel::pack({}, tall);
  REQUIRE(form != nullptr);
  for (const tf::shape& a_shape : {tf::shape{64, 70}, tf::shape{3, 11, 70}, tf::shape{2, 70}}) {
    INFO(a_shape.to_string() << " x [70, 45]");
    const tf::tensor a = random_tensor<float>(a_shape, 6);
    tf::shape c_shape = a_shape;
    c_shape[c_shape.rank() - 1] = 45;
    const bool tall_enough = a.num_elements() / 70 >= 8;
    // compute on the packed b; compute_packed, given b2, on the packed b1 (on b2 when too few rows).
    const tf::tensor reference_in[] = {a, tall_enough ? b1 : b2}, packed_in[] = {a, b2};
    tf::tensor expected = *tf::tensor::allocate(tf::dtype::f32, c_shape);
    tf::tensor got = *tf::tensor::filled(c_shape, std::numeric_limits<float>::quiet_NaN());
    tf::kernel_context<TestType> reference{device, reference_in, std::span<tf::tensor>(&expected, 1)};
    tf::kernel_context<TestType> packed{device, packed_in, std::span<tf::tensor>(&got, 1)};
    REQUIRE(kernel::compute({}, reference).ok());
    REQUIRE(kernel::compute_packed({}, packed, form.get()).ok());
    const auto e = expected.unchecked_values<const float>();
    const auto g = got.unchecked_values<const float>();
    for (std::size_t i = 0; i < e.size(); ++i) REQUIRE(g[i] == Approx(e[i]).margin(1e-4));
  }
}

namespace {

// A GEMM backend whose library refuses every call (kernels/cpu/gemm.hpp).
struct refusing_gemm {
  static constexpr std::string_view name = "refusing";
  template <class T>
  static bool run(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*, std::int64_t,
                  T*, std::int64_t) {
    return false;
  }
};

template <class Kernel, class Op, class Device>
tf::status run_kernel(Device& device, const Op& op, const tf::shape& xs, const tf::shape& fs, const tf::shape& ys) {
  const tf::tensor inputs[] = {random_tensor<float>(xs, 1), random_tensor<float>(fs, 2)};
  tf::tensor y = *tf::tensor::allocate(tf::dtype::f32, ys);
  tf::kernel_context<Device> ctx{device, inputs, std::span<tf::tensor>(&y, 1)};
  return Kernel::compute(op, ctx);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("a GEMM backend that fails is an internal error naming it, the op and the shapes",
                        "[linalg][matmul][conv][errors]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  using matmul = tf::cpu_kernels::basic_matmul_kernel<tf::ops::matmul, TestType, float, refusing_gemm>;
  using conv = tf::cpu_kernels::basic_im2col_conv2d_kernel<tf::ops::conv2d, TestType, float, refusing_gemm>;
  const auto code = tf::status_code::internal;
  // Split by rows, by columns (few rows, wide output), not split (fewer than 8 rows).
  require_error(run_kernel<matmul>(device, tf::ops::matmul{}, {64, 5}, {5, 7}, {64, 7}), code,
                "matmul: refusing's GEMM failed on [64, 5] x [5, 7]");
  require_error(run_kernel<matmul>(device, tf::ops::matmul{}, {16, 5}, {5, 300}, {16, 300}), code,
                "matmul: refusing's GEMM failed on [16, 5] x [5, 300]");
  require_error(run_kernel<matmul>(device, tf::ops::matmul{}, {2, 3, 5}, {5, 7}, {2, 3, 7}), code,
                "matmul: refusing's GEMM failed on [2, 3, 5] x [5, 7]");
  // im2col chunks, a pointwise filter, and NCHW images.
  require_error(run_kernel<conv>(device, tf::ops::conv2d{}, {1, 5, 5, 2}, {3, 3, 2, 4}, {1, 3, 3, 4}), code,
                "conv2d: refusing's GEMM failed on image [1, 5, 5, 2] and filter [3, 3, 2, 4]");
  require_error(run_kernel<conv>(device, tf::ops::conv2d{}, {1, 5, 5, 2}, {1, 1, 2, 4}, {1, 5, 5, 4}), code,
                "conv2d: refusing's GEMM failed on image [1, 5, 5, 2]");
  require_error(run_kernel<conv>(device, tf::ops::conv2d{.format = tf::ops::data_format::nchw}, {1, 2, 5, 5},
                                 {3, 3, 2, 4}, {1, 4, 3, 3}),
                code, "conv2d: refusing's GEMM failed on image [1, 2, 5, 5]");
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
  require_error(tf::test::call<float>(device, tf::ops::matmul{}, f({2, 3}), f({4, 5})), tf::status_code::invalid_argument,
                "matmul: inner dimensions differ: a is [2, 3] (k = 3), b is [4, 5] (k = 4)");
  require_error(tf::test::call<float>(device, tf::ops::matmul{.transpose_b = true}, f({2, 3}), f({3, 4})),
                tf::status_code::invalid_argument,
                "matmul: inner dimensions differ: a is [2, 3] (k = 3), b is [3, 4] (transposed, k = 4)");
  require_error(tf::test::call<float>(device, tf::ops::matmul{.transpose_a = true}, f({2, 3}), f({3, 4})),
                tf::status_code::invalid_argument, "a is [2, 3] (transposed, k = 2), b is [3, 4] (k = 3)");
  require_error(tf::test::call<float>(device, tf::ops::matmul{}, f({2, 3, 4}), f({5, 4, 6})),
                tf::status_code::invalid_argument,
                "matmul: the batch dimensions of a [2, 3, 4] and b [5, 4, 6] do not broadcast (shapes [2] and [5]");
  require_error(tf::test::call<float>(device, tf::ops::matmul{}, f({3}), f({3, 4})), tf::status_code::invalid_argument,
                "matmul: input 0 (a) must have rank >= 2, got shape [3]");
  require_error(tf::test::call<float>(device, tf::ops::matmul{}, f({2, 3}), f({3})), tf::status_code::invalid_argument,
                "matmul: input 1 (b) must have rank >= 2, got shape [3]");
  require_error(tf::test::call<float>(device, tf::ops::matmul{}, f({2, 3}), random_tensor<double>(tf::shape{3, 4}, 1)),
                tf::status_code::invalid_argument, "matmul: all inputs must have one dtype, input 0 is f32 and input 1 is f64");
  require_error(tf::test::call<float>(device, tf::ops::matmul{}, random_tensor<bool>(tf::shape{2, 2}, 1),
                                random_tensor<bool>(tf::shape{2, 2}, 2)),
                tf::status_code::invalid_argument, "matmul: input dtype bool is not supported");
  require_error(tf::test::call<double>(device, tf::ops::matmul{}, f({2, 3}), f({3, 4})), tf::status_code::invalid_argument,
                "matmul: called with the kernel for f64 but input 0 has dtype f32");
  require_error(tf::test::call<float>(device, tf::ops::matmul{}, f({2, 3})), tf::status_code::invalid_argument,
                "matmul: expects 2 inputs, got 1");
}
