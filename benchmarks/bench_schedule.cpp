// SPDX-License-Identifier: Apache-2.0
// Scheduling overhead of static graphs (BENCHMARKS.md): chain, fan-out 1->N->1, binary tree and
// layered 16x16 DAGs of 1-element adds (N = 256), fused (default) and unfused, against the same
// arithmetic as straight-line float code, in ns per op node; and session::run of a 1-node graph.
// With oneTBB (TYPEFLOW_BENCH_TBB): the static parallel executor at 1 and 2 threads on the unfused
// DAG against oneTBB's flow graph running the same DAG with the same node bodies (the add or mul
// kernel on 1-element tensors).
#include <typeflow/typeflow.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#if TYPEFLOW_BENCH_TBB
#include <memory>
#include <vector>

#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>
#endif

#include "harness.hpp"

namespace tf = typeflow;
using namespace tf::literals;
using tf::bench::keep;
using tf::static_shape;

namespace {

constexpr auto x = tf::input<"x", float, static_shape<1>>;
constexpr std::size_t n = 256;

// Leaves that differ: x * i for i = 1, 2, ...
template <std::size_t I>
constexpr auto leaf() {
  return x * tf::scalar<double(I + 1)>;
}

template <std::size_t I, class E>
constexpr auto chain(E e) {
  if constexpr (I == n) return e;
  else return chain<I + 1>(e + x);
}

template <std::size_t First, std::size_t Count>
constexpr auto sum_range() {  // a balanced binary tree over leaf<First> .. leaf<First + Count - 1>
  if constexpr (Count == 1) return leaf<First>();
  else return sum_range<First, Count / 2>() + sum_range<First + Count / 2, Count - Count / 2>();
}

template <std::size_t I, class E>
constexpr auto fan_join(E acc) {  // acc + leaf<1> + ... + leaf<n - 1>: fan-out from x, chain join
  if constexpr (I == n) return acc;
  else return fan_join<I + 1>(acc + leaf<I>());
}

// Layered 16 x 16: node (l, j) adds two nodes of layer l - 1 picked by a fixed-seed generator.
// Variable templates, not recursive function calls: an expression is an empty object, but a
// recursive constexpr function would still be *evaluated* once per path, 2^15 times per output;
// a variable template is evaluated once per node.
constexpr std::uint64_t mix(std::uint64_t v) { return v * 6364136223846793005ull + 1442695040888963407ull; }
template <std::size_t L, std::size_t J>
constexpr auto layered = layered<L - 1, (mix(L * 131 + J) >> 33) % 16> + layered<L - 1, (mix(L * 131 + J) >> 45) % 16>;
template <std::size_t J>
constexpr auto layered<0, J> = leaf<J>();
template <std::size_t... Js>
constexpr auto layered_outputs(std::index_sequence<Js...>) {
  return (layered<15, Js> + ...);
}

// The graph's arithmetic written out as straight-line code over floats: what a person would
// write for the same DAG. Every choice is made with if constexpr, so each node compiles to one
// add or multiply.
template <class Graph, std::size_t I>
void hand_written_node(std::array<float, Graph::size>& v, float in) {
  if constexpr (Graph::kinds[I] == tf::node_kind::input) v[I] = in;
  else if constexpr (Graph::kinds[I] == tf::node_kind::constant) v[I] = static_cast<float>(Graph::constant_values[I]);
  else if constexpr (Graph::names[I] == "mul") v[I] = v[Graph::input(I, 0)] * v[Graph::input(I, 1)];
  else v[I] = v[Graph::input(I, 0)] + v[Graph::input(I, 1)];
}

template <class Graph>
float hand_written(float in) {
  std::array<float, Graph::size> v{};
  [&]<std::size_t... Is>(std::index_sequence<Is...>) {
    (hand_written_node<Graph, Is>(v, in), ...);
  }(std::make_index_sequence<Graph::size>{});
  return v[Graph::size - 1];
}

template <bool Fuse, auto Output>
void bench_dag(tf::bench::harness& h, const std::string& name) {
  using graph = decltype(tf::graph(Output));
  tf::cpu device;
  tf::session<graph, tf::cpu, tf::default_registry, Fuse> s(graph{}, device);
  const tf::tensor in = *tf::tensor::from_values<float>({0.001f});
  auto r = s.run(tf::feed(x, in), tf::fetch(Output));
  float want = 0.001f;
  keep(want);
  if (!r.ok() || std::abs(std::get<0>(*r)[0] - hand_written<graph>(want)) > 1e-3f * std::abs(hand_written<graph>(want)))
    std::printf("!! %s disagrees with the hand-written arithmetic\n", name.c_str());
  std::size_t ops = 0;
  for (auto k : graph::kinds) ops += k == tf::node_kind::op;
  h.compare(name + (Fuse ? ", fused" : ", unfused") + " (" + std::to_string(ops) + " ops)", "straight-line floats",
            [&] { auto y = s.run(tf::feed(x, in), tf::fetch(Output)); keep(y); },
            [&] { float v = want; keep(v); float y = hand_written<graph>(v); keep(y); }, 11, 0.3, "ns/node",
            static_cast<double>(ops));
}

#if TYPEFLOW_BENCH_TBB
// The static parallel executor on the unfused DAG against oneTBB's flow graph: every op node's body
// is the registry's add or mul kernel on 1-element tensors, in both.
template <auto Output>
void bench_parallel(tf::bench::harness& h, const std::string& name) {
  using graph = decltype(tf::graph(Output));
  using add_kernel = tf::default_registry::kernel<tf::ops::add, tf::cpu, float>;
  using mul_kernel = tf::default_registry::kernel<tf::ops::mul, tf::cpu, float>;
  tf::cpu device;
  const tf::tensor in = *tf::tensor::from_values<float>({0.001f});
  std::size_t ops = 0;
  for (auto k : graph::kinds) ops += k == tf::node_kind::op;

  // The flow graph: one continue_node per op node, values in preallocated tensors.
  std::vector<tf::tensor> values(graph::size);
  std::vector<std::array<tf::tensor, 2>> args(graph::size);
  for (std::size_t i = 0; i < graph::size; ++i) {
    if (graph::kinds[i] == tf::node_kind::input) values[i] = in;
    else if (graph::kinds[i] == tf::node_kind::constant)
      values[i] = *tf::tensor::from_values<float>({static_cast<float>(graph::constant_values[i])});
    else values[i] = *tf::tensor::from_values<float>({0.0f});
  }
  for (std::size_t i = 0; i < graph::size; ++i)
    if (graph::kinds[i] == tf::node_kind::op) args[i] = {values[graph::input(i, 0)].view(), values[graph::input(i, 1)].view()};
  tbb::flow::graph fg;
  tbb::flow::broadcast_node<tbb::flow::continue_msg> start(fg);
  std::vector<std::unique_ptr<tbb::flow::continue_node<tbb::flow::continue_msg>>> nodes(graph::size);
  for (std::size_t i = 0; i < graph::size; ++i) {
    if (graph::kinds[i] != tf::node_kind::op) continue;
    const bool is_mul = graph::names[i] == "mul";
    nodes[i] = std::make_unique<tbb::flow::continue_node<tbb::flow::continue_msg>>(fg, [&, i, is_mul](const tbb::flow::continue_msg&) {
      tf::kernel_context<tf::cpu> ctx{device, std::span<const tf::tensor>(args[i]), std::span<tf::tensor>(&values[i], 1)};
      const tf::status st = is_mul ? mul_kernel::compute(tf::ops::mul{}, ctx) : add_kernel::compute(tf::ops::add{}, ctx);
      if (!st.ok()) std::abort();
    });
  }
  for (std::size_t i = 0; i < graph::size; ++i) {
    if (graph::kinds[i] != tf::node_kind::op) continue;
    bool from_op = false;
    for (std::size_t j = 0; j < graph::num_inputs[i]; ++j) {
      const std::size_t p = graph::input(i, j);
      if (graph::kinds[p] != tf::node_kind::op || (j == 1 && p == graph::input(i, 0))) continue;
      tbb::flow::make_edge(*nodes[p], *nodes[i]);
      from_op = true;
    }
    if (!from_op) tbb::flow::make_edge(start, *nodes[i]);
  }

  for (int threads : {1, 2}) {
    tf::session<graph, tf::cpu, tf::default_registry, false, true, true> s(graph{}, device, tf::parallel{threads});
    auto r = s.run(tf::feed(x, in), tf::fetch(Output));
    tbb::task_arena arena(threads);
    arena.execute([&] {
      start.try_put(tbb::flow::continue_msg());
      fg.wait_for_all();
    });
    const float want = values[graph::size - 1].template unchecked_values<float>()[0];
    if (!r.ok() || std::abs(std::get<0>(*r)[0] - want) > 1e-3f * std::abs(want))
      std::printf("!! %s: the parallel session disagrees with the flow graph\n", name.c_str());
    h.compare(name + ", parallel " + std::to_string(threads) + "t (" + std::to_string(ops) + " ops)", "oneTBB flow graph",
              [&] { auto y = s.run(tf::feed(x, in), tf::fetch(Output)); keep(y); },
              [&] {
                arena.execute([&] {
                  start.try_put(tbb::flow::continue_msg());
                  fg.wait_for_all();
                });
                keep(values);
              },
              11, 0.3, "ns/node", static_cast<double>(ops));
  }
}
#else
template <auto Output>
void bench_parallel(tf::bench::harness&, const std::string&) {}
#endif

}  // namespace

