// SPDX-License-Identifier: Apache-2.0
// The cuda<N> device policy and its kernel list on any machine: what compiles (the registry finds the
// GPU kernels for every cuda<N> through the family, and misses what is not there), and what a program
// gets at run time without the GPU (clear statuses, nothing launched).
#include <catch2/catch.hpp>

#include <chrono>
#include <random>
#include <vector>

#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/runtime/cuda_graph.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
using Catch::Matchers::Contains;
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

static_assert(tf::device_policy<tf::cuda<0>> && tf::device_policy<tf::cuda<3>>);
// Sessions' feeds and fetches take the blocking copies (a stream synchronize, no completion thread).
static_assert(tf::blocking_host_copies<tf::cuda<0>> && tf::blocking_host_copies<tf::cuda_spilling<0>>);
static_assert(std::is_same_v<tf::device_family_t<tf::cuda<2>>, tf::cuda<0>>);
static_assert(registry::has_kernel<tf::ops::relu, tf::cuda<0>, float>);
static_assert(registry::has_kernel<tf::ops::matmul, tf::cuda<1>, Eigen::half>);  // through the family
static_assert(registry::has_kernel<tf::ops::equal, tf::cuda<0>, bool>);
static_assert(registry::has_kernel<tf::ops::softmax, tf::cuda<0>, Eigen::bfloat16>);
static_assert(!registry::has_kernel<tf::ops::exp, tf::cuda<0>, std::int32_t>);  // exp takes floats
static_assert(registry::has_kernel<tf::ops::layer_norm, tf::cuda<0>, Eigen::half>);
static_assert(registry::has_kernel<tf::ops::pad, tf::cuda<0>, std::int8_t>);
static_assert(!registry::has_kernel<tf::ops::top_k, tf::cuda<0>, std::int8_t>);  // neither device ranks i8
static_assert(registry::has_kernel<tf::ops::conv2d, tf::cuda<0>, float>);       // cuDNN
static_assert(!registry::has_kernel<tf::ops::conv2d, tf::cuda<0>, double>);     // not among cuDNN's engines here
static_assert(tf::device_priority<tf::cuda<0>> > tf::device_priority<tf::cpu>);

TEST_CASE("cuda<N> names GPU:N and its memory space") {
  tf::cuda<1> g;
  CHECK(g.name() == "/job:localhost/replica:0/task:0/device:GPU:1");
  CHECK(g.space() == tf::memory_space::device("GPU", 1));
  CHECK_FALSE(g.space().host_accessible());
}

TEST_CASE("without the GPU, allocation, copies, kernels and synchronize answer why") {
  auto count = tf::gpu::device_count();
  REQUIRE(count.ok());
  if (*count > 0) return;  // test_cuda_gpu covers the device
  tf::cuda<0> g;
  CHECK(g.available().code() == tf::status_code::failed_precondition);
  auto t = g.allocate(tf::dtype::f32, tf::shape{2, 3});
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == tf::status_code::failed_precondition);
  CHECK_THAT(std::string(t.status().message()),
             Contains("cannot allocate f32[2, 3] on /job:localhost/replica:0/task:0/device:GPU:0") && Contains("no CUDA device"));
  auto host = tf::tensor::filled<float>(tf::shape{2, 3}, 1.0f);
  REQUIRE(host.ok());
  tf::tensor dst = *host;
  tf::status got;
  g.copy_from_host(*host, dst, [&](tf::status s) { got = s; });
  CHECK(got.code() == tf::status_code::failed_precondition);
  CHECK_THAT(std::string(got.message()), Contains("GPU:0: copy_from_host"));
  CHECK(g.synchronize().code() == tf::status_code::failed_precondition);
  // An eager call: the output cannot be allocated, and the status says where.
  auto r = tf::call<float, registry>(g, tf::ops::relu{}, *host);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(std::string(r.status().message()), Contains("GPU:0"));
}

TEST_CASE("cuda_spilling is a GPU policy of the same kernels, and without the GPU it says why") {
  static_assert(registry::has_kernel<tf::ops::conv2d, tf::cuda_spilling<0>, float>);
  static_assert(std::is_same_v<tf::device_family_t<tf::cuda_spilling<1>>, tf::cuda<0>>);
  tf::cuda_spilling<0> g(std::size_t{1} << 30);
  CHECK(g.name() == "/job:localhost/replica:0/task:0/device:GPU:0");
  if (g.available().ok()) return;  // the GPU tests spill for real
  auto t = g.allocate(tf::dtype::f32, tf::shape{4});
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == g.available().code());
  CHECK_THAT(std::string(t.status().message()), Contains("GPU:0") && Contains("f32[4]"));
  CHECK(g.allocator().spills().num_spilled_allocs == 0);
}

TEST_CASE("a static session on cuda<0> alone fuses by default, and without the GPU its run says why") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 3>>;
  constexpr auto b = tf::variable<"b", float, tf::static_shape<3>>;
  constexpr auto y = tf::relu(x + b) * x;  // an elementwise chain the CPU would fuse
  using g = decltype(tf::graph(y));
  static_assert(tf::fuses_by_default<tf::cuda<0>>);
  static_assert(tf::fuses_by_default<tf::device_group<tf::cpu, tf::cuda<0>>>);
  tf::cuda<0> gpu;
  tf::session<g, tf::cuda<0>, registry> s(g{}, gpu);
  auto xt = tf::tensor::filled<float>(tf::shape{2, 3}, 2.0f);
  REQUIRE(xt.ok());
  const auto init = s.initialize(b, -1.0f);
  auto r = s.run(tf::feed(x, *xt), tf::fetch(y));
  if (gpu.available().ok()) {
    REQUIRE(init.ok());
    REQUIRE(r.ok());
    for (float v : std::get<0>(*r).untyped().unchecked_values<float>()) CHECK(v == 2.0f);
  } else {
    REQUIRE_FALSE(init.ok());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(std::string(r.status().message()), Contains("GPU:0"));
  }
}

