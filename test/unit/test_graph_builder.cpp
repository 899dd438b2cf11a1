// SPDX-License-Identifier: Apache-2.0
// Static graphs written by a constexpr build function (graph/graph_builder.hpp): the same graph as
// one written with expressions gives the same results, fused and unfused, on both host policies;
// loops write layers with scoped names; ops with several outputs, assigns, constants beside nodes;
// inputs and variables by name; the plan fuses built nodes; to_graph_def runs the same graph as a
// runtime graph; a chain longer than Clang's fold limit; run-time errors name the node.
#include "support.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;
using tf::test::random_tensor;
using tf::test::require_error;

namespace {

// relu(x w + b) * 2, then softmax: as a build function and as expressions.
constexpr auto dense(tf::graph_builder& g) {
  auto x = g.input("x", tf::dtype::f32, tf::shape{dyn, 4});
  auto w = g.variable("w", tf::dtype::f32, tf::shape{4, 3});
  auto b = g.variable("b", tf::dtype::f32, tf::shape{3});
  auto logits = tf::relu(tf::matmul(x, w) + b) * 2.0;
  return std::array{tf::softmax(logits), logits};
}
using dense_model = tf::built<dense>;

constexpr auto ex = tf::input<"x", float, static_shape<dyn, 4>>;
constexpr auto ew = tf::variable<"w", float, static_shape<4, 3>>;
constexpr auto eb = tf::variable<"b", float, static_shape<3>>;
constexpr auto elogits = tf::relu(tf::matmul(ex, ew) + eb) * 2.0_c;
constexpr auto eprobabilities = tf::softmax(elogits);

// Layers written by a loop: x = relu(x w_l + b_l) + x, each layer's variables named "layer<l>/w".
constexpr int num_layers = 6;
constexpr auto residual(tf::graph_builder& g) {
  auto x = g.input("x", tf::dtype::f32, tf::shape{dyn, 8});
  for (int l = 0; l < num_layers; ++l) {
    auto w = g.variable(tf::scoped("layer", l, "/w"), tf::dtype::f32, tf::shape{8, 8});
    auto b = g.variable(tf::scoped("layer", l, "/b"), tf::dtype::f32, tf::shape{8});
    x = tf::relu(tf::bias_add(tf::matmul(x, w), b)) + x;
  }
  return x;
}
using residual_model = tf::built<residual>;

// A chain longer than the 256 operands Clang allows a fold expression.
constexpr int chain_length = 300;
constexpr auto chain(tf::graph_builder& g) {
  auto x = g.input("x", tf::dtype::f32, tf::shape{3});
  auto n = x;
  for (int i = 1; i < chain_length; ++i) n = n + x;
  return n;
}

// top_k's two outputs, a split's three parts, and an assign.
constexpr auto outputs_and_state(tf::graph_builder& g) {
  auto x = g.input("x", tf::dtype::f32, tf::shape{2, 6});
  auto top = g.apply(tf::ops::top_k{.k = 2}, x);
  auto parts = g.apply(tf::ops::split{.axis = 1, .num_split = 3}, x);
  auto total = g.variable("total", tf::dtype::f32, tf::shape{2, 2});
  auto sum = g.output(parts, 0) + g.output(parts, 1) + g.output(parts, 2);
  auto update = g.assign(total, total + sum);
  return std::array{g.output(top, 0), g.output(top, 1), update};
}
using outputs_model = tf::built<outputs_and_state>;

// 201 blocks x = -(x + bias_i): 201 variables with long names and 603 steps. Clang, whose limit on
// one constant evaluation is far below GCC's, refused such a graph: the session compared every
// pair of variable names, and the parallel executor searched back from each variable step for the
// previous one.
constexpr int num_biases = 201;
constexpr auto many_variables(tf::graph_builder& g) {
  auto x = g.input("x", tf::dtype::f32, tf::shape{3});
  for (int i = 0; i < num_biases; ++i)
    x = -(x + g.variable(tf::scoped("block", i, "/attention/output/bias"), tf::dtype::f32, tf::shape{3}));
  return x;
}
using many_model = tf::built<many_variables>;

std::vector<double> reference_dense(const tf::tensor& xt, const std::vector<float>& wv, const std::vector<float>& bv) {
  const auto xs = xt.unchecked_values<const float>();
  const std::int64_t rows = xt.dim(0);
  std::vector<double> out;
  for (std::int64_t r = 0; r < rows; ++r) {
    double z[3], mx = -1e300, sum = 0;
    for (int j = 0; j < 3; ++j) {
      double acc = bv[j];
      for (int k = 0; k < 4; ++k) acc += double(xs[r * 4 + k]) * wv[k * 3 + j];
      z[j] = std::max(acc, 0.0) * 2.0;
      mx = std::max(mx, z[j]);
    }
    for (double& v : z) sum += (v = std::exp(v - mx));
    for (double v : z) out.push_back(v / sum);
  }
  return out;
}

}  // namespace

