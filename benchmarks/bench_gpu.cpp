// SPDX-License-Identifier: Apache-2.0
// GPU benchmarks (BENCHMARKS.md, "GPU"), on GPU:0; without a GPU the binary says so and writes no
// records. Each case runs typeflow and its baseline alternately in one process:
//   fused 8-op chain (bench_fusion's) on 256M floats: the NVRTC kernel
//                                                  vs a device-to-device copy of one operand
//                                                     (and the bandwidth of each: 3 and 2 passes)
//   the same chain unfused: 8 kernels              vs the fused kernel
//   matmul 4096^3 f32 exact, an eager tf::call     vs the cuBLASLt product of the shim alone,
//                                                     into a buffer made once
//   conv2d 3x3 64->64 NHWC, 32x56x56, tf::call      vs the shim's cuDNN graph alone
//   MLP and CNN of examples/models.hpp, batch 1 and 64, a static session on cuda<0> (the input
//   copied in, the output copied out)               vs the same networks written directly against
//                                                     the shim (cuBLASLt with bias+ReLU epilogues,
//                                                     cuDNN with bias+ReLU fused, pooling, softmax),
//                                                     with the same copies
//   the same sessions run as CUDA graphs (tf::cuda_graph): one launch a run
//                                                  vs the static session step by step
//                                                  vs the shim's calls captured by hand into a CUDA
//                                                     graph and replayed, with the same copies
//   a chain of 100 small elementwise ops, unfused, a CUDA graph replayed
//                                                  vs the same session step by step (µs per node)
//   a loop of 1000 batches of the MLP (batch 64) fed from the host, as a CUDA graph: run_batches
//   (copies overlapped with compute)           vs run() batch after batch
//   MLP batch 64 in two sessions at once on one GPU, one paced (op idle time 100 us, Antman's op
//   queue): the throughput of each            vs each running alone
// benchmarks/peers/gpu_peers.py runs the MLP and CNN in PyTorch on the same GPU, weights and inputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <typeflow/cuda/dnn.hpp>
#include <typeflow/cuda/fused.hpp>
#include <typeflow/cuda/pool.hpp>
#include <typeflow/cuda/reduction.hpp>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/runtime/cuda_graph.hpp>
#include <typeflow/typeflow.hpp>

#include "../examples/models.hpp"
#include "harness.hpp"

namespace tf = typeflow;
namespace gpu = tf::gpu;
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

namespace {

// Stops the benchmark at a failed step: a figure from a failed run would be meaningless.
void check(const tf::status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "bench_gpu: %s: %s\n", what, s.to_string().c_str());
  std::exit(1);
}
template <class T>
T value(tf::result<T> r, const char* what) {
  check(r.status(), what);
  return std::move(r).value();
}

tf::tensor on_gpu(const tf::tensor& x, tf::cpu& host, tf::cuda<0>& g) { return value(tf::copy(x, host, g), "copy in"); }

// abs(minimum(relu(big * 1.5 + 0.5) * other - 1, 2)) * 0.25: bench_fusion's chain as a fused tree.
using namespace tf::fused;
using chain8 = binary<tf::ops::mul{},
                      unary<tf::ops::abs{},
                            binary<tf::ops::minimum{},
                                   binary<tf::ops::sub{},
                                          binary<tf::ops::mul{},
                                                 unary<tf::ops::relu{},
                                                       binary<tf::ops::add{},
                                                              binary<tf::ops::mul{}, leaf<0, leaf_layout::full>, constant<1.5>>,
                                                              constant<0.5>>>,
                                                 leaf<1, leaf_layout::full>>,
                                          constant<1.0>>,
                                   constant<2.0>>>,
                      constant<0.25>>;

