// SPDX-License-Identifier: Apache-2.0
// Device benchmarks (BENCHMARKS.md, "Devices"), on two host devices (CPU:0 a `cpu`, CPU:1 a
// `thread_pool`), so every figure is the cost of typeflow's own machinery: placement, partitions,
// _send/_recv through a rendezvous, the executor barrier, and copies between policies.
//   chain of 256 neg on 1-element tensors, every edge crossing devices
//                                                   vs the same chain on CPU:0 of the same set
//   chain of 256 neg on a device set of one device  vs runtime_session<cpu> (no rendezvous)
//   tf::copy 64 MiB CPU:0 -> CPU:1                  vs new float[] + std::memcpy of 64 MiB
//   MLP 784-1024-1024-10, batch 64, layer 1 on CPU:0 and layers 2-3 on CPU:1
//                                                   vs the same graph on CPU:0
// and the same for static graphs on a device_group(cpu, thread_pool), where a transfer is a
// compile-time node (tf::on<D>):
//   static chain of 64 neg, each node on the other device than its input
//                                                   vs the chain with no placement (unfused both)
//   static MLP batch 64, layers 2-3 on<thread_pool> vs the MLP with no placement
// No GPU here: a GPU's transfers are the CUDA issue's benchmarks.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <typeflow/typeflow.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include "harness.hpp"

namespace tf = typeflow;
using tf::bench::keep;

namespace {

using host_devices = tf::devices<tf::cpu, tf::thread_pool>;
using set_session = tf::runtime_session<host_devices>;
using feeds_type = std::vector<std::pair<std::string, tf::tensor>>;

std::unique_ptr<set_session> make_session(const std::string& text, tf::device_set<tf::cpu, tf::thread_pool>& set) {
  auto def = tf::parse_graph(text);
  if (!def.ok()) {
    std::fprintf(stderr, "bench_devices: %s\n", std::string(def.status().message()).c_str());
    std::exit(1);
  }
  auto s = set_session::make(std::move(*def), set);
  if (!s.ok()) {
    std::fprintf(stderr, "bench_devices: %s\n", std::string(s.status().message()).c_str());
    std::exit(1);
  }
  return std::move(*s);
}

// The two results must be bitwise equal: a benchmark of a wrong answer measures nothing.
void require_same(const tf::result<std::vector<tf::tensor>>& a, const tf::result<std::vector<tf::tensor>>& b,
                  const char* what) {
  if (!a.ok() || !b.ok() || a->size() != b->size() ||
      std::memcmp((*a)[0].data(), (*b)[0].data(), (*a)[0].bytes()) != 0) {
    std::fprintf(stderr, "bench_devices: %s: the two runs disagree or failed\n", what);
    std::exit(1);
  }
}

// y0 = neg(x), y1 = neg(y0), ...: node k on `device_of(k)`.
template <class DeviceOf>
std::string neg_chain(int n, DeviceOf device_of) {
  std::string text = "x = placeholder() dtype=f32 shape=shape[1] @CPU:0\n";
  for (int k = 0; k < n; ++k)
    text += "y" + std::to_string(k) + " = neg(" + (k ? "y" + std::to_string(k - 1) : std::string("x")) + ") @" +
            device_of(k) + "\n";
  return text;
}

void bench_transfers(tf::bench::harness& h, tf::device_set<tf::cpu, tf::thread_pool>& set, tf::cpu& cpu) {
  constexpr int n = 256;
  const std::string last = "y" + std::to_string(n - 1);
  auto crossing = make_session(neg_chain(n, [](int k) { return k % 2 ? "CPU:1" : "CPU:0"; }), set);
  auto local = make_session(neg_chain(n, [](int) { return "CPU:0"; }), set);
  const feeds_type feeds{{"x", *tf::tensor::filled<float>(tf::shape{1}, 0.5f)}};
  const std::vector<std::string> fetches{last};
  require_same(crossing->run(feeds, fetches), local->run(feeds, fetches), "crossing chain");
  auto r = h.compare("chain of 256 neg, each edge across", "the chain on CPU:0 of the set",
                     [&] { keep(crossing->run(feeds, fetches)); }, [&] { keep(local->run(feeds, fetches)); }, 11, 0.5,
                     "ns/node", n);
  std::printf("  (a _send/_recv pair between two host devices: %.0f ns more than a local edge)\n",
              r.typeflow - r.baseline);

  // What a device set costs when everything is on one device: the same chain on runtime_session<cpu>.
  auto def = tf::parse_graph(neg_chain(n, [](int) { return "CPU:0"; }));
  auto g = tf::runtime_graph<tf::cpu>::make(std::move(*def));
  tf::runtime_session<tf::cpu> plain(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g)), cpu);
  require_same(local->run(feeds, fetches), plain.run(feeds, fetches), "one-device chain");
  h.compare("chain of 256 neg, device set of 2", "runtime_session<cpu>", [&] { keep(local->run(feeds, fetches)); },
            [&] { keep(plain.run(feeds, fetches)); }, 11, 0.5, "ns/node", n);
}

