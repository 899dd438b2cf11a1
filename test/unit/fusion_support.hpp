// SPDX-License-Identifier: Apache-2.0
// Shared by the fusion tests: random elementwise expressions generated at compile time from seeds,
// and a double-precision plain-loop evaluation of any elementwise graph to check them against.
#pragma once

#include "support.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace typeflow::test::fusion {

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;

inline constexpr auto a = tf::input<"a", float, static_shape<dyn, 7>>;   // full
inline constexpr auto r = tf::input<"r", float, static_shape<7>>;        // a row of a
inline constexpr auto s = tf::input<"s", float, static_shape<>>;         // a scalar

constexpr std::uint64_t next(std::uint64_t v) { return v * 6364136223846793005ull + 1442695040888963407ull; }

// A random elementwise expression of the given depth. Leaves are a, r, s and constants; the
// root always reads `a`, so the result has a's shape.
template <std::uint64_t Seed, int Depth>
constexpr auto random_expression() {
  constexpr std::uint64_t v = next(Seed) >> 33;
  if constexpr (Depth == 0) {
    if constexpr (v % 5 == 0) return r;
    else if constexpr (v % 5 == 1) return s * 0.5_c;
    else if constexpr (v % 5 == 2) return a - 0.25_c;
    else return a;
  } else if constexpr (v % 3 == 0) {
    constexpr auto x = random_expression<next(Seed), Depth - 1>();
    if constexpr ((v >> 4) % 8 == 0) return tf::relu(x);
    else if constexpr ((v >> 4) % 8 == 1) return tf::tanh(x);
    else if constexpr ((v >> 4) % 8 == 2) return tf::sigmoid(x);
    else if constexpr ((v >> 4) % 8 == 3) return -x;
    else if constexpr ((v >> 4) % 8 == 4) return tf::abs(x);
    else if constexpr ((v >> 4) % 8 == 5) return tf::softplus(x);
    else if constexpr ((v >> 4) % 8 == 6) return tf::gelu(x);
    else return tf::apply<tf::ops::gelu{.approximate = true}>(x);
  } else {
    constexpr auto x = random_expression<next(Seed ^ 0x9e3779b97f4a7c15ull), Depth - 1>();
    constexpr auto y = random_expression<next(Seed + 17), Depth - 1>();
    if constexpr ((v >> 4) % 5 == 0) return x + y;
    else if constexpr ((v >> 4) % 5 == 1) return x - y;
    else if constexpr ((v >> 4) % 5 == 2) return x * y;
    else if constexpr ((v >> 4) % 5 == 3) return tf::maximum(x, y);
    else return tf::minimum(x, y);
  }
}

inline double reference_unary(std::string_view op, double x, bool approximate) {
  if (op == "relu") return x > 0 ? x : 0;
  if (op == "tanh") return std::tanh(x);
  if (op == "sigmoid") return 1 / (1 + std::exp(-x));
  if (op == "neg") return -x;
  if (op == "abs") return std::abs(x);
  if (op == "softplus") return std::log1p(std::exp(x));
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1 / std::sqrt(x);
  if (op == "square") return x * x;
  if (op == "gelu")
    return approximate ? 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
                       : 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  FAIL("no reference for " << op);
  return 0;
}

inline double reference_binary(std::string_view op, double x, double y) {
  if (op == "add") return x + y;
  if (op == "sub") return x - y;
  if (op == "mul") return x * y;
  if (op == "div") return x / y;
  if (op == "maximum") return std::max(x, y);
  if (op == "minimum") return std::min(x, y);
  if (op == "pow") return std::pow(x, y);
  FAIL("no reference for " << op);
  return 0;
}

template <class Node>
constexpr bool approximate_gelu() {
  if constexpr (Node::kind == tf::node_kind::op) {
    if constexpr (std::is_same_v<typename Node::op_type, tf::ops::gelu>) return Node::op.approximate;
  }
  return false;
}

