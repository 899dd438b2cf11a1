// SPDX-License-Identifier: Apache-2.0
// The cuda<N> device policy and its kernel list on any machine: what compiles (the registry finds the
// GPU kernels for every cuda<N> through the family, and misses what is not there), and what a program
// gets at run time without the GPU (clear statuses, nothing launched).
#include <catch2/catch.hpp>

#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
using Catch::Matchers::Contains;
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

static_assert(tf::device_policy<tf::cuda<0>> && tf::device_policy<tf::cuda<3>>);
static_assert(std::is_same_v<tf::device_family_t<tf::cuda<2>>, tf::cuda<0>>);
static_assert(registry::has_kernel<tf::ops::relu, tf::cuda<0>, float>);
static_assert(registry::has_kernel<tf::ops::matmul, tf::cuda<1>, Eigen::half>);  // through the family
static_assert(registry::has_kernel<tf::ops::equal, tf::cuda<0>, bool>);
static_assert(registry::has_kernel<tf::ops::softmax, tf::cuda<0>, Eigen::bfloat16>);
static_assert(!registry::has_kernel<tf::ops::exp, tf::cuda<0>, std::int32_t>);  // exp takes floats
static_assert(!registry::has_kernel<tf::ops::top_k, tf::cuda<0>, float>);       // not on the GPU yet
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

TEST_CASE("a static session on cuda<0> alone fuses nothing by default, and without the GPU its run says why") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 3>>;
  constexpr auto b = tf::variable<"b", float, tf::static_shape<3>>;
  constexpr auto y = tf::relu(x + b) * x;  // an elementwise chain the CPU would fuse
  using g = decltype(tf::graph(y));
  static_assert(!tf::fuses_by_default<tf::cuda<0>>);
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
