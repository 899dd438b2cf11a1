// SPDX-License-Identifier: Apache-2.0
// Static graphs: composition (topological order, one node per identical sub-expression, O(1) type
// size per reuse), pruning and fusion groups as compile-time facts; ops with several outputs; the session's results against
// plain references on both host policies, its run-time errors, variables across runs, fetches of
// intermediates, and many threads running one session at once.
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;
using tf::test::random_tensor;
using tf::test::require_error;

namespace {

constexpr auto x = tf::input<"x", float, static_shape<dyn, 4>>;
constexpr auto w = tf::variable<"w", float, static_shape<4, 3>>;
constexpr auto b = tf::variable<"b", float, static_shape<3>>;
constexpr auto logits = tf::relu(tf::matmul(x, w) + b) * 2.0_c;
constexpr auto probabilities = tf::softmax(logits);
using dense_graph = decltype(tf::graph(probabilities));

// A residual stack: x = relu(matmul(x, v)) + x, Blocks times, every block reusing x twice.
template <int Blocks, class X>
constexpr auto residual(X in) {
  constexpr auto v = tf::variable<"v", float, static_shape<8, 8>>;
  if constexpr (Blocks == 0) return in;
  else return residual<Blocks - 1>(tf::relu(tf::matmul(in, v)) + in);
}

// -x, N times: N distinct nodes.
template <int N, class X>
constexpr auto neg_chain(X in) {
  if constexpr (N == 0) return in;
  else return neg_chain<N - 1>(-in);
}
// An add whose second operand holds 261 nodes its first lacks: merging its node lists once was a
// fold over all of them, which Clang refuses past 256 operands (its expression nesting limit).
using long_merge_graph = decltype(tf::graph(neg_chain<2>(tf::input<"a", float, static_shape<2>>) +
                                            neg_chain<260>(tf::input<"b", float, static_shape<2>>)));

std::vector<float> reference_dense(const tf::tensor& xt, const std::vector<float>& wv, const std::vector<float>& bv) {
  const auto xs = xt.unchecked_values<const float>();
  const std::int64_t rows = xt.dim(0);
  std::vector<float> out(static_cast<std::size_t>(rows * 3));
  for (std::int64_t r = 0; r < rows; ++r) {
    double z[3];
    double mx = -1e300;
    for (int j = 0; j < 3; ++j) {
      double acc = bv[j];
      for (int k = 0; k < 4; ++k) acc += double(xs[r * 4 + k]) * wv[k * 3 + j];
      z[j] = std::max(acc, 0.0) * 2.0;
      mx = std::max(mx, z[j]);
    }
    double sum = 0;
    for (double& v : z) sum += (v = std::exp(v - mx));
    for (int j = 0; j < 3; ++j) out[r * 3 + j] = static_cast<float>(z[j] / sum);
  }
  return out;
}

}  // namespace

TEST_CASE("graph: nodes in topological order, each input before its consumers") {
  using g = dense_graph;
  STATIC_REQUIRE(g::size == 9);
  STATIC_REQUIRE(g::names[0] == "x");
  STATIC_REQUIRE(g::names[2] == "matmul");
  STATIC_REQUIRE(g::names[8] == "softmax");
  constexpr bool ordered = [] {
    for (std::size_t i = 0; i < g::size; ++i)
      for (std::size_t j = 0; j < g::num_inputs[i]; ++j)
        if (g::input(i, j) >= i) return false;
    return true;
  }();
  STATIC_REQUIRE(ordered);
  STATIC_REQUIRE(g::specs[8] == tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 3}});
  STATIC_REQUIRE(g::num_variables == 2);
  STATIC_REQUIRE(g::num_input_nodes == 1);
}

TEST_CASE("graph: identical pure sub-expressions are one node") {
  constexpr auto a = tf::relu(x) + tf::relu(x);
  using g = decltype(tf::graph(a));
  STATIC_REQUIRE(g::size == 3);  // x, relu, add
  STATIC_REQUIRE(g::input(2, 0) == g::input(2, 1));
  // Outputs written separately but equal merge too.
  using g2 = decltype(tf::graph(tf::exp(x) * 3.0_c, tf::exp(x) * 3.0_c, tf::exp(x)));
  STATIC_REQUIRE(g2::size == 4);  // x, exp, constant, mul
  // Different attributes are different nodes.
  using g3 = decltype(tf::graph(tf::apply<tf::ops::softmax{.axis = 0}>(x) + tf::apply<tf::ops::softmax{.axis = 1}>(x)));
  STATIC_REQUIRE(g3::size == 4);
}

TEST_CASE("graph: reuse costs one node per use, not a copy of the sub-graph") {
  constexpr auto in = tf::input<"in", float, static_shape<2, 8>>;
  using g = decltype(tf::graph(residual<32>(in)));
  STATIC_REQUIRE(g::size == 2 + 3 * 32);  // in, v, and matmul + relu + add per block
}

TEST_CASE("plan: only what the fetches need runs") {
  constexpr auto y = tf::exp(x);
  constexpr auto z = tf::tanh(x);
  using g = decltype(tf::graph(y, z));
  constexpr std::size_t py = g::position<decltype(y)>();
  constexpr std::size_t pz = g::position<decltype(z)>();
  using plan = tf::static_plan<g, true, py>;
  STATIC_REQUIRE(plan::needed[py]);
  STATIC_REQUIRE_FALSE(plan::needed[pz]);
  STATIC_REQUIRE(plan::num_steps == 2);  // x, exp
}

TEST_CASE("graph: an operand of more than 256 nodes that the other lacks merges (Clang's fold limit)") {
  STATIC_REQUIRE(long_merge_graph::size == 265);  // a, 2 negs, b, 260 negs, the add
}

TEST_CASE("plan: elementwise chains fuse; fetched or shared intermediates end a group") {
  using g = dense_graph;
  using plan = tf::static_plan<g, true, 8>;
  // add (row broadcast of b), relu and mul (scalar constant) are one group rooted at mul.
  STATIC_REQUIRE(plan::is_fused_root(7));
  STATIC_REQUIRE(plan::groups.ops[7] == 3);
  STATIC_REQUIRE(plan::groups.root[4] == 7);
  STATIC_REQUIRE(plan::groups.root[5] == 7);
  STATIC_REQUIRE(plan::num_steps == 6);  // x, w, matmul, b, fused, softmax (the constant is folded)
  STATIC_REQUIRE(plan::leaf_positions<7> == std::array<std::size_t, 2>{2, 3});
  using tree = tf::fused_op_of<plan, 7>::tree;
  STATIC_REQUIRE(tree::size == 3);
  STATIC_REQUIRE(tree::has_row);

  // Fetching relu's output as well keeps it out of the group.
  using plan2 = tf::static_plan<g, true, 8, 5>;
  STATIC_REQUIRE(plan2::groups.root[5] == 5);
  STATIC_REQUIRE(plan2::is_fused_root(5));  // add + relu
  STATIC_REQUIRE_FALSE(plan2::is_fused_root(7));  // mul alone: one op is not a fusion

  // Unfused plans run every node.
  using unfused = tf::static_plan<g, false, 8>;
  STATIC_REQUIRE(unfused::num_steps == 9);

  // A node read by two consumers is not fused into either (tanh is not cheap enough to compute twice).
  constexpr auto t = tf::tanh(x * 0.5_c);
  using g4 = decltype(tf::graph(tf::exp(t) + tf::sigmoid(t)));
  using plan4 = tf::static_plan<g4, true, g4::size - 1>;
  STATIC_REQUIRE(plan4::groups.root[g4::position<decltype(t)>()] == g4::position<decltype(t)>());
}