void bench_elementwise(tf::bench::harness& h, tf::cpu& host, tf::cuda<0>& g) {
  const std::int64_t n = h.quick() ? (std::int64_t{1} << 24) : (std::int64_t{1} << 28);
  const std::string size = h.quick() ? "16M" : "256M";
  const tf::tensor big = value(g.allocate(tf::dtype::f32, tf::shape{n}), "allocate");
  const tf::tensor other = value(g.allocate(tf::dtype::f32, tf::shape{n}), "allocate");
  tf::tensor out = value(g.allocate(tf::dtype::f32, tf::shape{n}), "allocate");
  tf::tensor t1 = value(g.allocate(tf::dtype::f32, tf::shape{n}), "allocate");
  auto& s = g.streams().compute;
  check(gpu::fill(s, gpu::elem::f32, big.data(), n, 0.75), "fill");
  check(gpu::fill(s, gpu::elem::f32, other.data(), n, -1.25), "fill");
  const void* inputs[] = {big.data(), other.data()};
  const auto fused = [&] {
    check(gpu::fused_elementwise(s, {.program = tf::cuda_kernels::fused_program<chain8>, .type = gpu::elem::f32,
                                     .inputs = inputs, .out = out.data(), .size = n, .inner = n}),
          "fused chain");
    check(s.synchronize(), "synchronize");
  };
  const auto copy = [&] {
    check(gpu::copy_async(s, out.data(), big.data(), static_cast<std::size_t>(n) * 4, gpu::copy_kind::device_to_device), "copy");
    check(s.synchronize(), "synchronize");
  };
  const auto r = h.compare("fused 8-op chain, " + size + " f32", "device-to-device copy of one operand", fused, copy);
  // GB/s: the chain reads two operands and writes one, the copy reads one and writes one.
  const double bytes = static_cast<double>(n) * 4;
  tf::bench::record bw{"gpu", "fused 8-op chain bandwidth, " + size, "bandwidth", "GB/s", "device-to-device copy",
                       3 * bytes / (r.typeflow * 1e-3) / 1e9, 2 * bytes / (r.baseline * 1e-3) / 1e9};
  bw.ratio = bw.typeflow / bw.baseline;
  h.add(bw);

  // Unfused: one kernel per op, each a pass over memory.
  const std::int64_t dims[] = {n};
  tf::tensor k = value(g.allocate(tf::dtype::f32, tf::shape{}), "allocate");
  const auto with_scalar = [&](gpu::binary_op op, const void* a, double c, void* y) {
    check(gpu::fill(s, gpu::elem::f32, k.data(), 1, c), "fill");
    check(gpu::binary(s, {.op = op, .a = a, .a_dims = dims, .b = k.data(), .b_dims = {}, .out = y, .out_dims = dims}), "binary");
  };
  const auto unfused = [&] {
    with_scalar(gpu::binary_op::mul, big.data(), 1.5, t1.data());
    with_scalar(gpu::binary_op::add, t1.data(), 0.5, t1.data());
    check(gpu::unary(s, {.op = gpu::unary_op::relu, .x = t1.data(), .y = t1.data(), .size = n}), "relu");
    check(gpu::binary(s, {.op = gpu::binary_op::mul, .a = t1.data(), .a_dims = dims, .b = other.data(), .b_dims = dims,
                          .out = t1.data(), .out_dims = dims}),
          "mul");
    with_scalar(gpu::binary_op::sub, t1.data(), 1.0, t1.data());
    with_scalar(gpu::binary_op::minimum, t1.data(), 2.0, t1.data());
    check(gpu::unary(s, {.op = gpu::unary_op::abs, .x = t1.data(), .y = t1.data(), .size = n}), "abs");
    with_scalar(gpu::binary_op::mul, t1.data(), 0.25, out.data());
    check(s.synchronize(), "synchronize");
  };
  h.compare("8-op chain unfused, " + size + " f32", "the fused kernel", unfused, fused);
  (void)host;
}