TEST_CASE("a static session run as a CUDA graph checks its option, and without the GPU its run says why") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 3>>;
  constexpr auto y = tf::relu(x) * x;
  using g = decltype(tf::graph(y));
  tf::cuda<0> gpu;
  auto xt = tf::tensor::filled<float>(tf::shape{2, 3}, 2.0f);
  REQUIRE(xt.ok());

  tf::cuda_graph_session<g, tf::cuda<0>, registry> bad(g{}, gpu, tf::cuda_graph{.branches = 0});
  CHECK(bad.init_status().code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(bad.init_status().message()), Contains("cuda_graph{.branches = 0}") && Contains("1 to 16"));
  auto refused = bad.run(tf::feed(x, *xt), tf::fetch(y));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == tf::status_code::invalid_argument);

  tf::cuda_graph_session<g, tf::cuda<0>, registry> s(g{}, gpu, tf::cuda_graph{});
  REQUIRE(s.init_status().ok());
  tf::run_metadata md;
  md.replay = tf::graph_replay::replayed;  // run() sets it, whatever it held
  auto r = s.run(md, tf::feed(x, *xt), tf::fetch(y));
  if (gpu.available().ok()) {
    REQUIRE(r.ok());
    CHECK(md.replay == tf::graph_replay::captured);
  } else {
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == tf::status_code::failed_precondition);
    CHECK_THAT(std::string(r.status().message()), Contains("tf::cuda_graph") && Contains("no CUDA device"));
    CHECK(md.replay == tf::graph_replay::none);
  }
  CHECK(tf::to_string(tf::graph_replay::reinstantiated) == "reinstantiated");
  std::size_t done = 0;
  const tf::status loop = s.run_batches(
      3, [&](std::size_t) { return std::tuple(tf::feed(x, *xt)); }, [&](std::size_t, auto) { ++done; }, tf::fetch(y));
  if (gpu.available().ok()) {
    CHECK(loop.ok());
    CHECK(done == 3);
  } else {
    CHECK(loop.code() == tf::status_code::failed_precondition);
    CHECK(done == 0);
  }
}

TEST_CASE("a GPU policy's op idle time is shared by its copies, changeable, and never negative") {
  tf::cuda<0> gpu;
  CHECK(gpu.op_idle_time() == std::chrono::nanoseconds(0));
  tf::cuda<0> copy = gpu;
  gpu.set_op_idle_time(std::chrono::microseconds(250));
  CHECK(copy.op_idle_time() == std::chrono::microseconds(250));
  copy.set_op_idle_time(std::chrono::nanoseconds(-5));
  CHECK(gpu.op_idle_time() == std::chrono::nanoseconds(0));
  static_assert(tf::paces_kernels<tf::cuda<0>>);
  static_assert(!tf::paces_kernels<tf::cpu>);
  if (!gpu.available().ok()) CHECK(gpu.after_kernel().ok());  // nothing to wait for
}

TEST_CASE("pad_source maps every output element as the CPU's pad kernel does, in every mode") {
  // The input holds its own offsets, so the CPU's output says which element each output copies
  // (-1 for the constant).
  std::mt19937 rng(41);
  std::uniform_int_distribution<int> rank_of(1, 4), dim_of(1, 4), mode_of(0, 3);
  tf::cpu host;
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = rank_of(rng);
    const auto mode = static_cast<tf::ops::pad_mode>(mode_of(rng));
    std::vector<std::int64_t> dims(static_cast<std::size_t>(rank)), paddings;
    for (auto& d : dims) d = dim_of(rng);
    for (std::int64_t d : dims) {
      const std::int64_t most = mode == tf::ops::pad_mode::reflect ? d - 1 : mode == tf::ops::pad_mode::symmetric ? d : 3;
      std::uniform_int_distribution<std::int64_t> pad_of(0, most);
      paddings.push_back(pad_of(rng));
      paddings.push_back(pad_of(rng));
    }
    auto x = tf::tensor::allocate(tf::dtype::f32, *tf::shape::from_span(dims));
    REQUIRE(x.ok());
    auto xv = x->unchecked_values<float>();
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
    tf::ops::pad op{.value = mode == tf::ops::pad_mode::constant ? -1.0 : 0.0, .mode = mode};  // others take no value
    for (auto v : paddings) op.paddings.push_back(v);
    auto want = tf::call<float>(host, op, *x);
    INFO(want.status().to_string());
    REQUIRE(want.ok());
    auto l = tf::gpu::make_pad_layout({.type = tf::gpu::elem::f32, .x = xv.data(), .x_dims = dims, .paddings = paddings,
                                       .mode = static_cast<tf::gpu::pad_mode>(mode), .value = -1, .y = xv.data()});
    REQUIRE(l.ok());
    const auto wv = want->unchecked_values<float>();
    REQUIRE(l->size == static_cast<std::int64_t>(wv.size()));
    for (std::int64_t o = 0; o < l->size; ++o) REQUIRE(static_cast<float>(tf::gpu::pad_source(*l, o)) == wv[static_cast<std::size_t>(o)]);
  }
  const std::int64_t d[] = {3}, too_much[] = {3, 0};
  float f = 0;
  auto bad = tf::gpu::make_pad_layout({.x = &f, .x_dims = d, .paddings = too_much, .mode = tf::gpu::pad_mode::reflect, .y = &f});
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) == "pad: axis 0 has 3 elements, too few to pad by 3 in mode reflect");
}