TEST_CASE("graph: describes itself as a listing and as Graphviz") {
  const std::string listing = dense_graph::describe();
  CHECK(listing.find("0: input 'x' -> f32[?, 4]") != std::string::npos);
  CHECK(listing.find("2: matmul(0, 1) -> f32[?, 3]") != std::string::npos);
  CHECK(listing.find("6: constant 2 -> f32[]") != std::string::npos);
  const std::string dot = dense_graph::to_dot();
  CHECK(dot.rfind("digraph typeflow {", 0) == 0);
  CHECK(dot.find("n2 -> n4;") != std::string::npos);
  const std::string plan = tf::session<dense_graph, tf::cpu>::describe_plan(tf::fetch(probabilities));
  CHECK(plan.find("[fused: 3 ops, inputs 2 3]") != std::string::npos);
}

TEMPLATE_LIST_TEST_CASE("session: results match a plain reference, fused and unfused", "[session]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const std::vector<float> wv{0.5f, -1, 0.25f, 2, 0.75f, -0.5f, 1, 1, -1, 0.1f, 0.2f, 0.3f};
  const std::vector<float> bv{0.1f, -0.2f, 0.3f};
  auto wt = tf::tensor::from_values<float>(std::span<const float>(wv), tf::shape{4, 3});
  auto bt = tf::tensor::from_values<float>(std::span<const float>(bv), tf::shape{3});

  tf::session fused(tf::graph(probabilities), device);
  tf::session<dense_graph, TestType, tf::default_registry, false> unfused(tf::graph(probabilities), device);
  REQUIRE(fused.initialize(w, *wt).ok());
  REQUIRE(fused.initialize(b, *bt).ok());
  REQUIRE(unfused.initialize(w, *wt).ok());
  REQUIRE(unfused.initialize(b, *bt).ok());

  for (std::int64_t rows : {1, 3, 17}) {
    const tf::tensor xt = random_tensor<float>(tf::shape{rows, 4}, 40 + rows);
    auto r1 = fused.run(tf::feed(x, xt), tf::fetch(probabilities));
    auto r2 = unfused.run(tf::feed(x, xt), tf::fetch(probabilities));
    REQUIRE(r1.ok());
    REQUIRE(r2.ok());
    const auto want = reference_dense(xt, wv, bv);
    const auto got1 = std::get<0>(*r1).values();
    const auto got2 = std::get<0>(*r2).values();
    REQUIRE(got1.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(got1[i] == Approx(want[i]).margin(1e-5));
      CHECK(got2[i] == Approx(want[i]).margin(1e-5));
    }
    CHECK(std::get<0>(*r1).shape() == tf::shape{rows, 3});
  }
}

TEST_CASE("session: intermediates can be fetched with the outputs") {
  tf::cpu device;
  tf::session s(tf::graph(probabilities), device);
  REQUIRE(s.initialize(w, 1.0f).ok());
  REQUIRE(s.initialize(b, 0.0f).ok());
  auto xt = tf::tensor::from_values<float>({1, 2, 3, 4, -1, -2, -3, -4}, tf::shape{2, 4});
  auto r = s.run(tf::feed(x, *xt), tf::fetch(logits), tf::fetch(probabilities), tf::fetch(w));
  REQUIRE(r.ok());
  const auto& [l, p, wv] = *r;
  CHECK(l[0] == 20.0f);  // relu(1+2+3+4) * 2
  CHECK(l[3] == 0.0f);   // relu(-10) * 2
  CHECK(p[0] == Approx(1.0f / 3));
  CHECK(wv.shape() == tf::shape{4, 3});
}

TEST_CASE("session: a fetched tensor stays valid while later runs reuse the other buffers") {
  tf::cpu device;
  constexpr auto in = tf::input<"in", float, static_shape<4>>;
  constexpr auto y = tf::exp(in) + 1.0_c;
  tf::session s(tf::graph(y), device);
  auto a = tf::tensor::from_values<float>({0, 0, 0, 0});
  auto first = s.run(tf::feed(in, *a), tf::fetch(y));
  REQUIRE(first.ok());
  auto c = tf::tensor::from_values<float>({1, 1, 1, 1});
  auto second = s.run(tf::feed(in, *c), tf::fetch(y));
  REQUIRE(second.ok());
  CHECK(std::get<0>(*first)[0] == 2.0f);
  CHECK(std::get<0>(*second)[0] == Approx(std::exp(1.0f) + 1));
}

TEST_CASE("session: variables persist across runs and change through assign") {
  tf::cpu device;
  constexpr auto counter = tf::variable<"counter", float, static_shape<2>>;
  constexpr auto step = tf::input<"step", float, static_shape<2>>;
  constexpr auto update = tf::assign(counter, counter + step);
  tf::session s(tf::graph(update), device);

  auto before = s.run(tf::feed(step, *tf::tensor::from_values<float>({1, 2})), tf::fetch(update));
  require_error(before, tf::status_code::failed_precondition, "variable 'counter' is read before it has a value");

  REQUIRE(s.initialize(counter, 10.0f).ok());
  auto inc = tf::tensor::from_values<float>({1, 2});
  for (int i = 0; i < 3; ++i) REQUIRE(s.run(tf::feed(step, *inc), tf::fetch(update)).ok());
  auto value = s.value_of(counter);
  REQUIRE(value.ok());
  CHECK(value->unchecked_values<float>()[0] == 13.0f);
  CHECK(value->unchecked_values<float>()[1] == 16.0f);
}

TEST_CASE("session: a variable initialised from borrowed memory keeps its own copy") {
  tf::cpu device;
  constexpr auto v = tf::variable<"v", float, static_shape<4>>;
  constexpr auto y = v * 2.0_c;
  tf::session s(tf::graph(y), device);
  alignas(64) float values[4] = {1, 2, 3, 4};
  auto borrowed = tf::tensor::borrow(values, tf::dtype::f32, tf::shape{4});
  REQUIRE(borrowed.ok());
  REQUIRE(s.initialize(v, *borrowed).ok());
  values[0] = 100;  // the caller reuses its memory
  auto r = s.run(tf::fetch(y));
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r)[0] == 2.0f);
}

namespace {

// y = a x w, by the definition, in double.
std::vector<double> reference_product(const tf::tensor& a, const tf::tensor& w, bool transpose_w) {
  const auto av = a.unchecked_values<const float>();
  const auto wv = w.unchecked_values<const float>();
  const std::int64_t rows = a.dim(0), k = a.dim(1), n = transpose_w ? w.dim(0) : w.dim(1);
  std::vector<double> y(static_cast<std::size_t>(rows * n), 0.0);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p)
        y[static_cast<std::size_t>(i * n + j)] +=
            double(av[i * k + p]) * wv[transpose_w ? j * k + p : p * n + j];
  return y;
}