void bench_copy(tf::bench::harness& h, tf::cpu& c0, tf::thread_pool& c1) {
  const std::int64_t floats = std::int64_t{16} << 20;  // 64 MiB
  const tf::tensor src = *tf::tensor::filled<float>(tf::shape{floats}, 1.5f);
  // Both sides allocate their destination each time (and fault its pages in), as tf::copy does.
  auto r = h.compare("tf::copy 64 MiB CPU:0 -> CPU:1", "new float[] + std::memcpy", [&] { keep(tf::copy(src, c0, c1)); },
                     [&] {
                       std::unique_ptr<float[]> dst(new float[static_cast<std::size_t>(floats)]);
                       std::memcpy(dst.get(), src.data(), src.bytes());
                       keep(dst);
                     },
                     11, 0.5);
  std::printf("  (%.1f GB/s against %.1f GB/s)\n", static_cast<double>(src.bytes()) / (r.typeflow * 1e-3) / 1e9,
              static_cast<double>(src.bytes()) / (r.baseline * 1e-3) / 1e9);
}

std::string mlp(bool split) {
  const std::string second = split ? "CPU:1" : "CPU:0";
  return "x = placeholder() dtype=f32 shape=shape[64, 784] @CPU:0\n"
         "w1 = placeholder() dtype=f32 shape=shape[784, 1024] @CPU:0\n"
         "b1 = placeholder() dtype=f32 shape=shape[1024] @CPU:0\n"
         "w2 = placeholder() dtype=f32 shape=shape[1024, 1024] @CPU:0\n"
         "b2 = placeholder() dtype=f32 shape=shape[1024] @CPU:0\n"
         "w3 = placeholder() dtype=f32 shape=shape[1024, 10] @CPU:0\n"
         "b3 = placeholder() dtype=f32 shape=shape[10] @CPU:0\n"
         "m1 = matmul(x, w1) @CPU:0\n"
         "a1 = bias_add(m1, b1) @CPU:0\n"
         "h1 = relu(a1) @CPU:0\n"
         "m2 = matmul(h1, w2) @" + second + "\n"
         "a2 = bias_add(m2, b2) @" + second + "\n"
         "h2 = relu(a2) @" + second + "\n"
         "m3 = matmul(h2, w3) @" + second + "\n"
         "a3 = bias_add(m3, b3) @" + second + "\n"
         "y = softmax(a3) @" + second + "\n";
}

void bench_split_mlp(tf::bench::harness& h, tf::device_set<tf::cpu, tf::thread_pool>& set) {
  auto split = make_session(mlp(true), set);
  auto local = make_session(mlp(false), set);
  feeds_type feeds;
  const std::pair<const char*, tf::shape> inputs[] = {{"x", tf::shape{64, 784}},    {"w1", tf::shape{784, 1024}},
                                                      {"b1", tf::shape{1024}},      {"w2", tf::shape{1024, 1024}},
                                                      {"b2", tf::shape{1024}},      {"w3", tf::shape{1024, 10}},
                                                      {"b3", tf::shape{10}}};
  unsigned seed = 7;
  for (const auto& [name, s] : inputs) {
    auto t = *tf::tensor::allocate(tf::dtype::f32, s);
    for (float& v : *t.values<float>()) v = static_cast<float>((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 2550.f - 0.05f;
    feeds.emplace_back(name, t);
  }
  const std::vector<std::string> fetches{"y"};
  require_same(split->run(feeds, fetches), local->run(feeds, fetches), "split MLP");
  h.compare("MLP batch 64, layers 2-3 on CPU:1", "the MLP on CPU:0", [&] { keep(split->run(feeds, fetches)); },
            [&] { keep(local->run(feeds, fetches)); }, 11, 0.5);
}

// Static graphs: neg N times, node k on thread_pool when k is odd, on cpu when even.
template <int N, class X>
constexpr auto crossing_chain(X in) {
  if constexpr (N == 0) return in;
  else if constexpr (N % 2) return crossing_chain<N - 1>(tf::on<tf::thread_pool>(tf::neg(in)));
  else return crossing_chain<N - 1>(tf::on<tf::cpu>(tf::neg(in)));
}
template <int N, class X>
constexpr auto local_chain(X in) {
  if constexpr (N == 0) return in;
  else return local_chain<N - 1>(tf::neg(in));
}

template <class A, class B>
void require_same_static(const A& a, const B& b, const char* what) {
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "bench_devices: %s: a run failed\n", what);
    std::exit(1);
  }
  const tf::tensor& x = std::get<0>(*a);
  const tf::tensor& y = std::get<0>(*b);
  if (x.bytes() != y.bytes() || std::memcmp(x.data(), y.data(), x.bytes()) != 0) {
    std::fprintf(stderr, "bench_devices: %s: the two runs disagree\n", what);
    std::exit(1);
  }
}