void bench_products(tf::bench::harness& h, tf::cpu& host, tf::cuda<0>& g) {
  auto& streams = g.streams();
  {
    const std::int64_t m = h.quick() ? 1024 : 4096;
    const tf::tensor a = on_gpu(models::pattern(tf::shape{m, m}, 1.0, 0.1), host, g);
    const tf::tensor b = on_gpu(models::pattern(tf::shape{m, m}, 1.0, 0.1), host, g);
    tf::tensor c = value(g.allocate(tf::dtype::f32, tf::shape{m, m}), "allocate");
    const auto ours = [&] {
      tf::bench::keep(value(tf::call<float, registry>(g, tf::ops::matmul{}, a, b), "matmul"));
      check(g.synchronize(), "synchronize");
    };
    const auto direct = [&] {
      check(streams.matmul({.m = m, .n = m, .k = m, .a = a.data(), .b = b.data(), .out = c.data()}, "matmul"), "matmul");
      check(streams.compute.synchronize(), "synchronize");
    };
    const std::string size = std::to_string(m);
    h.compare("matmul " + size + "^3 f32 exact", "cuBLASLt through the shim alone", ours, direct);
  }
  {
    const std::int64_t batch = h.quick() ? 4 : 32;
    const tf::ops::conv2d op{.pad = tf::ops::padding::same};
    const tf::tensor x = on_gpu(models::pattern(tf::shape{batch, 56, 56, 64}, 1.0, 0.1), host, g);
    const tf::tensor f = on_gpu(models::pattern(tf::shape{3, 3, 64, 64}, 1.0, 0.1), host, g);
    tf::tensor y = value(g.allocate(tf::dtype::f32, tf::shape{batch, 56, 56, 64}), "allocate");
    const std::int64_t xd[4] = {batch, 56, 56, 64};
    gpu::conv2d_params p = tf::cuda_kernels::detail::conv2d_params_of(op, xd, f, 56, 56, gpu::elem::f32);
    p.x = x.data();
    p.y = y.data();
    const std::size_t bytes = value(streams.conv2d_workspace(p, "conv2d"), "workspace");
    tf::tensor ws = value(g.allocate(tf::dtype::u8, tf::shape{static_cast<std::int64_t>(bytes) + 1}), "allocate");
    const auto ours = [&] {
      tf::bench::keep(value(tf::call<float, registry>(g, op, x, f), "conv2d"));
      check(g.synchronize(), "synchronize");
    };
    const auto direct = [&] {
      check(streams.conv2d(p, ws.data(), bytes, "conv2d"), "conv2d");
      check(streams.compute.synchronize(), "synchronize");
    };
    h.compare("conv2d 3x3 64->64 " + std::to_string(batch) + "x56x56 NHWC", "cuDNN through the shim alone", ours, direct);
  }
}

// The networks of examples/models.hpp on the GPU: a static session against the same layers called
// directly through the shim, both with the input copied in and the softmax copied out.
// A direct network's run: its input copied into d.x, `layers` (from x into z), z's softmax copied
// out, on the compute stream.
template <class Direct, class Layers>
const tf::tensor& with_copies(Direct& d, const tf::tensor& input, Layers&& layers) {
  auto& s = d.g.streams().compute;
  check(gpu::copy_async(s, d.x.data(), input.data(), input.bytes(), gpu::copy_kind::host_to_device), "copy in");
  layers();
  check(gpu::copy_async(s, d.out.data(), d.z.data(), d.out.bytes(), gpu::copy_kind::device_to_host), "copy out");
  check(s.synchronize(), "synchronize");
  return d.out;
}