void require_product(const tf::tensor& y, const tf::tensor& a, const tf::tensor& w, bool transpose_w = false) {
  const auto want = reference_product(a, w, transpose_w);
  const auto got = y.unchecked_values<const float>();
  REQUIRE(static_cast<std::size_t>(y.num_elements()) == want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-4 * (1 + std::abs(want[i])))) {
      INFO("y[" << i << "] = " << got[i] << ", expected " << want[i]);
      REQUIRE(false);
    }
}

}  // namespace

// A matmul whose b is a variable keeps b packed across runs (kernels/packed_operand.hpp), from the
// second run that reads a value; every way the variable's value changes packs it again: a new
// tensor, the same tensor initialised again after its values were changed in place, an assign. A
// transposed b is not packed; fewer than 8 rows run on b as it is; the rows of a run may differ from
// those the packing was made for.
TEMPLATE_LIST_TEST_CASE("session: a matmul of a variable keeps it packed until the variable changes", "[session]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  constexpr auto in = tf::input<"in", float, static_shape<dyn, 70>>;
  constexpr auto v = tf::variable<"v", float, static_shape<70, 45>>;
  constexpr auto y = tf::matmul(in, v);
  constexpr auto yt = tf::apply<tf::ops::matmul{.transpose_b = true}>(in, tf::variable<"vt", float, static_shape<45, 70>>);
  constexpr auto doubled = tf::assign(v, v * 2.0_c);
  tf::session s(tf::graph(y, yt, doubled), device);
  tf::tensor w = random_tensor<float>(tf::shape{70, 45}, 7);
  const tf::tensor wt = random_tensor<float>(tf::shape{45, 70}, 8);
  REQUIRE(s.initialize(v, w).ok());
  REQUIRE(s.initialize("vt", wt).ok());
  // Two runs on the variable's value: the first leaves a mark, the second packs.
  auto check_products = [&](const tf::tensor& expected_w, std::int64_t rows, std::uint64_t seed) {
    for (int run = 0; run < 2; ++run) {
      INFO("run " << run << ", " << rows << " rows");
      const tf::tensor a = random_tensor<float>(tf::shape{rows, 70}, seed + static_cast<std::uint64_t>(run));
      auto r = s.run(tf::feed(in, a), tf::fetch(y), tf::fetch(yt));
      REQUIRE(r.ok());
      require_product(std::get<0>(*r), a, expected_w);
      require_product(std::get<1>(*r), a, wt, true);
    }
  };
  {
    INFO("fewer than 8 rows: b as it is");
    check_products(w, 3, 1);
    CHECK(s.derived_forms() == 0);
  }
  for (const std::int64_t rows : {20, 9, 131, 4}) {
    check_products(w, rows, static_cast<std::uint64_t>(rows));
    CHECK(s.derived_forms() == 1);  // the transposed b is not packed
  }
  {
    INFO("a new tensor");
    w = random_tensor<float>(tf::shape{70, 45}, 9);
    REQUIRE(s.initialize(v, w).ok());
    CHECK(s.derived_forms() == 0);
    check_products(w, 33, 2);
    CHECK(s.derived_forms() == 1);
  }
  {
    INFO("the same tensor, changed in place and initialised again");
    for (float& e : w.unchecked_values<float>()) e = -e;
    REQUIRE(s.initialize(v, w).ok());
    check_products(w, 33, 3);
  }
  {
    INFO("an assign");
    REQUIRE(s.run(tf::fetch(doubled)).ok());
    const tf::tensor twice = *s.value_of(v);
    CHECK(twice.unchecked_values<const float>()[5] == 2 * w.unchecked_values<const float>()[5]);
    check_products(twice, 33, 4);
    CHECK(s.derived_forms() == 1);
  }
  {
    INFO("an assign every run: never packed");
    for (int run = 0; run < 3; ++run) {
      auto r = s.run(tf::feed(in, random_tensor<float>(tf::shape{16, 70}, 5)), tf::fetch(y), tf::fetch(doubled));
      REQUIRE(r.ok());
      CHECK(s.derived_forms() == 0);
    }
  }
}

TEST_CASE("session: run-time errors name the input and both shapes") {
  tf::cpu device;
  tf::session s(tf::graph(probabilities), device);
  REQUIRE(s.initialize(w, 1.0f).ok());

  auto wrong_shape = tf::tensor::from_values<float>({1, 2, 3}, tf::shape{1, 3});
  require_error(s.run(tf::feed(x, *wrong_shape), tf::fetch(probabilities)), tf::status_code::invalid_argument,
                "input 'x': fed shape [1, 3] does not match the input's shape [?, 4]");
  auto wrong_dtype = tf::tensor::from_values<double>({1, 2, 3, 4}, tf::shape{1, 4});
  require_error(s.run(tf::feed(x, *wrong_dtype), tf::fetch(probabilities)), tf::status_code::invalid_argument,
                "input 'x': fed a tensor of dtype f64, the input is f32");
  require_error(s.run(tf::feed(x, tf::tensor()), tf::fetch(probabilities)), tf::status_code::invalid_argument,
                "input 'x': fed a tensor with no storage");

  // b is not initialised.
  auto ok_shape = tf::tensor::from_values<float>({1, 2, 3, 4}, tf::shape{1, 4});
  require_error(s.run(tf::feed(x, *ok_shape), tf::fetch(probabilities)), tf::status_code::failed_precondition,
                "variable 'b'");

  auto bad_init = tf::tensor::from_values<float>({1, 2});
  auto st = s.initialize(b, *bad_init);
  CHECK(st.code() == tf::status_code::invalid_argument);
  CHECK(std::string(st.message()) == "variable 'b': initial value is f32[2], the variable is f32[3]");
}

TEST_CASE("session: variables are initialised by name, and an unknown name or a wrong value is an error") {
  tf::cpu device;
  tf::session s(tf::graph(probabilities), device);
  REQUIRE(s.initialize("w", *tf::tensor::from_values<float>(std::vector<float>(12, 1.0f), tf::shape{4, 3})).ok());
  REQUIRE(s.initialize("b", *tf::tensor::from_values<float>({0, 0, 0})).ok());
  auto xt = tf::tensor::from_values<float>({1, 2, 3, 4}, tf::shape{1, 4});
  auto r = s.run(tf::feed(x, *xt), tf::fetch(logits));
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r)[0] == 20.0f);

  auto missing = s.initialize("wq", *tf::tensor::from_values<float>({0, 0, 0}));
  CHECK(missing.code() == tf::status_code::not_found);
  CHECK(std::string(missing.message()) == "session::initialize: the graph has no variable named 'wq'");
  auto not_variable = s.initialize("x", *tf::tensor::from_values<float>({0, 0, 0}));
  CHECK(not_variable.code() == tf::status_code::not_found);
  auto wrong = s.initialize("b", *tf::tensor::from_values<float>({1, 2}));
  CHECK(wrong.code() == tf::status_code::invalid_argument);
  CHECK(std::string(wrong.message()) == "variable 'b': initial value is f32[2], the variable is f32[3]");
  auto empty = s.initialize("b", tf::tensor());
  CHECK(empty.code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(empty.message()), Catch::StartsWith("variable 'b': initial value"));
}

