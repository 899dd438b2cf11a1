// SPDX-License-Identifier: Apache-2.0
// 50 random static graphs on GPU:0 (elementwise ops with broadcasting, matmuls, shared operands),
// each run as a CUDA graph against the same session run step by step (half of them fused, half not:
// each graph costs two sessions' instantiation, about 2 s of compile time): bitwise equal on every
// run, the first captured and the others replayed. The graphs are types made at
// compile time from a seed (random_graph<Seed>), so each is a graph a user could have written.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <tuple>
#include <utility>

#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/runtime/cuda_graph.hpp>
#include <typeflow/typeflow.hpp>

#include "../unit/support.hpp"

namespace tf = typeflow;
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

namespace {

constexpr std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Nodes of shape [4, 8] from x, a [8] input c and an [8, 8] variable v; node I applies one of eight
// ops to one or two earlier nodes picked by the seed; the graph fetches the last.
template <std::uint64_t Seed>
struct random_graph {
  static constexpr auto x = tf::input<"x", float, tf::static_shape<4, 8>>;
  static constexpr auto c = tf::input<"c", float, tf::static_shape<8>>;
  static constexpr auto v = tf::variable<"v", float, tf::static_shape<8, 8>>;
  static constexpr int size = 10;

  template <int I, class Nodes>
  static constexpr auto grow(Nodes nodes) {
    if constexpr (I == size) {
      return nodes;
    } else {
      constexpr std::uint64_t r = mix(Seed * 131 + I);
      constexpr std::size_t n = std::tuple_size_v<Nodes>;
      const auto a = std::get<r % n>(nodes);
      const auto b = std::get<(r >> 12) % n>(nodes);
      constexpr int op = static_cast<int>((r >> 24) % 8);
      const auto next = [&] {
        if constexpr (op == 0) return a + b;
        else if constexpr (op == 1) return a * b;
        else if constexpr (op == 2) return tf::maximum(a, b);
        else if constexpr (op == 3) return a - b * c;
        else if constexpr (op == 4) return tf::relu(a);
        else if constexpr (op == 5) return tf::tanh(a);
        else if constexpr (op == 6) return tf::matmul(a, v);
        else return tf::sigmoid(a) + c;
      }();
      return grow<I + 1>(std::tuple_cat(nodes, std::tuple(next)));
    }
  }
  static constexpr auto nodes = grow<0>(std::tuple(x, tf::tanh(x)));
  // x, c and v take part in every graph (they are fed and initialised).
  static constexpr auto y = std::get<std::tuple_size_v<decltype(nodes)> - 1>(nodes) + tf::matmul(x, v) * c;
  using graph = decltype(tf::graph(y));
};

template <std::uint64_t Seed, bool Fuse>
void check_graph() {
  using G = random_graph<Seed>;
  using graph = typename G::graph;
  INFO("seed " << Seed << (Fuse ? ", fused" : ", unfused"));
  tf::cuda<0> g;
  tf::session<graph, tf::cuda<0>, registry, Fuse> steps(graph{}, g);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry, Fuse> replayed(graph{}, g, tf::cuda_graph{});
  const tf::tensor v = tf::test::random_tensor<float>(tf::shape{8, 8}, Seed, -0.5, 0.5);
  REQUIRE((steps.initialize(G::v, v).ok() && replayed.initialize(G::v, v).ok()));
  for (int run = 0; run < 3; ++run) {
    const tf::tensor x = tf::test::random_tensor<float>(tf::shape{4, 8}, Seed * 10 + run);
    const tf::tensor c = tf::test::random_tensor<float>(tf::shape{8}, Seed * 10 + run + 5);
    auto want = steps.run(tf::feed(G::x, x), tf::feed(G::c, c), tf::fetch(G::y));
    tf::run_metadata md;
    auto got = replayed.run(md, tf::feed(G::x, x), tf::feed(G::c, c), tf::fetch(G::y));
    INFO(got.status().to_string());
    REQUIRE((want.ok() && got.ok()));
    CHECK(md.replay == (run == 0 ? tf::graph_replay::captured : tf::graph_replay::replayed));
    const tf::tensor& a = std::get<0>(*got).untyped();
    const tf::tensor& b = std::get<0>(*want).untyped();
    REQUIRE(a.spec() == b.spec());
    CHECK(std::memcmp(a.data(), b.data(), b.bytes()) == 0);
  }
}

template <std::uint64_t... Seeds>
void check_graphs(std::integer_sequence<std::uint64_t, Seeds...>) {
  (check_graph<Seeds + 1, Seeds % 2 == 0>(), ...);
}

} // namespace

TEST_CASE("50 random static graphs replayed as CUDA graphs give the step-by-step runs' outputs, bitwise") {
  check_graphs(std::make_integer_sequence<std::uint64_t, 50>{});
}
