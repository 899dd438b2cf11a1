// SPDX-License-Identifier: Apache-2.0
// Fusion: random elementwise expressions (unary ops, binary ops with full, row and scalar operands,
// compile-time constants) on both host policies, fused = unfused = reference; fusion groups and
// their cap; cheap ops of one input duplicated into the groups that read them, and random layered
// DAGs with such ops; the run-time check of a layout the graph could only guess from dyn dimensions.
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

// A layered random DAG of elementwise ops over a, r and s: node (L, J) reads two nodes of layer
// L - 1, so most nodes have several readers; its ops mix cheap ones with tanh and sigmoid (never
// duplicated), and row-shaped nodes read by full ones. What gets duplicated is layer 0's a * 0.5
// and any x op x, the cheap ops of one input.
template <std::uint64_t Seed, int L, int J>
inline constexpr auto dag_node = [] {
  constexpr std::uint64_t v = next(Seed * 131 + static_cast<std::uint64_t>(L * 17 + J)) >> 33;
  constexpr auto x = dag_node<Seed, L - 1, v % 4>;
  constexpr auto y = dag_node<Seed, L - 1, (v >> 8) % 4>;
  if constexpr ((v >> 16) % 8 == 0) return x + y;
  else if constexpr ((v >> 16) % 8 == 1) return x - y;
  else if constexpr ((v >> 16) % 8 == 2) return x * y;
  else if constexpr ((v >> 16) % 8 == 3) return tf::maximum(x, y);
  else if constexpr ((v >> 16) % 8 == 4) return tf::tanh(x) + y;
  else if constexpr ((v >> 16) % 8 == 5) return tf::relu(x) - y;
  else if constexpr ((v >> 16) % 8 == 6) return -x * tf::sigmoid(y);
  else return tf::minimum(x * 0.5_c, y);
}();
template <std::uint64_t Seed, int J>
inline constexpr auto dag_node<Seed, 0, J> = [] {
  if constexpr (J == 0) return a;
  else if constexpr (J == 1) return a * 0.5_c;
  else if constexpr (J == 2) return r - 0.25_c;
  else return a + s;
}();
template <std::uint64_t Seed>
inline constexpr auto random_dag = dag_node<Seed, 4, 0> + dag_node<Seed, 4, 1> + dag_node<Seed, 4, 2> + dag_node<Seed, 4, 3>;

// Duplicated ops in the plan of check_expression's graph for Expression.
template <auto Expression>
constexpr std::size_t duplicated_ops() {
  using g = decltype(tf::graph(Expression + (a + r + s) * 0.0_c));
  using plan = tf::static_plan<g, true, g::size - 1>;
  std::size_t n = 0;
  for (bool d : plan::groups.duplicated) n += d;
  return n;
}