TEST_CASE("scoped_name: a node name built from a prefix, an index and a suffix") {
  STATIC_REQUIRE(tf::scoped_name<"layer", 3, "/attention/wq">.view() == "layer3/attention/wq");
  STATIC_REQUIRE(tf::scoped_name<"block", 0>.view() == "block0");
  STATIC_REQUIRE(tf::scoped_name<"l", 1234567, "/b">.view() == "l1234567/b");
  STATIC_REQUIRE(tf::scoped_name<"d", -42, "">.view() == "d-42");
  STATIC_REQUIRE(tf::scoped_name<"", 10, "x">.view() == "10x");
  STATIC_REQUIRE(tf::scoped_name<"n", INT64_MIN>.view() == "n-9223372036854775808");

  constexpr auto v0 = tf::variable<tf::scoped_name<"layer", 0, "/w">, float, static_shape<2>>;
  constexpr auto v1 = tf::variable<tf::scoped_name<"layer", 1, "/w">, float, static_shape<2>>;
  constexpr auto y = v0 + v1;
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  REQUIRE(s.initialize("layer0/w", *tf::tensor::from_values<float>({1, 2})).ok());
  REQUIRE(s.initialize(v1, *tf::tensor::from_values<float>({10, 20})).ok());
  auto r = s.run(tf::fetch(y));
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r)[1] == 22.0f);
  auto def = tf::to_graph_def(tf::graph(y));
  REQUIRE(def.ok());
  CHECK(def->nodes[0].name == "layer0/w");
}

// A name-parameterised variable of one's own, as a model stamps out its layers.
template <tf::fixed_string Suffix, std::int64_t... Dims>
constexpr auto layer_variable = tf::variable<tf::scoped_name<"block", 7, Suffix>, float, static_shape<Dims...>>;

TEST_CASE("scoped_name: fixed_string is a template parameter of one's own") {
  constexpr auto w = layer_variable<"/w", 2>;
  tf::cpu device;
  tf::session s(tf::graph(w * 2.0_c), device);
  REQUIRE(s.initialize("block7/w", *tf::tensor::from_values<float>({1, 2})).ok());
  CHECK(s.initialize("block7/b", *tf::tensor::from_values<float>({1, 2})).code() == tf::status_code::not_found);
}

TEST_CASE("session: a kernel's error names the node") {
  tf::cpu device;
  constexpr auto n = tf::input<"n", std::int32_t, static_shape<3>>;
  constexpr auto d = tf::input<"d", std::int32_t, static_shape<3>>;
  constexpr auto q = n / d;
  tf::session s(tf::graph(q), device);
  auto nt = tf::tensor::from_values<std::int32_t>({1, 2, 3});
  auto dt = tf::tensor::from_values<std::int32_t>({1, 0, 3});
  require_error(s.run(tf::feed(n, *nt), tf::feed(d, *dt), tf::fetch(q)), tf::status_code::invalid_argument,
                "node 2 (div): div: division by zero in input 1");
}

namespace {

// Small elementwise nodes of one static shape: binary, unary and (fused) a group, in f32 and i32.
constexpr auto ea = tf::input<"ea", float, static_shape<5>>;
constexpr auto eb = tf::input<"eb", float, static_shape<5>>;
constexpr auto e_sum = ea + eb;
constexpr auto e_out = tf::exp(tf::maximum(e_sum * ea, eb) - ea / eb) + tf::neg(e_sum);
using small_graph = decltype(tf::graph(e_out));
constexpr auto ia = tf::input<"ia", std::int32_t, static_shape<2, 3>>;
constexpr auto ib = tf::input<"ib", std::int32_t, static_shape<2, 3>>;
constexpr auto i_quotient = (ia * ib) / ib;  // an intermediate: in the arena
constexpr auto i_out = tf::abs(i_quotient - ia) + ib;
using int_graph = decltype(tf::graph(i_out));
// One element each, in shapes [1] and []: element for element all the same.
constexpr auto one = tf::input<"one", float, static_shape<1>>;
constexpr auto one_out = tf::relu(one * 3.0_c) + one;
// Fused groups in the arena (below a softmax, which does not fuse): one with a row leaf ([4] over
// [1, 4]: its one row), one with a scalar leaf ([] over [1]).
constexpr auto fm = tf::input<"fm", float, static_shape<1, 4>>;
constexpr auto fr = tf::input<"fr", float, static_shape<4>>;
constexpr auto row_group_out = tf::softmax(tf::relu(fm + fr) * fm - fr);
constexpr auto fs = tf::input<"fs", float, static_shape<>>;
constexpr auto scalar_group_out = tf::softmax(tf::relu(one + fs) * one - fs);
// One input broadcasts: not one shape.
constexpr auto row = tf::input<"row", float, static_shape<3>>;
constexpr auto broadcast_out = tf::relu(tf::input<"m", float, static_shape<2, 3>> + row) * 2.0_c;

// A plan's executor with the arena (its small elementwise steps on bare data) and without (every
// step through tensors), each with its own state, kept from run to run.
template <class Plan>
struct with_and_without_arena {
  using bare = tf::static_executor<Plan, tf::cpu, tf::default_registry, true>;
  using through_tensors = tf::static_executor<Plan, tf::cpu, tf::default_registry, false>;
  tf::cpu device;
  typename bare::state s;
  typename through_tensors::state r;

  // Both run on `feeds` (the graph's inputs in order); node `out`'s values from each: {bare, through tensors}.
  std::pair<std::vector<float>, std::vector<float>> run(std::vector<const tf::tensor*> feeds, std::size_t out) {
    feeds.push_back(nullptr);
    const tf::static_environment env{std::span<const tf::tensor* const>(feeds), nullptr};
    REQUIRE(bare::run(device, s, env).ok());
    REQUIRE(through_tensors::run(device, r, env).ok());
    const auto a = s.slots[out].template unchecked_values<const float>();
    const auto b = r.slots[out].template unchecked_values<const float>();
    return {{a.begin(), a.end()}, {b.begin(), b.end()}};
  }
};

}  // namespace

