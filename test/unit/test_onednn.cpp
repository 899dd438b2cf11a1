// SPDX-License-Identifier: Apache-2.0
// onednn_kernel_list (kernels/onednn/): matmul and conv2d on oneDNN's sgemm against the same
// double-precision references and cases as the default kernels (all four transposes, broadcast
// batches, blocks split by rows and by columns, every padding and layout of conv2d), on both host
// policies, through a registry that puts the list first; that the registry picks oneDNN's kernels
// for float and the default ones for other dtypes; that a call leaves the calling thread's OpenMP
// thread count as it found it.
#include "conv_reference.hpp"
#include "matmul_reference.hpp"
#include "support.hpp"

#include <typeflow/kernels/onednn/kernel_list.hpp>

#include <type_traits>

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
  omp_set_num_threads(before);
}
