// SPDX-License-Identifier: Apache-2.0
// onednn_kernel_list (kernels/onednn/): matmul on oneDNN's sgemm and conv2d on its direct
// convolution (NHWC) or im2col + sgemm (NCHW), against the same double-precision references and
// cases as the default kernels (all four transposes, broadcast batches, blocks split by rows and
// by columns, every padding and layout of conv2d), on both host policies, through a registry that
// puts the list first; the direct convolution's blocks of images and of rows on 2, 3 and 7 threads
// against the default kernel, with no thread of oneDNN's own; that the registry picks oneDNN's
// kernels for float and the default ones for other dtypes; that a call leaves the calling thread's
// OpenMP thread count as it found it.
#include "conv_reference.hpp"
#include "matmul_reference.hpp"
#include "support.hpp"

#include <typeflow/kernels/onednn/kernel_list.hpp>

#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;

namespace {

using onednn_registry = tf::registry<tf::onednn_kernel_list, tf::cpu_kernel_list>;

}  // namespace

TEMPLATE_LIST_TEST_CASE("oneDNN matmul matches a triple-loop reference", "[onednn][matmul]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  matmul_reference::check_matmul<float, onednn_registry>(device);
  // dtypes oneDNN's list does not have come from the default list behind it
  matmul_reference::check_matmul<double, onednn_registry>(device);
}

TEMPLATE_LIST_TEST_CASE("oneDNN conv2d matches a nested-loop reference", "[onednn][conv]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  conv_reference::check_conv2d<float, onednn_registry>(device, 1e-4);
}

namespace {

// The threads of this process (Linux's /proc/self/status), or -1 where it cannot be read.
int process_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

struct direct_case {
  tf::shape x, f;
  tf::ops::conv2d op;
};

}  // namespace

TEST_CASE("oneDNN conv2d splits images and rows over the threads", "[onednn][conv]") {
  using tf::ops::padding;
  // Convolutions with a short patch (the direct path) and enough work for several threads: one
  // image (ranges of rows), nine (one image a block on 2 threads), two (rows on 3 and 7 threads),
  // a stride, the longest patch that is direct (4x4x8 = 128) and one longer (1x3x43 = 129, im2col),
  // and pads so large that the first and last ranges of rows read only padding.
  const std::vector<direct_case> cases = {
      {{1, 64, 64, 3}, {3, 3, 3, 32}, {.pad = padding::same}},
      {{9, 32, 32, 3}, {3, 3, 3, 16}, {.pad = padding::same}},
      {{2, 28, 28, 1}, {3, 3, 1, 32}, {.pad = padding::same}},
      {{1, 56, 56, 8}, {3, 3, 8, 64}, {.stride_h = 2, .stride_w = 2, .pad = padding::same}},
      {{1, 20, 20, 8}, {4, 4, 8, 16}, {}},
      {{1, 20, 20, 43}, {1, 3, 43, 16}, {.pad = padding::same}},
      {{1, 6, 40, 4}, {3, 3, 4, 64}, {.pad = padding::explicit_, .pad_top = 5, .pad_bottom = 5, .pad_left = 1, .pad_right = 1}},
  };
  std::uint64_t seed = 20;
  for (int threads : {2, 3, 7}) {
    tf::thread_pool device(threads);
    const int before = process_threads();
    for (const auto& c : cases) {
      INFO(threads << " threads, input " << c.x.to_string() << ", filter " << c.f.to_string());
      const auto x = tf::test::random_tensor<float>(c.x, seed++);
      const auto f = tf::test::random_tensor<float>(c.f, seed++);
      auto y = tf::call<float, onednn_registry>(device, c.op, x, f);
      auto expected = tf::test::call<float>(device, c.op, x, f);  // the default kernel (its table), itself checked against the reference
      REQUIRE((y.ok() && expected.ok()));
      tf::test::require_close<float>(*y, expected->shape(), tf::test::as_doubles<float>(*expected), 1e-4);
    }
    // oneDNN ran on the policy's threads alone: it started none of its own. (Fewer is possible: a
    // thread of the process that was already ending, such as an OpenMP worker that libgomp retires
    // after an earlier, larger team, may exit meanwhile: one run of scripts/test saw 6 after 7.)
    CHECK(process_threads() <= before);
  }

  // Pads and strides at the op's limits (2^31 - 1 each), where oneDNN's int arithmetic would refuse
  // the shape: computed as the default kernel computes them.
  {
    tf::cpu device;
    constexpr std::int64_t most = std::numeric_limits<int>::max();
    const auto x = tf::test::random_tensor<float>(tf::shape{1, 4, 4, 2}, 12);
    const auto f = tf::test::random_tensor<float>(tf::shape{3, 3, 2, 2}, 13);
    const tf::ops::conv2d op{.stride_h = most, .stride_w = most, .pad = tf::ops::padding::explicit_, .pad_top = most,
                             .pad_bottom = most, .pad_left = most, .pad_right = most};
    auto y = tf::call<float, onednn_registry>(device, op, x, f);
    auto expected = tf::test::call<float>(device, op, x, f);
    REQUIRE((y.ok() && expected.ok()));
    tf::test::require_close<float>(*y, expected->shape(), tf::test::as_doubles<float>(*expected), 1e-4);
  }
  // A filter assigned between two calls of the same shape: the second call sees the new values
  // (the filter is reordered on every call, not cached with the primitive).
  tf::thread_pool device(2);
  const auto x = tf::test::random_tensor<float>(tf::shape{1, 9, 9, 4}, 7);
  const tf::ops::conv2d op{.pad = tf::ops::padding::same};
  const auto f1 = tf::test::random_tensor<float>(tf::shape{3, 3, 4, 8}, 8);
  const auto f2 = tf::test::random_tensor<float>(tf::shape{3, 3, 4, 8}, 9);
  auto y1 = tf::call<float, onednn_registry>(device, op, x, f1);
  auto y2 = tf::call<float, onednn_registry>(device, op, x, f2);
  auto expected = tf::test::call<float>(device, op, x, f2);
  REQUIRE((y1.ok() && y2.ok() && expected.ok()));
  tf::test::require_close<float>(*y2, expected->shape(), tf::test::as_doubles<float>(*expected), 1e-4);
}

