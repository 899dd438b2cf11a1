// SPDX-License-Identifier: Apache-2.0
// A 12-layer transformer encoder (hidden 256, 4 heads, feed-forward 1024, sequence 128; BERT's
// layer: attention, residual, layer norm, GELU) written as one static graph with variables, by a
// build function (tf::graph_builder: a loop over the layers, models::transformer<C>::build).
//   transformer [BATCH] [--threads N | --parallel N]
// Runs it, checks it against the same network written by hand against Eigen in this program and
// against the same graph run as a runtime graph (to_graph_def, then runtime_session), and prints the
// differences and the median latency of the static session and of the Eigen version. The static
// session runs the kernels of the program's kernel table (tf::dispatched<>), the runtime graph's too,
// compiled once in default_kernels (the benchmarks' and tests' test/kernels/). --threads N
// gives the kernels N threads (a thread_pool device); --parallel N runs independent steps on N
// threads too (the static parallel executor). Exits 1 when they disagree. Built with
// -DTYPEFLOW_TRANSFORMER_SMALL it is 2 layers of hidden 64 over 16 tokens (what scripts/test runs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "transformer.hpp"

#include <typeflow/registry/extern_kernels.hpp>  // the kernels of runtime graphs: compiled once, in default_kernels

namespace tf = typeflow;

namespace {

#ifdef TYPEFLOW_TRANSFORMER_SMALL
using model = models::transformer<models::transformer_config{.layers = 2, .hidden = 64, .heads = 4, .ffn = 128, .sequence = 16}>;
#else
using model = models::transformer<models::transformer_config{.layers = 12, .hidden = 256, .heads = 4, .ffn = 1024, .sequence = 128}>;
#endif

// The median of `runs` timings of fn, in microseconds.
template <class Fn>
double median_micros(int runs, Fn fn) {
  std::vector<double> micros;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(micros.begin(), micros.end());
  return micros[micros.size() / 2];
}

template <class Device, class... Options>
int run(Device& device, std::int64_t batch, Options... options) {
  const model::weights w;
  using graph_type = model::built::graph;
  // Its kernels come from the program's kernel table, as the runtime graph's below do
  // (tf::dispatched<>: registry/dispatched.hpp), so this file compiles none of their code; a fused
  // group's kernel is the graph's own and compiled here. parallel{n} among the options: the static
  // parallel executor.
  constexpr bool parallel = (std::is_same_v<Options, tf::parallel> || ...);
  tf::session<graph_type, Device, tf::dispatched<>, tf::fuses_by_default<Device>, true, parallel> s(graph_type{}, device,
                                                                                                   options...);
  if (auto st = model::initialize(s, w); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  const tf::tensor x = model::input(batch);
  tf::status failed;
  tf::tensor y;
  const double ours = median_micros(5, [&] {
    auto r = s.run(tf::feed(model::built::node<"x">, x), tf::fetch(model::built::output<0>));
    if (r.ok()) y = std::get<0>(*r).untyped();
    else failed = r.status();
  });
  if (!failed.ok()) {
    std::fprintf(stderr, "%s\n", failed.to_string().c_str());
    return 1;
  }
  // The Eigen version runs on a ThreadPoolDevice on either policy, so that the program compiles it
  // once: where the policy has none (`cpu`), a pool of one thread's, on which Eigen runs every
  // expression and the contraction on the calling thread (the contraction's sequential GEMM, as on
  // its DefaultDevice).
  constexpr bool has_pool = std::is_same_v<std::remove_cvref_t<decltype(device.eigen())>, Eigen::ThreadPoolDevice>;
  std::optional<tf::thread_pool> one_thread;
  if constexpr (!has_pool) one_thread.emplace(1);
  const Eigen::ThreadPoolDevice& eigen_device = [&]() -> const Eigen::ThreadPoolDevice& {
    if constexpr (has_pool) return device.eigen();
    else return one_thread->eigen();
  }();
  model::eigen_forward reference(batch);
  const double eigen = median_micros(5, [&] { reference(eigen_device, x, w); });
  const double eigen_diff = models::max_abs_diff(y, reference.out);

  // The same graph as a runtime graph: its variables are placeholders, fed with the same weights.
  auto def = tf::to_graph_def(graph_type{});
  if (!def.ok()) {
    std::fprintf(stderr, "%s\n", def.status().to_string().c_str());
    return 1;
  }
  const std::string output =
      tf::runtime_name_of<graph_type>(graph_type::position<std::remove_cvref_t<decltype(model::built::output<0>)>>());
  auto g = tf::runtime_graph<Device>::make(std::move(*def));
  if (!g.ok()) {
    std::fprintf(stderr, "%s\n", g.status().to_string().c_str());
    return 1;
  }
  tf::runtime_session<Device> rs(std::make_shared<const tf::runtime_graph<Device>>(std::move(*g)), device);
  auto ry = rs.run(model::runtime_feeds(x, w), {output});
  if (!ry.ok()) {
    std::fprintf(stderr, "%s\n", ry.status().to_string().c_str());
    return 1;
  }
  const double runtime_diff = models::max_abs_diff(y, (*ry)[0]);

  const auto v = y.unchecked_values<const float>();
  std::printf("%s: %d layers, hidden %lld, %lld heads, feed-forward %lld, %lld tokens, batch %lld, %d thread%s\n",
              model::name, model::layers, static_cast<long long>(model::H), static_cast<long long>(model::A),
              static_cast<long long>(model::F), static_cast<long long>(model::S), static_cast<long long>(batch),
              device.num_threads(), device.num_threads() == 1 ? "" : "s");
  std::printf("y[0, 0, 0:4] = %.5f %.5f %.5f %.5f\n", v[0], v[1], v[2], v[3]);
  std::printf("max |typeflow - Eigen| = %.3g\nmax |static - runtime graph| = %.3g\n", eigen_diff, runtime_diff);
  std::printf("latency: %.1f us static session, %.1f us hand-written Eigen (medians of 5 runs)\n", ours, eigen);
  return eigen_diff <= 1e-3 && runtime_diff <= 1e-3 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 1;
  int threads = 1;
  bool parallel = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--threads" || a == "--parallel") && i + 1 < argc) {
      parallel = a == "--parallel";
      threads = std::atoi(argv[++i]);
    }
    else if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos) batch = std::atoll(a.c_str());
    else {
      std::fprintf(stderr, "usage: transformer [BATCH] [--threads N | --parallel N]\n");
      return 2;
    }
  }
  if (batch < 1 || threads < 1) {
    std::fprintf(stderr, "transformer: BATCH and N must be at least 1\n");
    return 2;
  }
  if (threads == 1) {
    tf::cpu device;
    return run(device, batch);
  }
  tf::thread_pool device(threads);
  return parallel ? run(device, batch, tf::parallel{threads}) : run(device, batch);
}