// Each DAG shape is its own binary (TYPEFLOW_BENCH_DAG = 0 chain, 1 fan-out, 2 tree, 3 layered) so
// that the four builds run in parallel: each graph instantiates its own fused kernels, one to two
// minutes of g++ apiece.
#ifndef TYPEFLOW_BENCH_DAG
#define TYPEFLOW_BENCH_DAG 0
#endif

int main(int argc, char** argv) {
  tf::bench::harness h("schedule", argc, argv);
#if TYPEFLOW_BENCH_DAG == 0
  constexpr auto chain_out = chain<1>(x + x);
  bench_dag<true, chain_out>(h, "chain 256");
  bench_dag<false, chain_out>(h, "chain 256");
  bench_parallel<chain_out>(h, "chain 256");
  {
    constexpr auto one = tf::relu(x);
    tf::cpu device;
    tf::session s(tf::graph(one), device);
    const tf::tensor in = *tf::tensor::from_values<float>({-1.0f});
    h.compare("session::run, 1-node graph", "max(x, 0) on one float",
              [&] { auto y = s.run(tf::feed(x, in), tf::fetch(one)); keep(y); },
              [&] { float v = -1.0f; keep(v); v = std::max(v, 0.0f); keep(v); }, 11, 0.3, "us");
  }
#elif TYPEFLOW_BENCH_DAG == 1
  constexpr auto fan_out = fan_join<1>(leaf<0>());
  bench_dag<true, fan_out>(h, "fan-out 1->256->1");
  bench_dag<false, fan_out>(h, "fan-out 1->256->1");
  bench_parallel<fan_out>(h, "fan-out 1->256->1");
#elif TYPEFLOW_BENCH_DAG == 2
  constexpr auto tree_out = sum_range<0, n>();
  bench_dag<true, tree_out>(h, "tree of 256 leaves");
  bench_dag<false, tree_out>(h, "tree of 256 leaves");
  bench_parallel<tree_out>(h, "tree of 256 leaves");
#else
  constexpr auto layered_out = layered_outputs(std::make_index_sequence<16>{});
  bench_dag<true, layered_out>(h, "layered 16x16");
  bench_dag<false, layered_out>(h, "layered 16x16");
  bench_parallel<layered_out>(h, "layered 16x16");
#endif
  return 0;
}