struct direct_mlp {
  tf::cuda<0>& g;
  tf::tensor w1, b1, w2, b2, w3, b3, x, h1, h2, z;
  tf::tensor out;
  std::int64_t batch;
  direct_mlp(tf::cuda<0>& device, tf::cpu& host, const models::mlp::weights& w, std::int64_t n)
      : g(device), w1(on_gpu(w.w1, host, g)), b1(on_gpu(w.b1, host, g)), w2(on_gpu(w.w2, host, g)),
        b2(on_gpu(w.b2, host, g)), w3(on_gpu(w.w3, host, g)), b3(on_gpu(w.b3, host, g)),
        x(value(g.allocate(tf::dtype::f32, tf::shape{n, 784}), "allocate")),
        h1(value(g.allocate(tf::dtype::f32, tf::shape{n, 1024}), "allocate")),
        h2(value(g.allocate(tf::dtype::f32, tf::shape{n, 1024}), "allocate")),
        z(value(g.allocate(tf::dtype::f32, tf::shape{n, 10}), "allocate")),
        out(value(tf::tensor::allocate(tf::dtype::f32, tf::shape{n, 10}), "allocate")), batch(n) {}
  const tf::tensor& operator()(const tf::tensor& input) {
    return with_copies(*this, input, [&] { compute(); });
  }
  // The layers alone, from x into z, on the compute stream (what direct_graph captures).
  void compute() {
    auto& st = g.streams();
    const auto dense = [&](const tf::tensor& a, const tf::tensor& w, const tf::tensor& b, tf::tensor& y, gpu::epilogue post) {
      check(st.matmul({.m = batch, .n = w.dim(1), .k = w.dim(0), .a = a.data(), .b = w.data(), .out = y.data(),
                       .bias = b.data(), .post = post},
                      "matmul"),
            "matmul");
    };
    dense(x, w1, b1, h1, gpu::epilogue::bias_relu);
    dense(h1, w2, b2, h2, gpu::epilogue::bias_relu);
    dense(h2, w3, b3, z, gpu::epilogue::bias);
    const std::int64_t dims[] = {batch, 10};
    check(gpu::softmax(st.compute, {.x = z.data(), .x_dims = dims, .y = z.data()}), "softmax");
  }
};

struct direct_cnn {
  tf::cuda<0>& g;
  tf::tensor k1, c1, k2, c2, k3, c3, w4, b4, w5, b5, x, a1, a2, p2, a3, p3, d4, z, workspace;
  tf::tensor out;
  std::int64_t batch;
  std::size_t workspace_bytes = 0;
  gpu::conv2d_params conv1, conv2, conv3;