TEMPLATE_TEST_CASE("session: small elementwise nodes of one static shape run their kernels on bare data",
                   "[session][elementwise]", std::false_type, std::true_type) {
  constexpr bool fuse = TestType::value;
  using plan = tf::static_plan<small_graph, fuse, small_graph::position<decltype(e_out)>()>;
  using executors = with_and_without_arena<plan>;
  using bare = typename executors::bare;
  using through_tensors = typename executors::through_tensors;
  // Unfused: add, mul, max, div, sub, exp, neg, and the last add, fetched: in a buffer of its own.
  // Fused: ea + eb (two inputs, read twice: a step of its own) and the group of the fetched add.
  CHECK(tf::test::bare_data_steps<bare>() == (fuse ? 2 : 8));
  CHECK(tf::test::bare_data_steps<through_tensors>() == 0);
  CHECK(tf::test::run_elements_steps<bare>() == tf::test::bare_data_steps<bare>());
  CHECK(tf::test::run_elements_steps<through_tensors>() == 0);
  for (const auto& info : bare::infos)
    if (info.elementwise_elements != 0) CHECK(info.elementwise_elements == 5);

  executors both;
  auto& device = both.device;
  for (std::uint64_t seed : {1, 2, 3}) {
    const tf::tensor at = random_tensor<float>(tf::shape{5}, seed);
    const tf::tensor bt = random_tensor<float>(tf::shape{5}, seed + 10, 0.5, 2.0);
    const auto [got, want] = both.run({&at, &bt}, small_graph::position<decltype(e_out)>());
    const auto av = at.unchecked_values<const float>();
    const auto bv = bt.unchecked_values<const float>();
    REQUIRE(got.size() == 5);
    for (std::size_t i = 0; i < 5; ++i) {
      CHECK(got[i] == want[i]);
      const double sum = double(av[i]) + bv[i];
      const double plain = std::exp(std::max(sum * av[i], double(bv[i])) - double(av[i]) / bv[i]) - sum;
      CHECK(got[i] == Approx(plain).epsilon(1e-5).margin(1e-5));
    }
  }

  // An input of one element fed where the graph has five: static_executor::run refuses it as a
  // session does (the kernels, on bare data or not, read the static shapes).
  {
    const tf::tensor at = random_tensor<float>(tf::shape{1}, 7);
    const tf::tensor bt = random_tensor<float>(tf::shape{5}, 8, 0.5, 2.0);
    const tf::tensor* feeds[] = {&at, &bt, nullptr};
    const tf::static_environment env{std::span<const tf::tensor* const>(feeds), nullptr};
    for (const tf::status& st : {bare::run(device, both.s, env), through_tensors::run(device, both.r, env)}) {
      CHECK(st.code() == tf::status_code::invalid_argument);
      CHECK_THAT(st.to_string(), Catch::Contains("input 'ea': fed shape [1] does not match the input's shape [5]"));
    }
    const tf::tensor it = *tf::tensor::from_values<std::int32_t>({1, 2, 3, 4, 5});
    feeds[0] = &it;
    CHECK_THAT(bare::run(device, both.s, env).to_string(), Catch::Contains("input 'ea': fed a tensor of dtype i32, the input is f32"));
  }

  // [1] * [] is element for element too.
  using one_graph = decltype(tf::graph(one_out));
  using one_plan = tf::static_plan<one_graph, fuse, one_graph::position<decltype(one_out)>()>;
  using one_executor = tf::static_executor<one_plan, tf::cpu, tf::default_registry, true>;
  CHECK(tf::test::bare_data_steps<one_executor>() == (fuse ? 1 : 3));
  {
    const auto ot = tf::tensor::from_values<float>({-0.5f});
    const tf::tensor* feeds[] = {&*ot, nullptr};
    typename one_executor::state os;
    REQUIRE(one_executor::run(device, os, tf::static_environment{std::span<const tf::tensor* const>(feeds), nullptr}).ok());
    CHECK(os.slots[one_graph::position<decltype(one_out)>()].template unchecked_values<const float>()[0] == -0.5f);
    const auto pt = tf::tensor::from_values<float>({0.5f});
    feeds[0] = &*pt;
    REQUIRE(one_executor::run(device, os, tf::static_environment{std::span<const tf::tensor* const>(feeds), nullptr}).ok());
    CHECK(os.slots[one_graph::position<decltype(one_out)>()].template unchecked_values<const float>()[0] == 2.0f);
  }

  // A broadcast is not one shape: the add of the row (and the fused group that holds it) goes through
  // tensors; unfused, the relu after it is [2, 3] in and out.
  using broadcast_graph = decltype(tf::graph(broadcast_out));
  using broadcast_plan = tf::static_plan<broadcast_graph, fuse, broadcast_graph::position<decltype(broadcast_out)>()>;
  CHECK(tf::test::bare_data_steps<tf::static_executor<broadcast_plan, tf::cpu, tf::default_registry, true>>() == (fuse ? 0 : 1));
}

TEST_CASE("session: fused groups in the arena run on bare data, row and scalar leaves included", "[session][elementwise]") {
  tf::cpu device;
  // The group's result before the softmax, by hand.
  const auto group = [](double m, double r) { return std::max(m + r, 0.0) * m - r; };
  {
    using graph = decltype(tf::graph(row_group_out));
    using plan = tf::static_plan<graph, true, graph::position<decltype(row_group_out)>()>;
    with_and_without_arena<plan> both;
    CHECK(tf::test::bare_data_steps<typename decltype(both)::bare>() == 2);  // the group; the softmax's shapes
    for (std::uint64_t seed : {5, 6}) {
      const tf::tensor mt = random_tensor<float>(tf::shape{1, 4}, seed);
      const tf::tensor rt = random_tensor<float>(tf::shape{4}, seed + 20);
      const auto [got, want] = both.run({&mt, &rt}, graph::position<decltype(row_group_out)>());
      const auto mv = mt.unchecked_values<const float>();
      const auto rv = rt.unchecked_values<const float>();
      double z[4], sum = 0;
      for (std::size_t i = 0; i < 4; ++i) sum += z[i] = std::exp(group(mv[i], rv[i]));
      for (std::size_t i = 0; i < 4; ++i) {
        CHECK(got[i] == want[i]);
        CHECK(got[i] == Approx(z[i] / sum).epsilon(1e-5));
      }
    }
  }
  {
    using graph = decltype(tf::graph(scalar_group_out));
    using plan = tf::static_plan<graph, true, graph::position<decltype(scalar_group_out)>()>;
    using bare = tf::static_executor<plan, tf::cpu, tf::default_registry, true>;
    CHECK(tf::test::bare_data_steps<bare>() == 2);
    typename bare::state s;
    // The group is relu(x + c) * x - c; softmax of one value is 1, so read the group's slot.
    std::size_t group_slot = graph::size;
    for (std::size_t k = 0; k < bare::infos.size(); ++k)
      if (bare::step_kinds[k] == tf::static_step_kind::fused) group_slot = bare::infos[k].output_slot;
    REQUIRE(group_slot < graph::size);
    for (float c : {-3.0f, 0.25f}) {
      const auto ot = tf::tensor::from_values<float>({1.5f});
      const auto ct = tf::tensor::from_values<float>(std::span<const float>(&c, 1), tf::shape{});
      const tf::tensor* feeds[] = {&*ot, &*ct, nullptr};
      REQUIRE(bare::run(device, s, tf::static_environment{std::span<const tf::tensor* const>(feeds), nullptr}).ok());
      CHECK(s.slots[group_slot].template unchecked_values<const float>()[0] == Approx(group(1.5, c)));
      CHECK(s.slots[graph::position<decltype(scalar_group_out)>()].template unchecked_values<const float>()[0] == 1.0f);
    }
  }
}