TEST_CASE("graph_builder: the records become the graph, in the order written") {
  using graph = dense_model::graph;
  STATIC_REQUIRE(graph::size == 9);
  STATIC_REQUIRE(graph::kinds[0] == tf::node_kind::input);
  STATIC_REQUIRE(graph::names[1] == "w");
  STATIC_REQUIRE(graph::names[3] == "matmul");
  STATIC_REQUIRE(graph::input(3, 0) == 0);
  STATIC_REQUIRE(graph::input(3, 1) == 1);
  STATIC_REQUIRE(graph::specs[3] == tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 3}});
  STATIC_REQUIRE(graph::kinds[6] == tf::node_kind::constant);
  STATIC_REQUIRE(graph::constant_values[6] == 2.0);
  STATIC_REQUIRE(graph::specs[6] == tf::tensor_spec{tf::dtype::f32, tf::shape{}});
  STATIC_REQUIRE(graph::position<decltype(dense_model::output<0>)>() == 8);
  STATIC_REQUIRE(graph::position<decltype(dense_model::node<"b">)>() == 2);
  // A node's type is its function and its number: its id does not depend on the graph's size.
  STATIC_REQUIRE(std::is_same_v<tf::node_at_t<5, graph::nodes>, tf::built_node<dense, 5>>);
  STATIC_REQUIRE(tf::node_id<tf::built_node<dense, 5>> == graph::ids[5]);
  CHECK(graph::describe().find("3: matmul(0, 1) -> f32[?, 3]") != std::string::npos);
  CHECK(graph::describe().find("7: mul(5, 6) -> f32[?, 3]") != std::string::npos);
}

TEST_CASE("graph_builder: the plan fuses built nodes as it fuses an expression's") {
  using plan = tf::static_plan<dense_model::graph, true, 7>;
  // add, relu and mul (with its constant) are one group ending at the mul.
  STATIC_REQUIRE(plan::is_fused_root(7));
  STATIC_REQUIRE(plan::groups.ops[7] == 3);
  using expr_plan = tf::static_plan<decltype(tf::graph(elogits)), true, decltype(tf::graph(elogits))::size - 1>;
  STATIC_REQUIRE(plan::num_steps == expr_plan::num_steps);
}

TEMPLATE_LIST_TEST_CASE("graph_builder: results match the same graph written with expressions", "[session]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const std::vector<float> wv{0.5f, -1, 0.25f, 2, 0.75f, -0.5f, 1, 1, -1, 0.1f, 0.2f, 0.3f};
  const std::vector<float> bv{0.1f, -0.2f, 0.3f};
  auto wt = tf::tensor::from_values<float>(std::span<const float>(wv), tf::shape{4, 3});
  auto bt = tf::tensor::from_values<float>(std::span<const float>(bv), tf::shape{3});

  tf::session built(dense_model::graph{}, device);
  tf::session<dense_model::graph, TestType, tf::default_registry, false> unfused(dense_model::graph{}, device);
  tf::session expressions(tf::graph(eprobabilities), device);
  REQUIRE(built.initialize(dense_model::node<"w">, *wt).ok());
  REQUIRE(built.initialize("b", *bt).ok());
  REQUIRE(unfused.initialize(dense_model::node<"w">, *wt).ok());
  REQUIRE(unfused.initialize(dense_model::node<"b">, *bt).ok());
  REQUIRE(expressions.initialize(ew, *wt).ok());
  REQUIRE(expressions.initialize(eb, *bt).ok());

  for (std::int64_t rows : {1, 3, 17}) {
    const tf::tensor xt = random_tensor<float>(tf::shape{rows, 4}, 70 + rows);
    auto r1 = built.run(tf::feed(dense_model::node<"x">, xt), tf::fetch(dense_model::output<0>),
                        tf::fetch(dense_model::output<1>));
    auto r2 = unfused.run(tf::feed(dense_model::node<"x">, xt), tf::fetch(dense_model::output<0>));
    auto r3 = expressions.run(tf::feed(ex, xt), tf::fetch(eprobabilities));
    REQUIRE(r1.ok());
    REQUIRE(r2.ok());
    REQUIRE(r3.ok());
    const auto want = reference_dense(xt, wv, bv);
    tf::test::require_close<float>(std::get<0>(*r1), tf::shape{rows, 3}, want);
    tf::test::require_close<float>(std::get<0>(*r2), tf::shape{rows, 3}, want);
    const auto a = std::get<0>(*r1).values();
    const auto e = std::get<0>(*r3).values();
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == e[i]);  // the same kernels: the same bits
    CHECK(std::get<1>(*r1).shape() == tf::shape{rows, 3});
  }
}

