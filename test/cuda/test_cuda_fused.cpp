// SPDX-License-Identifier: Apache-2.0
// Fused elementwise groups on a GPU: static graphs of random elementwise expressions (full, row and
// scalar operands, compile-time constants) and one that holds every fusable op run on cuda<0> as
// NVRTC-compiled kernels, against the same graphs fused on the CPU; the kernel cache compiles a
// group once.
#include <catch2/catch.hpp>

#include <cmath>

#include <typeflow/cuda/fused.hpp>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

#include "../unit/fusion_support.hpp"

namespace tf = typeflow;
using namespace tf::literals;
using namespace tf::test::fusion;
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

namespace {

// Runs Expression (with every input in the graph) on the CPU and on cuda<0>, both fused, on rows of
// odd length and count; returns how many kernels the GPU run compiled.
template <auto Expression>
std::size_t check_on_gpu(std::uint64_t seed, double lo = -2, double hi = 2) {
  constexpr auto all = Expression + (a + r + s) * 0.0_c;
  using graph = decltype(tf::graph(all));
  tf::cpu host;
  tf::cuda<0> g;
  tf::session<graph, tf::cpu> on_cpu(graph{}, host);
  tf::session<graph, tf::cuda<0>, registry> on_gpu(graph{}, g);
  INFO(on_gpu.describe_plan(tf::fetch(all)));
  const tf::tensor at = tf::test::random_tensor<float>(tf::shape{1031, 7}, seed, lo, hi);
  const tf::tensor rt = tf::test::random_tensor<float>(tf::shape{7}, seed + 1, lo, hi);
  const tf::tensor st = tf::test::random_tensor<float>(tf::shape{}, seed + 2, lo, hi);
  auto want = on_cpu.run(tf::feed(a, at), tf::feed(r, rt), tf::feed(s, st), tf::fetch(all));
  const std::size_t before = tf::gpu::fused_kernels_compiled();
  auto got = on_gpu.run(tf::feed(a, at), tf::feed(r, rt), tf::feed(s, st), tf::fetch(all));
  INFO(got.status().to_string());
  REQUIRE((want.ok() && got.ok()));
  const std::size_t compiled = tf::gpu::fused_kernels_compiled() - before;
  const auto w = std::get<0>(*want).untyped().template unchecked_values<float>();
  const auto v = std::get<0>(*got).untyped().template unchecked_values<float>();
  REQUIRE(v.size() == w.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(w[i])) {
      CHECK(std::isnan(v[i]));
      continue;
    }
    REQUIRE(v[i] == Approx(w[i]).epsilon(1e-4).margin(1e-5));
  }
  // A second run compiles nothing: the group's kernel is cached.
  const std::size_t after_first = tf::gpu::fused_kernels_compiled();
  REQUIRE(on_gpu.run(tf::feed(a, at), tf::feed(r, rt), tf::feed(s, st), tf::fetch(all)).ok());
  CHECK(tf::gpu::fused_kernels_compiled() == after_first);
  return compiled;
}

template <std::uint64_t... Seeds>
void check_random_on_gpu() {
  (check_on_gpu<random_expression<Seeds, 4>()>(Seeds), ...);
}

} // namespace

TEST_CASE("random fused elementwise groups on cuda<0> match the CPU's fused kernels") {
  check_random_on_gpu<1, 2, 3, 4, 5, 6>();
}

TEST_CASE("every fusable op in one group on cuda<0> matches the CPU, and the group compiles once") {
  constexpr auto x = a * 0.5_c;
  constexpr auto every_op =
      tf::log(tf::exp(x) + 1.0_c) + tf::rsqrt(tf::square(r) + 1.0_c) * tf::sqrt(tf::abs(x)) -
      tf::erf(x) / tf::pow(tf::abs(x) + 1.0_c, 2.0_c) + tf::apply<tf::ops::leaky_relu{.alpha = 0.1}>(x) +
      tf::apply<tf::ops::hard_sigmoid{.alpha = 0.2, .beta = 0.5}>(x) * tf::apply<tf::ops::clip{.min = -0.5, .max = 0.75}>(s) +
      tf::maximum(tf::relu(-x), tf::minimum(tf::sigmoid(x), tf::tanh(x))) + tf::softplus(x) + tf::gelu(x) +
      tf::apply<tf::ops::gelu{.approximate = true}>(x);
  const std::size_t compiled = check_on_gpu<every_op>(77);
  CHECK(compiled >= 1);
}