namespace {

// Every unary op of the host kernels in two fused groups of N elements, one in the arena (below a
// softmax, which does not fuse) and one fetched (its own buffer).
template <std::int64_t N>
constexpr auto ux = tf::input<"ux", float, static_shape<N>>;
template <std::int64_t N>
constexpr auto unary_group_a = tf::gelu(ux<N>) * tf::tanh(ux<N>) + tf::sigmoid(tf::abs(ux<N>)) -
                               tf::exp(tf::neg(tf::square(ux<N>))) + tf::erf(ux<N>) * tf::softplus(ux<N>);
template <std::int64_t N>
constexpr auto unary_group_b =
    tf::apply<tf::ops::gelu{.approximate = true}>(ux<N>) +
    tf::apply<tf::ops::leaky_relu{.alpha = 0.1}>(ux<N>) * tf::apply<tf::ops::hard_sigmoid{}>(ux<N>) +
    tf::apply<tf::ops::clip{.min = -0.5, .max = 0.75}>(ux<N>) + tf::sqrt(tf::abs(ux<N>)) * tf::rsqrt(tf::abs(ux<N>) + 1.0_c) +
    tf::log(tf::abs(ux<N>) + 1.0_c) + tf::relu(ux<N>);
template <std::int64_t N>
constexpr auto unary_softmax = tf::softmax(unary_group_a<N>);

double reference_group_a(double x) {
  const double gelu = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  return gelu * std::tanh(x) + 1 / (1 + std::exp(-std::abs(x))) - std::exp(-x * x) + std::erf(x) * std::log1p(std::exp(x));
}

double reference_group_b(double x) {
  const double gelu = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  const double leaky = x > 0 ? x : 0.1 * x;
  const double hard = std::clamp(0.2 * x + 0.5, 0.0, 1.0);
  return gelu + leaky * hard + std::clamp(x, -0.5, 0.75) + std::sqrt(std::abs(x)) / std::sqrt(std::abs(x) + 1) +
         std::log(std::abs(x) + 1) + std::max(x, 0.0);
}

}  // namespace

// 3 elements are fewer than a packet of floats (SSE's 4, AVX-512's 16): the fused kernel computes
// them element by element (fused_scalar); 16 go through Eigen's loop where a packet is 4. Either
// way the results are those of the kernel on tensors, to the bit, and of a plain reference.
TEMPLATE_TEST_CASE_SIG("session: fused groups of every unary op run on bare data, in the arena and fetched",
                       "[session][elementwise]", ((std::int64_t N), N), 3, 16) {
  using graph = decltype(tf::graph(unary_softmax<N>, unary_group_b<N>));
  using plan = tf::static_plan<graph, true, graph::template position<decltype(unary_softmax<N>)>(),
                               graph::template position<decltype(unary_group_b<N>)>()>;
  using executors = with_and_without_arena<plan>;
  std::size_t fused = 0;
  for (std::size_t k = 0; k < executors::bare::infos.size(); ++k)
    if (executors::bare::step_kinds[k] == tf::static_step_kind::fused) {
      ++fused;
      CHECK(executors::bare::infos[k].elementwise_elements == N);
    }
  // The two groups and abs(x) + 1, which b reads twice (abs(x), which all three read, is computed
  // in each of them); and the softmax.
  CHECK(fused == 3);
  CHECK(tf::test::bare_data_steps<typename executors::bare>() == 4);
  CHECK(tf::test::run_elements_steps<typename executors::bare>() == 3);  // not the softmax: its kernel has no compute_elements

  executors both;
  for (std::uint64_t seed : {31, 32}) {
    const tf::tensor xt = random_tensor<float>(tf::shape{N}, seed, -3.0, 3.0);
    const auto xv = xt.unchecked_values<const float>();
    const auto [softmax, softmax_want] = both.run({&xt}, graph::template position<decltype(unary_softmax<N>)>());
    const auto [b, b_want] = both.run({&xt}, graph::template position<decltype(unary_group_b<N>)>());
    REQUIRE(softmax.size() == std::size_t(N));
    REQUIRE(b.size() == std::size_t(N));
    double z[N], sum = 0;
    for (std::size_t i = 0; i < std::size_t(N); ++i) sum += z[i] = std::exp(reference_group_a(xv[i]));
    for (std::size_t i = 0; i < std::size_t(N); ++i) {
      CHECK(softmax[i] == softmax_want[i]);
      CHECK(softmax[i] == Approx(z[i] / sum).epsilon(1e-4).margin(1e-6));
      CHECK(b[i] == b_want[i]);
      CHECK(b[i] == Approx(reference_group_b(xv[i])).epsilon(1e-4).margin(1e-5));
    }
  }
}

namespace {

// How the add kernel of the host policies ran: on tensors (compute) or on bare data.
struct add_calls {
  static inline int tensors = 0;
  static inline int bare = 0;
};

template <class Op, class Device, class T>
struct counting_add_kernel : tf::cpu_kernels::eigen_binary_kernel<Op, Device, T> {
  using base = tf::cpu_kernels::eigen_binary_kernel<Op, Device, T>;
  static tf::status compute(const Op& op, tf::kernel_context<Device>& ctx) {
    ++add_calls::tensors;
    return base::compute(op, ctx);
  }
  static tf::status compute_elements(const Op& op, const std::array<const void*, 2>& in, void* out, std::int64_t n) {
    ++add_calls::bare;
    return base::compute_elements(op, in, out, n);
  }
};

using counting_registry = tf::registry<
    tf::kernel_list<tf::kernel_family<counting_add_kernel, tf::ops::add, tf::devices<tf::cpu>, tf::dtypes<float>>>,
    tf::cpu_kernel_list>;

}  // namespace

TEST_CASE("session: fetched small adds run on bare data; a broadcast one on tensors", "[session][elementwise]") {
  tf::cpu device;
  // y is fetched and read by z; z is fetched; w broadcasts [2, 5] + [5].
  constexpr auto y = ea + eb;
  constexpr auto z = y * ea;
  constexpr auto em = tf::input<"m", float, static_shape<2, 5>>;
  constexpr auto w = em + y;
  tf::session<decltype(tf::graph(z, w)), tf::cpu, counting_registry, false> s(tf::graph(z, w), device);
  add_calls::tensors = add_calls::bare = 0;
  const auto at = random_tensor<float>(tf::shape{5}, 51);
  const auto bt = random_tensor<float>(tf::shape{5}, 52);
  const auto mt = random_tensor<float>(tf::shape{2, 5}, 53);
  for (int run = 0; run < 3; ++run) {
    auto r = s.run(tf::feed(ea, at), tf::feed(eb, bt), tf::feed(em, mt), tf::fetch(y),
                   tf::fetch(z), tf::fetch(w));
    REQUIRE(r.ok());
    const auto av = at.unchecked_values<const float>();
    const auto bv = bt.unchecked_values<const float>();
    const auto mv = mt.unchecked_values<const float>();
    for (std::int64_t i = 0; i < 5; ++i) {
      const float sum = av[i] + bv[i];
      CHECK(std::get<0>(*r)[i] == sum);
      CHECK(std::get<1>(*r)[i] == sum * av[i]);
      CHECK(std::get<2>(*r)[i] == mv[i] + sum);
      CHECK(std::get<2>(*r)[5 + i] == mv[5 + i] + sum);
    }
  }
  CHECK(add_calls::bare == 3);     // y, fetched and read by z: on bare data, in its own buffer
  CHECK(add_calls::tensors == 3);  // w broadcasts
}