  direct_cnn(tf::cuda<0>& device, tf::cpu& host, const models::cnn::weights& w, std::int64_t n)
      : g(device), k1(on_gpu(w.k1, host, g)), c1(on_gpu(w.c1, host, g)), k2(on_gpu(w.k2, host, g)),
        c2(on_gpu(w.c2, host, g)), k3(on_gpu(w.k3, host, g)), c3(on_gpu(w.c3, host, g)), w4(on_gpu(w.w4, host, g)),
        b4(on_gpu(w.b4, host, g)), w5(on_gpu(w.w5, host, g)), b5(on_gpu(w.b5, host, g)),
        x(make({n, 28, 28, 1})), a1(make({n, 28, 28, 32})), a2(make({n, 28, 28, 64})), p2(make({n, 14, 14, 64})),
        a3(make({n, 14, 14, 64})), p3(make({n, 7, 7, 64})), d4(make({n, 128})), z(make({n, 10})),
        out(value(tf::tensor::allocate(tf::dtype::f32, tf::shape{n, 10}), "allocate")), batch(n) {
    const tf::ops::conv2d same{.pad = tf::ops::padding::same};
    const auto conv = [&](const tf::tensor& in, const tf::tensor& k, const tf::tensor& b, tf::tensor& y) {
      const std::int64_t d[4] = {in.dim(0), in.dim(1), in.dim(2), in.dim(3)};
      gpu::conv2d_params p = tf::cuda_kernels::detail::conv2d_params_of(same, d, k, d[1], d[2], gpu::elem::f32);
      p.x = in.data();
      p.y = y.data();
      p.bias = b.data();
      p.post = gpu::conv_epilogue::bias_relu;
      workspace_bytes = std::max(workspace_bytes, value(g.streams().conv2d_workspace(p, "conv2d"), "workspace"));
      return p;
    };
    conv1 = conv(x, k1, c1, a1);
    conv2 = conv(a1, k2, c2, a2);
    conv3 = conv(p2, k3, c3, a3);
    workspace = make({static_cast<std::int64_t>(workspace_bytes) + 1});
  }
  tf::tensor make(std::initializer_list<std::int64_t> dims) {
    return value(g.allocate(dims.size() == 1 ? tf::dtype::u8 : tf::dtype::f32, *tf::shape::from_span(std::vector<std::int64_t>(dims))),
                 "allocate");
  }
  gpu::pool_params pool(const tf::tensor& in, tf::tensor& y) const {
    const gpu::pool_axis h{.in = in.dim(1), .out = y.dim(1), .size = 2, .stride = 2, .padded_end = in.dim(1)};
    const gpu::pool_axis w{.in = in.dim(2), .out = y.dim(2), .size = 2, .stride = 2, .padded_end = in.dim(2)};
    return {.batch = batch, .channels = in.dim(3), .h = h, .w = w, .x = in.data(), .y = y.data()};
  }
  const tf::tensor& operator()(const tf::tensor& input) {
    return with_copies(*this, input, [&] { compute(); });
  }
  // The layers alone, from x into z, on the compute stream (what direct_graph captures).
  void compute() {
    auto& st = g.streams();
    for (const gpu::conv2d_params* p : {&conv1, &conv2}) check(st.conv2d(*p, workspace.data(), workspace_bytes, "conv2d"), "conv2d");
    check(gpu::pool2d(st.compute, pool(a2, p2)), "pool");
    check(st.conv2d(conv3, workspace.data(), workspace_bytes, "conv2d"), "conv2d");
    check(gpu::pool2d(st.compute, pool(a3, p3)), "pool");
    check(st.matmul({.m = batch, .n = 128, .k = 3136, .a = p3.data(), .b = w4.data(), .out = d4.data(), .bias = b4.data(),
                     .post = gpu::epilogue::bias_relu},
                    "matmul"),
          "matmul");
    check(st.matmul({.m = batch, .n = 10, .k = 128, .a = d4.data(), .b = w5.data(), .out = z.data(), .bias = b5.data(),
                     .post = gpu::epilogue::bias},
                    "matmul"),
          "matmul");
    const std::int64_t dims[] = {batch, 10};
    check(gpu::softmax(st.compute, {.x = z.data(), .x_dims = dims, .y = z.data()}), "softmax");
  }
};

// A hand-written network's layers captured by hand into a CUDA graph (after it has run once, which
// made cuBLASLt's algorithms and cuDNN's plans), replayed with the same copies in and out.
template <class Direct>
struct direct_graph {
  Direct& d;
  std::optional<gpu::graph_exec> exec;
  explicit direct_graph(Direct& direct) : d(direct) {
    auto& s = d.g.streams().compute;
    check(s.synchronize(), "synchronize");
    check(gpu::begin_capture(s), "begin capture");
    d.compute();
    gpu::captured_graph graph = value(gpu::end_capture(s), "end capture");
    exec.emplace(value(gpu::graph_exec::instantiate(graph), "instantiate"));
  }
  const tf::tensor& operator()(const tf::tensor& input) {
    return with_copies(d, input, [&] { check(exec->launch(d.g.streams().compute), "launch"); });
  }
};