void bench_static(tf::bench::harness& h, tf::cpu& c0, tf::thread_pool& c1) {
  using tf::static_shape;
  constexpr int n = 64;
  constexpr auto x = tf::input<"x", float, static_shape<1>>;
  constexpr auto crossing = crossing_chain<n>(x);
  constexpr auto local = local_chain<n>(x);
  using crossing_graph = decltype(tf::graph(crossing));
  using local_graph = decltype(tf::graph(local));
  using group = tf::device_group<tf::cpu, tf::thread_pool>;
  tf::session<crossing_graph, group, tf::default_registry, false> across(crossing_graph{}, group(c0, c1));
  tf::session<local_graph, tf::cpu, tf::default_registry, false> alone(local_graph{}, c0);
  const tf::tensor xt = *tf::tensor::filled<float>(tf::shape{1}, 0.5f);
  require_same_static(across.run(tf::feed(x, xt), tf::fetch(crossing)), alone.run(tf::feed(x, xt), tf::fetch(local)),
                      "static chain");
  auto r = h.compare("static chain of 64 neg, each edge across", "the chain with no placement",
                     [&] { keep(across.run(tf::feed(x, xt), tf::fetch(crossing))); },
                     [&] { keep(alone.run(tf::feed(x, xt), tf::fetch(local))); }, 11, 0.5, "ns/node", n);
  std::printf("  (a static transfer between two host devices: %.1f ns more than a local edge)\n",
              r.typeflow - r.baseline);

  constexpr auto in = tf::input<"x", float, static_shape<64, 784>>;
  constexpr auto w1 = tf::variable<"w1", float, static_shape<784, 1024>>;
  constexpr auto b1 = tf::variable<"b1", float, static_shape<1024>>;
  constexpr auto w2 = tf::variable<"w2", float, static_shape<1024, 1024>>;
  constexpr auto b2 = tf::variable<"b2", float, static_shape<1024>>;
  constexpr auto w3 = tf::variable<"w3", float, static_shape<1024, 10>>;
  constexpr auto b3 = tf::variable<"b3", float, static_shape<10>>;
  constexpr auto h1 = tf::relu(tf::bias_add(tf::matmul(in, w1), b1));
  constexpr auto split_y =
      tf::softmax(tf::bias_add(tf::matmul(tf::relu(tf::on<tf::thread_pool>(tf::bias_add(tf::matmul(h1, w2), b2))), w3), b3));
  constexpr auto local_y = tf::softmax(tf::bias_add(tf::matmul(tf::relu(tf::bias_add(tf::matmul(h1, w2), b2)), w3), b3));
  using split_graph = decltype(tf::graph(split_y));
  using local_mlp = decltype(tf::graph(local_y));
  tf::session split(split_graph{}, group(c0, c1));
  tf::session one(local_mlp{}, c0);
  unsigned seed = 7;
  auto fill = [&](tf::shape s) {
    auto t = *tf::tensor::allocate(tf::dtype::f32, s);
    for (float& v : *t.values<float>()) v = static_cast<float>((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 2550.f - 0.05f;
    return t;
  };
  const tf::tensor xt64 = fill(tf::shape{64, 784});
  auto init = [&](auto& s) {
    const tf::tensor ws[] = {fill(tf::shape{784, 1024}), fill(tf::shape{1024}), fill(tf::shape{1024, 1024}),
                             fill(tf::shape{1024}), fill(tf::shape{1024, 10}), fill(tf::shape{10})};
    seed = 11;  // the same weights in both sessions
    if (!s.initialize(w1, ws[0]).ok() || !s.initialize(b1, ws[1]).ok() || !s.initialize(w2, ws[2]).ok() ||
        !s.initialize(b2, ws[3]).ok() || !s.initialize(w3, ws[4]).ok() || !s.initialize(b3, ws[5]).ok()) {
      std::fprintf(stderr, "bench_devices: static MLP: initializing failed\n");
      std::exit(1);
    }
  };
  seed = 11;
  init(split);
  init(one);
  require_same_static(split.run(tf::feed(in, xt64), tf::fetch(split_y)), one.run(tf::feed(in, xt64), tf::fetch(local_y)),
                      "static split MLP");
  h.compare("static MLP batch 64, layers 2-3 on thread_pool", "the static MLP on cpu",
            [&] { keep(split.run(tf::feed(in, xt64), tf::fetch(split_y))); },
            [&] { keep(one.run(tf::feed(in, xt64), tf::fetch(local_y))); }, 11, 0.5);
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("devices", argc, argv);
  tf::cpu c0;
  tf::thread_pool c1(1);
  tf::device_set<tf::cpu, tf::thread_pool> set;
  set.add(c0);
  set.add(c1);
  bench_transfers(h, set, c0);
  bench_copy(h, c0, c1);
  bench_split_mlp(h, set);
  bench_static(h, c0, c1);
  return 0;
}