// Which fused groups run element by element on bare data: fewer elements than Eigen's loop takes
// a packet for, or any number when the group's expression does not vectorise.
TEST_CASE("fused kernel: bare data element by element below a packet", "[session][elementwise]") {
  using layout = tf::fused::leaf_layout;
  using tree = tf::fused::binary<tf::ops::add{}, tf::fused::leaf<0, layout::full>, tf::fused::leaf<1, layout::full>>;
  using kernel = tf::cpu_kernels::fused_elementwise_kernel<tf::ops::fused_elementwise<tree>, tf::cpu, float>;
  STATIC_REQUIRE(kernel::scalar_below == Eigen::internal::packet_traits<float>::size);
  STATIC_REQUIRE(kernel::scalar_below > 3);    // the 3-element groups above: fused_scalar
  STATIC_REQUIRE(kernel::scalar_below <= 16);  // the 16-element ones: Eigen's loop
}

TEST_CASE("session: a fetched node on bare data leaves the result a caller holds as it was", "[session][elementwise]") {
  tf::cpu device;
  tf::session<small_graph, tf::cpu> s(small_graph{}, device);
  const auto a1 = random_tensor<float>(tf::shape{5}, 41);
  const auto b1 = random_tensor<float>(tf::shape{5}, 42, 0.5, 2.0);
  auto first = s.run(tf::feed(ea, a1), tf::feed(eb, b1), tf::fetch(e_out));
  REQUIRE(first.ok());
  const tf::tensor held = std::get<0>(*first).untyped();
  const std::vector<float> before(held.unchecked_values<const float>().begin(), held.unchecked_values<const float>().end());
  // Another run while the caller holds the first result: the fetched add writes a buffer of its own.
  auto second = s.run(tf::feed(ea, random_tensor<float>(tf::shape{5}, 43)), tf::feed(eb, b1), tf::fetch(e_out));
  REQUIRE(second.ok());
  CHECK(std::get<0>(*second).untyped().data() != held.data());
  const auto after = held.unchecked_values<const float>();
  CHECK(std::vector<float>(after.begin(), after.end()) == before);
}

TEST_CASE("session: small integer nodes on bare data: results, and an error that names the node", "[session][elementwise]") {
  using plan = tf::static_plan<int_graph, false, int_graph::position<decltype(i_out)>()>;
  CHECK(tf::test::bare_data_steps<tf::static_executor<plan, tf::cpu, tf::default_registry, true>>() == 5);  // mul, div, sub, abs, the fetched add
  tf::cpu device;
  tf::session<int_graph, tf::cpu, tf::default_registry, false> s(int_graph{}, device);
  const auto at = tf::tensor::from_values<std::int32_t>({7, -8, 9, -10, 11, 0}, tf::shape{2, 3});
  const auto bt = tf::tensor::from_values<std::int32_t>({2, 3, -4, 5, -6, 7}, tf::shape{2, 3});
  auto r = s.run(tf::feed(ia, *at), tf::feed(ib, *bt), tf::fetch(i_out));
  REQUIRE(r.ok());
  const auto bv = bt->unchecked_values<const std::int32_t>();
  for (std::size_t i = 0; i < 6; ++i) CHECK(std::get<0>(*r)[static_cast<std::int64_t>(i)] == bv[i]);  // (a * b) / b == a

  // A zero divisor: the intermediate div's kernel fails on bare data as it would on tensors.
  const auto zero = tf::tensor::from_values<std::int32_t>({2, 3, 0, 5, -6, 7}, tf::shape{2, 3});
  require_error(s.run(tf::feed(ia, *at), tf::feed(ib, *zero), tf::fetch(i_out)), tf::status_code::invalid_argument,
                "node 3 (div): div: division by zero in input 1");
  // The session still runs after it.
  r = s.run(tf::feed(ia, *at), tf::feed(ib, *bt), tf::fetch(i_out));
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r)[0] == 2);
}

TEST_CASE("session: typed feeds") {
  tf::cpu device;
  constexpr auto in = tf::input<"in", double, static_shape<3>>;
  constexpr auto y = tf::square(in) - 1.0_c;
  tf::session s(tf::graph(y), device);
  auto t = tf::typed_tensor<double>::from(*tf::tensor::from_values<double>({1, 2, 3}));
  REQUIRE(t.ok());
  auto r = s.run(tf::feed(in, *t), tf::fetch(y));
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r).values()[2] == 8.0);
  auto wrong = tf::typed_tensor<float>::from(*tf::tensor::from_values<double>({1.0}));
  CHECK_FALSE(wrong.ok());
}

TEST_CASE("session: many threads run one session at once, each run independent") {
  tf::thread_pool device(2);
  tf::session s(tf::graph(probabilities, logits), device);
  const std::vector<float> wv{0.5f, -1, 0.25f, 2, 0.75f, -0.5f, 1, 1, -1, 0.1f, 0.2f, 0.3f};
  const std::vector<float> bv{0.1f, -0.2f, 0.3f};
  REQUIRE(s.initialize(w, *tf::tensor::from_values<float>(std::span<const float>(wv), tf::shape{4, 3})).ok());
  REQUIRE(s.initialize(b, *tf::tensor::from_values<float>(std::span<const float>(bv), tf::shape{3})).ok());

  std::vector<int> failures(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::int64_t rows = 1 + (t + i) % 5;
        const tf::tensor xt = random_tensor<float>(tf::shape{rows, 4}, static_cast<std::uint64_t>(1000 * t + i));
        auto r = s.run(tf::feed(x, xt), tf::fetch(probabilities));
        if (!r.ok()) { ++failures[t]; continue; }
        const auto want = reference_dense(xt, wv, bv);
        const auto got = std::get<0>(*r).values();
        for (std::size_t k = 0; k < want.size(); ++k)
          if (std::abs(got[k] - want[k]) > 1e-5f) { ++failures[t]; break; }
      }
    });
  for (auto& th : threads) th.join();
  for (int f : failures) CHECK(f == 0);
}

