// SPDX-License-Identifier: Apache-2.0
// Runtime graphs (BENCHMARKS.md):
//  - scheduling overhead on chain 1000, fan-out 1->1000->1 (joined by a chain of adds), a tree of
//    1024 leaves and a layered 100x100 DAG (two random inputs per node, fixed seed), all adds of
//    1-element tensors: the sequential executor against the same eager calls in a loop; the
//    parallel executor at 1 and 2 threads against oneTBB's flow graph running the same DAG with
//    the same node body (the eager call: inference, allocation, kernel);
//  - session::run of a 1-node runtime graph against the same graph as a static session;
//  - an eager call through the kernel table, call<float, dispatched<>>, against call<float>;
//  - fan-out of 64 matmuls of ~50 us each: 2 threads against 1;
//  - CPU time of an idle session with a started pool over 1 s.
#include <typeflow/typeflow.hpp>
#include <typeflow/registry/extern_kernels.hpp>  // the kernel tables are compiled once, in test/kernels/

#include <sys/resource.h>

#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include "../test/unit/allocation_counter.hpp"
#include "harness.hpp"

namespace tf = typeflow;
using tf::bench::keep;

namespace {

using rgraph = tf::runtime_graph<tf::cpu>;
using rsession = tf::runtime_session<tf::cpu>;

struct dag {
  std::string name;
  tf::graph_def def;
  std::vector<std::string> targets;
  // For the baselines: node i = add(in[i].first, in[i].second); -1 is the input x.
  std::vector<std::pair<int, int>> in;
};

std::string node_name(int i) { return i < 0 ? "x" : "n" + std::to_string(i); }

dag make_dag(const std::string& name, const std::vector<std::pair<int, int>>& in, std::vector<int> targets) {
  dag d{name, {}, {}, in};
  tf::node_def x{"x", "placeholder", {}, {}, "", 0};
  x.attrs.set("dtype", tf::dtype::f32);
  x.attrs.set("shape", tf::shape{1});
  d.def.nodes.push_back(x);
  for (std::size_t i = 0; i < in.size(); ++i)
    d.def.nodes.push_back({node_name(static_cast<int>(i)), "add", {node_name(in[i].first), node_name(in[i].second)}, {}, "", 0});
  for (int t : targets) d.targets.push_back(node_name(t));
  return d;
}

std::vector<dag> dags() {
  std::vector<dag> out;
  {  // chain 1000
    std::vector<std::pair<int, int>> in;
    for (int i = 0; i < 1000; ++i) in.push_back({i - 1, -1});
    out.push_back(make_dag("chain 1000", in, {999}));
  }
  {  // fan-out 1 -> 1000 -> 1
    std::vector<std::pair<int, int>> in;
    for (int i = 0; i < 1000; ++i) in.push_back({-1, -1});
    in.push_back({0, 1});
    for (int i = 2; i < 1000; ++i) in.push_back({static_cast<int>(in.size()) - 1, i});
    out.push_back(make_dag("fan-out 1-1000-1", in, {static_cast<int>(in.size()) - 1}));
  }
  {  // binary tree of 1024 leaves
    std::vector<std::pair<int, int>> in;
    std::vector<int> level;
    for (int i = 0; i < 1024; ++i) {
      level.push_back(static_cast<int>(in.size()));
      in.push_back({-1, -1});
    }
    while (level.size() > 1) {
      std::vector<int> next;
      for (std::size_t i = 0; i < level.size(); i += 2) {
        next.push_back(static_cast<int>(in.size()));
        in.push_back({level[i], level[i + 1]});
      }
      level = next;
    }
    out.push_back(make_dag("tree of 1024 leaves", in, {level[0]}));
  }
  {  // layered 100 x 100
    std::mt19937 rng(7);
    std::vector<std::pair<int, int>> in;
    for (int j = 0; j < 100; ++j) in.push_back({-1, -1});
    for (int layer = 1; layer < 100; ++layer)
      for (int j = 0; j < 100; ++j) {
        const int base = (layer - 1) * 100;
        in.push_back({base + static_cast<int>(rng() % 100), base + static_cast<int>(rng() % 100)});
      }
    std::vector<int> last;
    for (int j = 0; j < 100; ++j) last.push_back(99 * 100 + j);
    out.push_back(make_dag("layered 100x100", in, last));
  }
  return out;
}

// The eager call of one node's body.
tf::tensor add(tf::cpu& device, const tf::tensor& a, const tf::tensor& b) {
  auto r = tf::call<float>(device, tf::ops::add{}, a, b);
  if (!r.ok()) std::abort();
  return std::move(*r);
}

void bench_scheduling(tf::bench::harness& h) {
  tf::cpu device;
  const tf::tensor x = *tf::tensor::filled<float>(tf::shape{1}, 0.5f);
  for (const dag& d : dags()) {
    auto g = std::make_shared<const rgraph>(std::move(*rgraph::make(d.def)));
    const double nodes = static_cast<double>(d.in.size());
    const std::vector<std::pair<std::string, tf::tensor>> feeds{{"x", x}};

    // Sequential executor vs the same eager calls in topological order.
    rsession sequential(g, device, 0);
    std::vector<tf::tensor> values(d.in.size());
    auto by_hand = [&] {
      for (std::size_t i = 0; i < d.in.size(); ++i)
        values[i] = add(device, d.in[i].first < 0 ? x : values[d.in[i].first], d.in[i].second < 0 ? x : values[d.in[i].second]);
      keep(values);
    };
    auto run_sequential = [&] { keep(sequential.run(feeds, {}, d.targets)); };
    h.compare("runtime sequential, " + d.name, "eager calls in a loop", run_sequential, by_hand, 11, 0.3, "ns/node", nodes);

    // Parallel executor vs oneTBB's flow graph, same bodies, 1 and 2 threads.
    for (int threads : {1, 2}) {
      rsession parallel(g, device, threads);
      tbb::task_arena arena(threads);
      tbb::flow::graph fg;
      std::vector<tf::tensor> out(d.in.size());
      tbb::flow::broadcast_node<tbb::flow::continue_msg> start(fg);
      std::vector<std::unique_ptr<tbb::flow::continue_node<tbb::flow::continue_msg>>> fnodes;
      for (std::size_t i = 0; i < d.in.size(); ++i) {
        const auto [a, b] = d.in[i];
        fnodes.push_back(std::make_unique<tbb::flow::continue_node<tbb::flow::continue_msg>>(
            fg, [&, i, a, b](const tbb::flow::continue_msg&) { out[i] = add(device, a < 0 ? x : out[a], b < 0 ? x : out[b]); }));
      }
      for (std::size_t i = 0; i < d.in.size(); ++i) {
        const auto [a, b] = d.in[i];
        if (a < 0 && b < 0) tbb::flow::make_edge(start, *fnodes[i]);
        if (a >= 0) tbb::flow::make_edge(*fnodes[a], *fnodes[i]);
        if (b >= 0 && b != a) tbb::flow::make_edge(*fnodes[b], *fnodes[i]);
      }
      auto run_tbb = [&] {
        arena.execute([&] {
          start.try_put(tbb::flow::continue_msg());
          fg.wait_for_all();
        });
        keep(out);
      };
      auto run_parallel = [&] { keep(parallel.run(feeds, {}, d.targets)); };
      h.compare("runtime parallel " + std::to_string(threads) + "t, " + d.name, "oneTBB flow graph", run_parallel, run_tbb,
                11, 0.3, "ns/node", nodes);
    }
  }
}

void bench_session_run(tf::bench::harness& h) {
  tf::cpu device;
  const tf::tensor x = *tf::tensor::filled<float>(tf::shape{1}, 0.5f);
  auto def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[1]\ny = neg(x)\n");
  auto g = std::make_shared<const rgraph>(std::move(*rgraph::make(std::move(*def))));
  rsession s(g, device);
  constexpr auto sx = tf::input<"x", float, tf::static_shape<1>>;
  constexpr auto sy = -sx;
  tf::session ss(tf::graph(sy), device);
  const std::vector<std::pair<std::string, tf::tensor>> feeds{{"x", x}};
  const std::vector<std::string> fetches{"y"};
  h.compare("session::run, 1-node runtime graph", "static session::run", [&] { keep(s.run(feeds, fetches)); },
            [&] { keep(ss.run(tf::feed(sx, x), tf::fetch(sy))); }, 11, 0.3, "us");

  // An eager call through the dispatch table that extern_kernels.hpp points at (its entry looked up
  // once) against the kernel compiled here: what a unit of eager calls pays for not compiling it.
  const tf::tensor a = *tf::tensor::filled<float>(tf::shape{1}, 0.5f);
  constexpr int calls = 1000;
  h.compare("eager add, 1 element, call<float, dispatched<>>", "call<float>",
            [&] { for (int i = 0; i < calls; ++i) keep(tf::call<float, tf::dispatched<>>(device, tf::ops::add{}, a, x)); },
            [&] { for (int i = 0; i < calls; ++i) keep(tf::call<float>(device, tf::ops::add{}, a, x)); }, 11, 0.3,
            "ns/call", calls);

  // Heap allocations per step: the runtime session allocates each output and its step state;
  // the static session allocates nothing.
  const long runtime_allocs = tf::test::allocations_per_calls(100, [&] { keep(s.run(feeds, fetches)); });
  const long static_allocs = tf::test::allocations_per_calls(100, [&] { keep(ss.run(tf::feed(sx, x), tf::fetch(sy))); });
  h.add({"runtime", "allocations per step, 1-node graph", "allocations per step", "n", "static session",
         static_cast<double>(runtime_allocs) / 100, static_cast<double>(static_allocs) / 100,
         static_allocs == 0 ? 0.0 : static_cast<double>(runtime_allocs) / static_cast<double>(static_allocs)});
}

void bench_speedup(tf::bench::harness& h) {
  tf::cpu device;
  std::string text = "x = placeholder() dtype=f32 shape=shape[96, 96]\n";
  std::vector<std::string> targets;
  for (int i = 0; i < 64; ++i) {
    text += "m" + std::to_string(i) + " = matmul(x, x)\n";
    targets.push_back("m" + std::to_string(i));
  }
  auto g = std::make_shared<const rgraph>(std::move(*rgraph::make(std::move(*tf::parse_graph(text)))));
  const tf::tensor x = *tf::tensor::filled<float>(tf::shape{96, 96}, 0.01f);
  const std::vector<std::pair<std::string, tf::tensor>> feeds{{"x", x}};
  rsession one(g, device, 1), two(g, device, 2);
  auto r = h.compare("fan-out of 64 matmuls 96^3, 2 threads", "the same on 1 thread", [&] { keep(two.run(feeds, {}, targets)); },
                     [&] { keep(one.run(feeds, {}, targets)); }, 11, 0.5);
  std::printf("  (speed-up %.2fx)\n", 1 / r.ratio);

  // CPU used by the process while a session with a started pool sits idle for 1 s.
  auto cpu_seconds = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  keep(two.run(feeds, {}, targets));
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = cpu_seconds() - before;
  h.add({"runtime", "idle session with 2 pool threads, 1 s", "cpu time", "ms", "1 s of one core", 1e3 * used, 1e3, used});
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("runtime", argc, argv);
  bench_session_run(h);
  bench_speedup(h);
  bench_scheduling(h);
  return 0;
}