TEST_CASE("fusion: a cheap op of one input read by several groups is computed in each of them") {
  // d = a * 2 is read twice by one group: the group computes it twice, and d is no step.
  constexpr auto d = a * 2.0_c;
  constexpr auto y = (d + a) * (d - a);
  using g = decltype(tf::graph(y));
  using plan = tf::static_plan<g, true, g::size - 1>;
  constexpr std::size_t pd = g::position<decltype(d)>();
  STATIC_REQUIRE(plan::groups.duplicated[pd]);
  STATIC_REQUIRE_FALSE(plan::runs[pd]);
  STATIC_REQUIRE(plan::num_steps == 2);  // a, the group
  STATIC_REQUIRE(plan::groups.ops[g::size - 1] == 5);
  STATIC_REQUIRE(plan::leaf_positions<g::size - 1>.size() == 1);
  STATIC_REQUIRE(tf::fused_op_of<plan, g::size - 1>::tree::size == 5);

  // Read by two groups (t, which is read twice and not cheap, is a group of its own): in both.
  constexpr auto t = tf::tanh(d + a);
  constexpr auto y2 = t * t + tf::relu(d);
  using g2 = decltype(tf::graph(y2));
  using plan2 = tf::static_plan<g2, true, g2::size - 1>;
  constexpr std::size_t pt = g2::position<decltype(t)>();
  STATIC_REQUIRE(plan2::groups.duplicated[g2::position<decltype(d)>()]);
  STATIC_REQUIRE(plan2::num_steps == 3);  // a, t's group, the last group
  STATIC_REQUIRE(plan2::groups.ops[pt] == 3);
  STATIC_REQUIRE(plan2::groups.ops[g2::size - 1] == 4);
  STATIC_REQUIRE(plan2::leaf_positions<g2::size - 1> == std::array<std::size_t, 2>{pt, g2::position<decltype(a)>()});

  // Not duplicated: an expensive op (exp), a fetched node, a reader that is not elementwise
  // (softmax), a reader of another shape (r's row read by full nodes).
  constexpr auto e = tf::exp(a);
  using g3 = decltype(tf::graph((e + a) * (e - a)));
  STATIC_REQUIRE_FALSE(tf::static_plan<g3, true, g3::size - 1>::groups.duplicated[g3::position<decltype(e)>()]);
  STATIC_REQUIRE(tf::static_plan<g3, true, g3::size - 1>::num_steps == 3);
  STATIC_REQUIRE_FALSE(tf::static_plan<g, true, pd, g::size - 1>::groups.duplicated[pd]);
  STATIC_REQUIRE(tf::static_plan<g, true, pd, g::size - 1>::num_steps == 4);  // a, 2, d, the group
  using g4 = decltype(tf::graph(tf::softmax(d) + d * a));
  STATIC_REQUIRE_FALSE(tf::static_plan<g4, true, g4::size - 1>::groups.duplicated[g4::position<decltype(d)>()]);
  constexpr auto rr = r * 2.0_c;
  using g5 = decltype(tf::graph((rr + a) * (rr - a)));
  STATIC_REQUIRE_FALSE(tf::static_plan<g5, true, g5::size - 1>::groups.duplicated[g5::position<decltype(rr)>()]);
  // Nor an op of two inputs (a * s), a tree of two ops (relu(a * 2)), or an op read five times.
  constexpr auto two = a * s;
  using g6 = decltype(tf::graph((two + a) * (two - a)));
  STATIC_REQUIRE_FALSE(tf::static_plan<g6, true, g6::size - 1>::groups.duplicated[g6::position<decltype(two)>()]);
  constexpr auto tree = tf::relu(d);
  using g7 = decltype(tf::graph((tree + a) * (tree - a)));
  STATIC_REQUIRE_FALSE(tf::static_plan<g7, true, g7::size - 1>::groups.duplicated[g7::position<decltype(tree)>()]);
  using g9 = decltype(tf::graph((d + a) * (d - a) + d * d * tf::relu(d)));
  STATIC_REQUIRE_FALSE(tf::static_plan<g9, true, g9::size - 1>::groups.duplicated[g9::position<decltype(d)>()]);
  using g10 = decltype(tf::graph((d + a) * (d - a) + d * tf::relu(d)));  // four reads
  STATIC_REQUIRE(tf::static_plan<g10, true, g10::size - 1>::groups.duplicated[g10::position<decltype(d)>()]);
  // Unfused plans duplicate nothing.
  STATIC_REQUIRE_FALSE(tf::static_plan<g, false, g::size - 1>::groups.duplicated[pd]);
  // A group that would pass max_fused_ops with it does not take it in.
  constexpr auto capped = chain_of<22>(d + a) * d;  // 1 + 22 + 1 ops, d read twice: 24 + 2 > 24
  using g8 = decltype(tf::graph(capped));
  STATIC_REQUIRE_FALSE(tf::static_plan<g8, true, g8::size - 1>::groups.duplicated[g8::position<decltype(d)>()]);
  constexpr auto full = chain_of<20>(d + a) * d;  // 1 + 20 + 1 ops and two reads: 24
  using g11 = decltype(tf::graph(full));
  STATIC_REQUIRE(tf::static_plan<g11, true, g11::size - 1>::groups.duplicated[g11::position<decltype(d)>()]);
  STATIC_REQUIRE(tf::static_plan<g11, true, g11::size - 1>::groups.ops[g11::size - 1] == tf::max_fused_ops);

  // The random DAGs run below duplicate ops.
  STATIC_REQUIRE(duplicated_ops<random_dag<2>>() > 0);
  STATIC_REQUIRE(duplicated_ops<random_dag<5>>() > 0);
  STATIC_REQUIRE(duplicated_ops<random_dag<8>>() > 0);
}

TEMPLATE_LIST_TEST_CASE("fusion: duplicated ops, fused = unfused = reference", "[fusion]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  constexpr auto d = a * 2.0_c;
  check_expression<TestType, (d + a) * (d - a)>(device, 1);
  constexpr auto t = tf::tanh(d + a);
  check_expression<TestType, t * t + tf::relu(d)>(device, 2);
  check_expression<TestType, random_dag<2>>(device, 3);
  check_expression<TestType, random_dag<5>>(device, 4);
  check_expression<TestType, random_dag<8>>(device, 5);
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