template <class Model, class Direct>
void bench_network(tf::bench::harness& h, tf::cpu& host, tf::cuda<0>& g, std::int64_t batch) {
  const typename Model::weights w;
  using graph = typename Model::graph;
  tf::session<graph, tf::cuda<0>, registry> s(graph{}, g);
  check(Model::initialize(s, w), "initialize");
  Direct direct(g, host, w, batch);
  const tf::tensor x = Model::input(batch);
  tf::tensor y;
  const auto ours = [&] {
    auto r = s.run(tf::feed(Model::x, x), tf::fetch(Model::y));
    check(r.status(), "run");
    y = std::get<0>(*r).untyped();
  };
  ours();
  const tf::tensor& expected = direct(x);
  const auto a = y.unchecked_values<float>(), b = expected.unchecked_values<float>();
  double diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
  if (diff > 1e-4) {
    std::fprintf(stderr, "bench_gpu: %s batch %lld: typeflow and the direct network differ by %g\n", Model::name,
                 static_cast<long long>(batch), diff);
    std::exit(1);
  }
  h.compare(std::string(Model::name) + " batch " + std::to_string(batch) + ", static session", "the shim's calls, by hand",
            ours, [&] { tf::bench::keep(direct(x)); });

  // The same session replayed as a CUDA graph, against it step by step; its output must be the same.
  tf::cuda_graph_session<graph, tf::cuda<0>, registry> replayed(graph{}, g, tf::cuda_graph{});
  check(Model::initialize(replayed, w), "initialize");
  tf::tensor z;
  const auto replay = [&] {
    auto r = replayed.run(tf::feed(Model::x, x), tf::fetch(Model::y));
    check(r.status(), "replayed run");
    z = std::get<0>(*r).untyped();
  };
  replay();
  ours();
  if (std::memcmp(z.data(), y.data(), y.bytes()) != 0) {
    std::fprintf(stderr, "bench_gpu: %s batch %lld: the CUDA graph's output differs from the step-by-step run's\n",
                 Model::name, static_cast<long long>(batch));
    std::exit(1);
  }
  h.compare(std::string(Model::name) + " batch " + std::to_string(batch) + ", static session as a CUDA graph",
            "the static session, step by step", replay, ours);
  direct_graph<Direct> by_hand(direct);
  h.compare(std::string(Model::name) + " batch " + std::to_string(batch) + ", CUDA graph vs one by hand",
            "the shim's calls captured by hand", replay, [&] { tf::bench::keep(by_hand(x)); });
}

// 100 unfused elementwise ops on 256 floats: launch-bound. Each step alternates tanh and x - a.
template <int N, class E, class X>
constexpr auto small_chain(E e, X x) {
  if constexpr (N == 0) return e;
  else if constexpr (N % 2 == 0) return small_chain<N - 1>(tf::tanh(e), x);
  else return small_chain<N - 1>(e - x, x);
}

void bench_launches(tf::bench::harness& h, tf::cuda<0>& g) {
  constexpr int nodes = 100;
  constexpr auto x = tf::input<"x", float, tf::static_shape<256>>;
  constexpr auto y = small_chain<nodes>(x, x);
  using graph = decltype(tf::graph(y));
  tf::session<graph, tf::cuda<0>, registry, false> steps(graph{}, g);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry, false> replayed(graph{}, g, tf::cuda_graph{});
  const tf::tensor xt = models::pattern(tf::shape{256}, 1.0, 0.0);
  const auto eager = [&] { check(steps.run(tf::feed(x, xt), tf::fetch(y)).status(), "run"); };
  const auto replay = [&] { check(replayed.run(tf::feed(x, xt), tf::fetch(y)).status(), "replayed run"); };
  replay();
  const auto r = h.compare("chain of 100 small ops unfused, CUDA graph replayed", "the same session step by step",
                           replay, eager);
  tf::bench::record per_node{"gpu", "chain of 100 small ops unfused, per node", "per node", "us",
                             "step by step (stream launches)", r.typeflow * 1e3 / nodes, r.baseline * 1e3 / nodes};
  per_node.ratio = per_node.typeflow / per_node.baseline;
  h.add(per_node);
}

void bench_networks(tf::bench::harness& h, tf::cpu& host, tf::cuda<0>& g) {
  for (const std::int64_t batch : {1, 64}) {
    bench_network<models::mlp, direct_mlp>(h, host, g, batch);
    bench_network<models::cnn, direct_cnn>(h, host, g, batch);
  }
}