TEST_CASE("graph_builder: layers written by a loop, their variables named per layer") {
  using graph = residual_model::graph;
  STATIC_REQUIRE(graph::num_variables == 2 * num_layers);
  STATIC_REQUIRE(graph::names[residual_model::position_of_name("layer5/b")] == "layer5/b");
  tf::thread_pool device(2);
  tf::session s(graph{}, device);
  std::vector<std::vector<float>> ws, bs;
  for (int l = 0; l < num_layers; ++l) {
    const tf::tensor w = random_tensor<float>(tf::shape{8, 8}, 100 + l, -0.5, 0.5);
    const tf::tensor b = random_tensor<float>(tf::shape{8}, 200 + l, -0.5, 0.5);
    ws.emplace_back(w.unchecked_values<const float>().begin(), w.unchecked_values<const float>().end());
    bs.emplace_back(b.unchecked_values<const float>().begin(), b.unchecked_values<const float>().end());
    REQUIRE(s.initialize(tf::scoped("layer", l, "/w"), w).ok());
    REQUIRE(s.initialize(tf::scoped("layer", l, "/b"), b).ok());
  }
  const tf::tensor xt = random_tensor<float>(tf::shape{5, 8}, 7);
  auto r = s.run(tf::feed(residual_model::node<"x">, xt), tf::fetch(residual_model::output<0>));
  REQUIRE(r.ok());
  std::vector<double> x(xt.unchecked_values<const float>().begin(), xt.unchecked_values<const float>().end());
  for (int l = 0; l < num_layers; ++l) {
    std::vector<double> next(x.size());
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 8; ++j) {
        double acc = bs[l][j];
        for (int k = 0; k < 8; ++k) acc += x[i * 8 + k] * ws[l][k * 8 + j];
        next[i * 8 + j] = std::max(acc, 0.0) + x[i * 8 + j];
      }
    x = next;
  }
  tf::test::require_close<float>(std::get<0>(*r), tf::shape{5, 8}, x, 1e-4);
}

TEST_CASE("graph_builder: a chain longer than a fold expression may be") {
  using model = tf::built<chain>;
  STATIC_REQUIRE(model::graph::size == chain_length);
  tf::cpu device;
  tf::session s(model::graph{}, device);
  auto t = tf::tensor::from_values<float>({1, -2, 0.5f});
  auto r = s.run(tf::feed(model::node<"x">, *t), tf::fetch(model::output<0>));
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r)[0] == float(chain_length));
  CHECK(std::get<0>(*r)[1] == -2.0f * chain_length);
  CHECK(std::get<0>(*r)[2] == 0.5f * chain_length);
}

TEST_CASE("graph_builder: hundreds of variables, unfused, on the parallel executor") {
  STATIC_REQUIRE(many_model::graph::num_variables == num_biases);
  tf::thread_pool device(2);
  tf::session<many_model::graph, tf::thread_pool, tf::default_registry, /*Fuse=*/false, true, /*Parallel=*/true> s(
      many_model::graph{}, device, tf::parallel{2});
  std::vector<double> expected{0.5, -2, 3};
  for (int i = 0; i < num_biases; ++i) {
    const float b = 0.01f * static_cast<float>(i);
    REQUIRE(s.initialize(tf::scoped("block", i, "/attention/output/bias"), *tf::tensor::filled<float>(tf::shape{3}, b)).ok());
    for (double& v : expected) v = -(v + b);
  }
  auto x = tf::tensor::from_values<float>({0.5f, -2, 3});
  auto r = s.run(tf::feed(many_model::node<"x">, *x), tf::fetch(many_model::output<0>));
  REQUIRE(r.ok());
  tf::test::require_close<float>(std::get<0>(*r), tf::shape{3}, expected, 1e-4);
}

