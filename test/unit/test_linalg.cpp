// SPDX-License-Identifier: Apache-2.0
// matmul: every dtype and all four transpose combinations against a triple-loop reference (double
// precision, batch broadcasting written out again here) on random inputs, on both host policies;
// shape inference at compile time, dyn dimensions included; run-time errors.
#include "matmul_reference.hpp"
#include "support.hpp"

#include <algorithm>
#include <cmath>

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