TEST_CASE("the registry takes oneDNN's kernels for float only", "[onednn][registry]") {
  STATIC_REQUIRE(std::is_same_v<onednn_registry::kernel<tf::ops::matmul, tf::cpu, float>,
                                tf::onednn::onednn_matmul_kernel<tf::ops::matmul, tf::cpu, float>>);
  STATIC_REQUIRE(std::is_same_v<onednn_registry::kernel<tf::ops::conv2d, tf::thread_pool, float>,
                                tf::onednn::onednn_conv2d_kernel<tf::ops::conv2d, tf::thread_pool, float>>);
  STATIC_REQUIRE(std::is_same_v<onednn_registry::kernel<tf::ops::matmul, tf::cpu, double>,
                                tf::cpu_kernels::eigen_matmul_kernel<tf::ops::matmul, tf::cpu, double>>);
}

TEST_CASE("a oneDNN call keeps the calling thread's OpenMP thread count", "[onednn]") {
  tf::cpu device;
  const int before = omp_get_max_threads();
  omp_set_num_threads(3);
  const auto a = tf::test::random_tensor<float>(tf::shape{40, 50}, 1);
  const auto b = tf::test::random_tensor<float>(tf::shape{50, 60}, 2);
  REQUIRE(tf::call<float, onednn_registry>(device, tf::ops::matmul{}, a, b).ok());
  CHECK(omp_get_max_threads() == 3);
  const auto x = tf::test::random_tensor<float>(tf::shape{1, 8, 8, 2}, 3);
  const auto f = tf::test::random_tensor<float>(tf::shape{3, 3, 2, 4}, 4);
  REQUIRE(tf::call<float, onednn_registry>(device, tf::ops::conv2d{}, x, f).ok());  // the direct convolution
  CHECK(omp_get_max_threads() == 3);
  omp_set_num_threads(before);
}
