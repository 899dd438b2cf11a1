// SPDX-License-Identifier: Apache-2.0
// Fusion: random elementwise expressions (unary ops, binary ops with full, row and scalar operands,
// compile-time constants) on both host policies, fused = unfused = reference; fusion groups and
// their cap; the run-time check of a layout the graph could only guess from dyn dimensions.
#include "fusion_support.hpp"

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;
using namespace tf::test::fusion;

TEMPLATE_LIST_TEST_CASE("fusion: random elementwise expressions, fused = unfused = reference", "[fusion]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  check_random_expressions<TestType, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>(device);
}

TEST_CASE("fusion: the chain is one step and groups stop at the cap") {
  constexpr auto chain = [] {
    auto e = tf::relu(a);
    return tf::tanh(tf::sigmoid(e * 2.0_c + 1.0_c) - r);
  }();
  using g = decltype(tf::graph(chain));
  using plan = tf::static_plan<g, true, g::size - 1>;
  STATIC_REQUIRE(plan::num_steps == 3);  // a, r, the fused group
  STATIC_REQUIRE(plan::groups.ops[g::size - 1] == 6);

  // 30 chained ops: a group of max_fused_ops (24) and one of the other 6.
  using g30 = decltype(tf::graph(chain_of<30>(a)));
  using plan30 = tf::static_plan<g30, true, g30::size - 1>;
  STATIC_REQUIRE(plan30::num_steps == 3);
  STATIC_REQUIRE(plan30::groups.ops[g30::size - 1] == tf::max_fused_ops);
}

TEST_CASE("fusion: a layout guessed from dyn dimensions is checked at run time") {
  tf::cpu device;
  constexpr auto p = tf::input<"p", float, static_shape<dyn>>;
  constexpr auto q = tf::input<"q", float, static_shape<dyn>>;
  constexpr auto y = tf::relu(p + q) * 2.0_c;  // p and q look "full" to the graph
  tf::session fused(tf::graph(y), device);
  tf::session<decltype(tf::graph(y)), tf::cpu, tf::default_registry, false> unfused(tf::graph(y), device);
  auto pt = tf::tensor::from_values<float>({1, 2, 3});
  auto qt = tf::tensor::from_values<float>({1});
  // Unfused, [3] + [1] broadcasts; fused, the group says it needs 3 elements.
  auto good = unfused.run(tf::feed(p, *pt), tf::feed(q, *qt), tf::fetch(y));
  REQUIRE(good.ok());
  CHECK(std::get<0>(*good)[2] == 8.0f);
  tf::test::require_error(fused.run(tf::feed(p, *pt), tf::feed(q, *qt), tf::fetch(y)), tf::status_code::invalid_argument,
                          "fused_elementwise: input 1 has shape [1] but the fused elementwise group needs 3 elements");
}