// Evaluates every node of Graph in double precision with NumPy broadcasting, node by node.
template <class Graph>
std::vector<std::vector<double>> reference(const std::vector<const tf::tensor*>& feeds, std::vector<tf::shape>& shapes) {
  std::vector<std::vector<double>> values(Graph::size);
  shapes.assign(Graph::size, tf::shape{});
  constexpr auto approx = []<std::size_t... Is>(std::index_sequence<Is...>) {
    return std::array<bool, Graph::size>{approximate_gelu<tf::node_at_t<Is, typename Graph::nodes>>()...};
  }(std::make_index_sequence<Graph::size>{});
  for (std::size_t i = 0; i < Graph::size; ++i) {
    switch (Graph::kinds[i]) {
      case tf::node_kind::input: {
        const tf::tensor& t = *feeds[Graph::input_node_index[i]];
        shapes[i] = t.shape();
        for (float v : t.unchecked_values<const float>()) values[i].push_back(v);
        break;
      }
      case tf::node_kind::constant:
        values[i] = {Graph::constant_values[i]};
        break;
      default: {
        const std::size_t in0 = Graph::input(i, 0);
        if (Graph::num_inputs[i] == 1) {
          shapes[i] = shapes[in0];
          for (double v : values[in0]) values[i].push_back(reference_unary(Graph::names[i], v, approx[i]));
        } else {
          const std::size_t in1 = Graph::input(i, 1);
          shapes[i] = *tf::broadcast(shapes[in0], shapes[in1]);
          const std::int64_t n = shapes[i].num_elements();
          const std::int64_t inner = shapes[i].rank() ? shapes[i][shapes[i].rank() - 1] : 1;
          auto at = [&](std::size_t p, std::int64_t k) {
            const auto m = static_cast<std::int64_t>(values[p].size());
            return m == n ? values[p][k] : m == 1 ? values[p][0] : values[p][k % inner];
          };
          for (std::int64_t k = 0; k < n; ++k) values[i].push_back(reference_binary(Graph::names[i], at(in0, k), at(in1, k)));
        }
      }
    }
  }
  return values;
}

// Runs `Expression + (a + r + s) * 0` (so that every input is in the graph) fused and unfused, and
// compares both with the reference.
template <class Device, auto Expression>
void check_expression(Device& device, std::uint64_t seed, double lo = -2, double hi = 2) {
  constexpr auto all = Expression + (a + r + s) * 0.0_c;
  using graph = decltype(tf::graph(all));
  const tf::tensor at = random_tensor<float>(tf::shape{5, 7}, seed, lo, hi);
  const tf::tensor rt = random_tensor<float>(tf::shape{7}, seed + 1, lo, hi);
  const tf::tensor st = random_tensor<float>(tf::shape{}, seed + 2, lo, hi);
  tf::session<graph, Device> fused(graph{}, device);
  tf::session<graph, Device, tf::default_registry, false> unfused(graph{}, device);
  INFO(graph::describe());
  INFO(fused.describe_plan(tf::fetch(all)));

  std::vector<const tf::tensor*> feeds(graph::num_input_nodes, nullptr);
  for (std::size_t i = 0; i < graph::size; ++i)
    if (graph::kinds[i] == tf::node_kind::input)
      feeds[graph::input_node_index[i]] = graph::names[i] == "a" ? &at : graph::names[i] == "r" ? &rt : &st;
  std::vector<tf::shape> shapes;
  const auto want = reference<graph>(feeds, shapes).back();

  auto r1 = fused.run(tf::feed(a, at), tf::feed(r, rt), tf::feed(s, st), tf::fetch(all));
  auto r2 = unfused.run(tf::feed(a, at), tf::feed(r, rt), tf::feed(s, st), tf::fetch(all));
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  const auto got1 = std::get<0>(*r1).values();
  const auto got2 = std::get<0>(*r2).values();
  REQUIRE(got1.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    CHECK(got1[k] == Approx(want[k]).margin(1e-5).epsilon(1e-5));
    CHECK(got2[k] == Approx(want[k]).margin(1e-5).epsilon(1e-5));
  }
}

template <int N, class E>
constexpr auto chain_of(E e) {
  if constexpr (N == 0) return e;
  else return chain_of<N - 1>(tf::tanh(e));
}

template <class Device, std::uint64_t... Seeds>
void check_random_expressions(Device& device) {
  (check_expression<Device, random_expression<Seeds, 3 + Seeds % 2>()>(device, Seeds), ...);
}

}  // namespace typeflow::test::fusion