TEST_CASE("ops with several outputs: each output an expression, the op run once", "[session][outputs]") {
  constexpr auto in = tf::input<"in", float, static_shape<dyn, 6>>;
  constexpr auto fixed = tf::input<"fixed", float, static_shape<4, 6>>;
  auto [a, mid, c] = tf::split<3, 1>(in);
  auto [values, indices] = tf::top_k<2>(in);
  auto sum = a + c;
  auto weighted = values * tf::cast<tf::dtype::f32>(indices);
  auto [fa, fb] = tf::split<2, 0>(fixed);
  auto fixed_sum = tf::relu(fa) + fb;  // static shapes: the memory plan is made at compile time
  using g = decltype(tf::graph(sum, mid, weighted, indices, fixed_sum));
  // One split node and three outputs; one top_k node and two.
  static_assert(g::size == 17);
  static_assert(g::num_slots == g::size + 3 + 2 + 2);  // each output of an op with several, side by side
  STATIC_REQUIRE(g::specs[g::position<decltype(indices)>()] == tf::tensor_spec{tf::dtype::i64, tf::shape{dyn, 2}});
  STATIC_REQUIRE(g::num_outputs[g::input(g::position<decltype(mid)>(), 0)] == 3);
  CHECK_THAT(g::describe(), Catch::Contains("output 1(1) -> f32[?, 2]"));

  const tf::tensor xt = random_tensor<float>(tf::shape{5, 6}, 77);
  const tf::tensor ft = random_tensor<float>(tf::shape{4, 6}, 78);
  tf::cpu eager;
  auto parts = tf::call<float>(eager, tf::ops::split{.axis = 1, .num_split = 3}, xt);
  auto top = tf::call<float>(eager, tf::ops::top_k{.k = 2}, xt);
  auto halves = tf::call<float>(eager, tf::ops::split{.axis = 0, .num_split = 2}, ft);
  REQUIRE((parts.ok() && top.ok() && halves.ok()));
  auto sum_ref = tf::call<float>(eager, tf::ops::add{}, (*parts)[0], (*parts)[2]);
  auto cast_ref = tf::call<std::int64_t>(eager, tf::ops::cast{.to = tf::dtype::f32}, (*top)[1]);
  REQUIRE(cast_ref.ok());
  auto weighted_ref = tf::call<float>(eager, tf::ops::mul{}, (*top)[0], *cast_ref);
  auto relu_ref = tf::call<float>(eager, tf::ops::relu{}, (*halves)[0]);
  REQUIRE(relu_ref.ok());
  auto fixed_ref = tf::call<float>(eager, tf::ops::add{}, *relu_ref, (*halves)[1]);
  REQUIRE((sum_ref.ok() && weighted_ref.ok() && fixed_ref.ok()));
  const auto check = [&](auto& s) {
    for (int run = 0; run < 3; ++run) {  // later runs reuse the outputs' buffers
      auto r = s.run(tf::feed(in, xt), tf::feed(fixed, ft), tf::fetch(sum), tf::fetch(mid), tf::fetch(weighted),
                     tf::fetch(indices), tf::fetch(fixed_sum));
      INFO("status: " << r.status().to_string());
      REQUIRE(r.ok());
      const auto& [s0, s1, s2, s3, s4] = *r;
      CHECK(tf::test::as_doubles<float>(s0) == tf::test::as_doubles<float>(*sum_ref));
      CHECK(tf::test::as_doubles<float>(s1) == tf::test::as_doubles<float>((*parts)[1]));
      CHECK(tf::test::as_doubles<float>(s2) == tf::test::as_doubles<float>(*weighted_ref));
      CHECK(tf::test::as_doubles<std::int64_t>(s3) == tf::test::as_doubles<std::int64_t>((*top)[1]));
      CHECK(tf::test::as_doubles<float>(s4) == tf::test::as_doubles<float>(*fixed_ref));
    }
  };
  tf::cpu device;
  tf::session sequential(tf::graph(sum, mid, weighted, indices, fixed_sum), device);
  check(sequential);
  tf::thread_pool pool(2);
  tf::session parallel(tf::graph(sum, mid, weighted, indices, fixed_sum), pool, tf::parallel{2});
  check(parallel);
  // A fetched output keeps its values while the next run writes the op's outputs again.
  auto first = sequential.run(tf::feed(in, xt), tf::feed(fixed, ft), tf::fetch(mid));
  auto second = sequential.run(tf::feed(in, random_tensor<float>(tf::shape{5, 6}, 79)), tf::feed(fixed, ft), tf::fetch(mid));
  REQUIRE((first.ok() && second.ok()));
  CHECK(tf::test::as_doubles<float>(std::get<0>(*first)) == tf::test::as_doubles<float>((*parts)[1]));
  // A new batch size: the outputs are inferred again at run time.
  const tf::tensor x3 = random_tensor<float>(tf::shape{3, 6}, 80);
  auto three = sequential.run(tf::feed(in, x3), tf::feed(fixed, ft), tf::fetch(indices));
  REQUIRE(three.ok());
  CHECK(std::get<0>(*three).shape() == tf::shape{3, 2});

  // As a runtime graph, readers name the op's output.
  auto def = tf::to_graph_def(tf::graph(sum, weighted));
  REQUIRE(def.ok());
  const std::string text = tf::to_text(*def);
  CHECK_THAT(text, Catch::Contains("add_4 = add(split_1:0, split_1:2)"));
  CHECK_THAT(text, Catch::Contains("cast_8 = cast(top_k_5:1)"));
  auto runtime = tf::runtime_graph<tf::cpu>::make(*def);
  REQUIRE(runtime.ok());
}

TEST_CASE("ops with several outputs: one part, and static outputs of inputs with run-time dimensions", "[session][outputs]") {
  // split<1> has one output but is still read through its output node: it keeps its own buffer,
  // and no planned intermediate may take the place of the one part while it is read.
  constexpr auto in = tf::input<"in", float, static_shape<4, 3>>;
  auto [whole] = tf::split<1, 0>(in);
  auto sum = whole + tf::exp(in);
  tf::cpu device;
  tf::session s(tf::graph(sum, whole), device);
  const tf::tensor xt = random_tensor<float>(tf::shape{4, 3}, 81);
  auto e = tf::call<float>(device, tf::ops::exp{}, xt);
  REQUIRE(e.ok());
  auto want = tf::call<float>(device, tf::ops::add{}, xt, *e);
  REQUIRE(want.ok());
  auto first = s.run(tf::feed(in, xt), tf::fetch(sum), tf::fetch(whole));
  REQUIRE(first.ok());
  auto second = s.run(tf::feed(in, random_tensor<float>(tf::shape{4, 3}, 82)), tf::fetch(sum), tf::fetch(whole));
  REQUIRE(second.ok());
  CHECK(tf::test::as_doubles<float>(std::get<0>(*first)) == tf::test::as_doubles<float>(*want));
  CHECK(tf::test::as_doubles<float>(std::get<1>(*first)) == tf::test::as_doubles<float>(xt));  // not overwritten

  // top_k<3> of [4, ?] has the static shape [4, 3]; a row of 2 is refused, not read past.
  constexpr auto rows = tf::input<"rows", float, static_shape<4, dyn>>;
  auto [values, indices] = tf::top_k<3>(rows);
  tf::session t(tf::graph(values, indices), device);
  require_error(t.run(tf::feed(rows, random_tensor<float>(tf::shape{4, 2}, 83)), tf::fetch(values), tf::fetch(indices)),
                tf::status_code::invalid_argument, "top_k: k = 3 is larger than the last dimension of input shape [4, 2] (2)");
  REQUIRE(t.run(tf::feed(rows, random_tensor<float>(tf::shape{4, 5}, 84)), tf::fetch(values), tf::fetch(indices)).ok());
  // The same for a one-output op: a reshape of [?, 3] to [6] has a static shape; 9 elements are
  // refused, not copied into 6.
  constexpr auto wide = tf::input<"wide", float, static_shape<dyn, 3>>;
  auto reshaped = tf::reshape<tf::shape{6}>(wide);
  tf::session r(tf::graph(reshaped), device);
  require_error(r.run(tf::feed(wide, random_tensor<float>(tf::shape{3, 3}, 85)), tf::fetch(reshaped)),
                tf::status_code::invalid_argument, "reshape");
  REQUIRE(r.run(tf::feed(wide, random_tensor<float>(tf::shape{2, 3}, 86)), tf::fetch(reshaped)).ok());
}