TEST_CASE("graph_builder: ops with several outputs, read through output(node, k); assign", "[outputs]") {
  tf::cpu device;
  tf::session s(outputs_model::graph{}, device);
  REQUIRE(s.initialize(outputs_model::node<"total">, 0.0f).ok());
  auto x = tf::tensor::from_values<float>({1, 5, 2, 4, 3, 0, -1, -5, -2, -4, -3, 7}, tf::shape{2, 6});
  for (int run = 1; run <= 2; ++run) {
    auto r = s.run(tf::feed(outputs_model::node<"x">, *x), tf::fetch(outputs_model::output<0>),
                   tf::fetch(outputs_model::output<1>), tf::fetch(outputs_model::output<2>));
    REQUIRE(r.ok());
    const auto& [values, indices, total] = *r;
    CHECK(values[0] == 5.0f);
    CHECK(values[1] == 4.0f);
    CHECK(values[2] == 7.0f);
    CHECK(values[3] == -1.0f);
    CHECK(indices[0] == 1);
    CHECK(indices[1] == 3);
    CHECK(indices[2] == 5);
    CHECK(indices[3] == 0);
    // The parts [1 5][2 4][3 0] sum to [6 9]; [-1 -5][-2 -4][-3 7] to [-6 -2]; added once a run.
    CHECK(total[0] == 6.0f * run);
    CHECK(total[1] == 9.0f * run);
    CHECK(total[2] == -6.0f * run);
    CHECK(total[3] == -2.0f * run);
  }
}

TEST_CASE("graph_builder: to_graph_def gives the runtime graph of the same nodes") {
  auto def = tf::to_graph_def(tf::built<chain>::graph{});
  REQUIRE(def.ok());
  auto g = tf::runtime_graph<tf::cpu>::make(std::move(*def));
  REQUIRE(g.ok());
  tf::cpu device;
  tf::runtime_session<tf::cpu> s(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g)), device);
  auto x = tf::tensor::from_values<float>({1, 2, 3});
  const std::string out = tf::runtime_name_of<tf::built<chain>::graph>(chain_length - 1);
  auto r = s.run({{"x", *x}}, {out});
  REQUIRE(r.ok());
  CHECK((*r)[0].unchecked_values<float>()[2] == 3.0f * chain_length);
}

TEST_CASE("graph_builder: a feed of the wrong shape is an error naming the input") {
  tf::cpu device;
  tf::session s(dense_model::graph{}, device);
  REQUIRE(s.initialize("w", *tf::tensor::filled<float>(tf::shape{4, 3}, 1.0f)).ok());
  REQUIRE(s.initialize("b", *tf::tensor::filled<float>(tf::shape{3}, 0.0f)).ok());
  auto bad = tf::tensor::filled<float>(tf::shape{2, 5}, 1.0f);
  require_error(s.run(tf::feed(dense_model::node<"x">, *bad), tf::fetch(dense_model::output<0>)),
                tf::status_code::invalid_argument, "'x'");
  require_error(s.initialize("nope", *bad), tf::status_code::not_found, "no variable named 'nope'");
}

namespace {

// An op of the program's own: a builder applies it once its type is in the builder's op list.
struct triple {
  static constexpr std::string_view name = "triple";
  static constexpr int num_inputs = 1;
  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const { return in[0]; }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
};
template <class Op, class Device, class T>
struct triple_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;
  static tf::status compute(const Op&, tf::kernel_context<Device>& ctx) {
    auto x = ctx.inputs[0].template unchecked_flat<const T>();
    auto y = ctx.outputs[0].template unchecked_flat<T>();
    tf::parallel_assign(ctx.device, y, x * T(3));
    return tf::ok_status();
  }
};
struct triple_kernels : tf::named_kernel_list<tf::kernel_list<
    tf::kernel_family<triple_kernel, triple, tf::devices<tf::cpu>, tf::dtypes<float>>>> {};
using triple_registry = tf::registry<triple_kernels, tf::cpu_kernel_list>;
using my_builder = tf::graph_builder_of<tf::op_list_cat<tf::standard_ops, tf::op_list<triple>>>;

constexpr auto with_own_op(my_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2});
  return tf::exp(b.apply(triple{}, x)) + 1.0;
}

}  // namespace

TEST_CASE("graph_builder: an op of the program's own, through an op list that names it") {
  using model = tf::built<with_own_op>;
  STATIC_REQUIRE(model::graph::names[1] == "triple");
  tf::cpu device;
  tf::session<model::graph, tf::cpu, triple_registry> s(model::graph{}, device);
  auto x = tf::tensor::from_values<float>({0, 1});
  auto r = s.run(tf::feed(model::node<"x">, *x), tf::fetch(model::output<0>));
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r)[0] == 2.0f);
  CHECK(std::get<0>(*r)[1] == Approx(std::exp(3.0f) + 1));
}