// Feeding a data set from the host: 1000 batches (100 with --quick) through run_batches, whose
// feed and fetch copies overlap the graphs, against run() called batch after batch.
void bench_feeding(tf::bench::harness& h, tf::cuda<0>& g) {
  using model = models::mlp;
  using graph = model::graph;
  const model::weights w;
  tf::cuda_graph_session<graph, tf::cuda<0>, registry> s(graph{}, g, tf::cuda_graph{});
  check(model::initialize(s, w), "initialize");
  const std::size_t n = h.quick() ? 100 : 1000;
  std::vector<tf::tensor> batches;
  for (std::size_t i = 0; i < 8; ++i) batches.push_back(models::pattern(tf::shape{64, 784}, 1.0, 0.1 * static_cast<double>(i)));
  const auto overlapped = [&] {
    check(s.run_batches(
              n, [&](std::size_t i) { return std::tuple(tf::feed(model::x, batches[i % batches.size()])); },
              [&](std::size_t, auto fetched) { tf::bench::keep(fetched); }, tf::fetch(model::y)),
          "run_batches");
  };
  const auto one_by_one = [&] {
    for (std::size_t i = 0; i < n; ++i)
      tf::bench::keep(value(s.run(tf::feed(model::x, batches[i % batches.size()]), tf::fetch(model::y)), "run"));
  };
  const auto r = h.compare("MLP batch 64, " + std::to_string(n) + " batches, run_batches", "run() batch after batch",
                           overlapped, one_by_one, 5, 0.0);
  tf::bench::record rate{"gpu", "MLP batch 64 fed from the host", "throughput", "batches/s", "run() batch after batch",
                         static_cast<double>(n) / (r.typeflow * 1e-3), static_cast<double>(n) / (r.baseline * 1e-3)};
  rate.ratio = rate.typeflow / rate.baseline;
  h.add(rate);
}

// Two jobs on one GPU: the main one unpaced, the other paced by an op idle time (its own policy
// object and pool). Throughput in runs per second of each, together and alone.
void bench_sharing(tf::bench::harness& h, tf::cuda<0>& g) {
  using model = models::mlp;
  using graph = model::graph;
  const model::weights w;
  tf::cuda<0> side_gpu;
  side_gpu.set_op_idle_time(std::chrono::microseconds(100));
  tf::session<graph, tf::cuda<0>, registry> main_job(graph{}, g);
  tf::session<graph, tf::cuda<0>, registry> side_job(graph{}, side_gpu);
  check(model::initialize(main_job, w), "initialize");
  check(model::initialize(side_job, w), "initialize");
  const tf::tensor x = model::input(64);
  const int runs = h.quick() ? 20 : 300;
  const auto rate = [&](auto& s) {
    check(s.run(tf::feed(model::x, x), tf::fetch(model::y)).status(), "run");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < runs; ++i) check(s.run(tf::feed(model::x, x), tf::fetch(model::y)).status(), "run");
    return runs / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double main_alone = rate(main_job), side_alone = rate(side_job);
  double side_together = 0;
  std::thread side([&] { side_together = rate(side_job); });
  const double main_together = rate(main_job);
  side.join();
  tf::bench::record m{"gpu", "MLP batch 64 beside a paced job", "throughput", "runs/s", "alone", main_together, main_alone};
  m.ratio = m.typeflow / m.baseline;
  h.add(m);
  tf::bench::record p{"gpu", "paced MLP batch 64 (idle 100 us)", "throughput", "runs/s", "alone", side_together, side_alone};
  p.ratio = p.typeflow / p.baseline;
  h.add(p);
}

}  // namespace

int main(int argc, char** argv) {
  tf::cuda<0> g;
  if (!g.available().ok()) {
    std::printf("bench_gpu: skipped: %s\n", g.available().to_string().c_str());
    return 0;
  }
  tf::bench::harness h("gpu", argc, argv);
  tf::cpu host;
  bench_elementwise(h, host, g);
  bench_products(h, host, g);
  bench_networks(h, host, g);
  bench_launches(h, g);
  bench_feeding(h, g);
  bench_sharing(h, g);
  return 0;
}
