// SPDX-License-Identifier: Apache-2.0
// Fusion (BENCHMARKS.md): an 8-op elementwise chain on 16M floats as a static graph, fused, against a
// fused loop written by hand and against the same graph unfused.
#include <typeflow/typeflow.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "../examples/models.hpp"
#include "harness.hpp"

namespace tf = typeflow;
using namespace tf::literals;
using tf::bench::keep;
using tf::static_shape;

namespace {

constexpr auto big = tf::input<"big", float, static_shape<tf::dyn>>;
constexpr auto other = tf::input<"other", float, static_shape<tf::dyn>>;
// 8 elementwise ops: mul, add, relu, mul, sub, minimum, abs, mul.
constexpr auto chain8 = tf::abs(tf::minimum(tf::relu(big * 1.5_c + 0.5_c) * other - 1.0_c, 2.0_c)) * 0.25_c;

void bench_fusion(tf::bench::harness& h) {
  const std::int64_t count = h.quick() ? (1 << 20) : (1 << 24);
  const tf::tensor a = models::pattern(tf::shape{count}, 2.0, 0.1);
  const tf::tensor b = models::pattern(tf::shape{count}, 1.0, 0.2);
  tf::tensor out = *tf::tensor::allocate(tf::dtype::f32, tf::shape{count});
  tf::cpu device;
  using graph = decltype(tf::graph(chain8));
  tf::session<graph, tf::cpu> fused(graph{}, device);
  tf::session<graph, tf::cpu, tf::default_registry, false> unfused(graph{}, device);
  auto by_hand = [&] {
    const float* __restrict p = a.unchecked_data<const float>();
    const float* __restrict q = b.unchecked_data<const float>();
    float* __restrict y = out.unchecked_data<float>();
    for (std::int64_t i = 0; i < count; ++i) {
      const float t = std::max(p[i] * 1.5f + 0.5f, 0.0f) * q[i] - 1.0f;
      y[i] = std::abs(std::min(t, 2.0f)) * 0.25f;
    }
    keep(y);
  };
  by_hand();
  auto r = fused.run(tf::feed(big, a), tf::feed(other, b), tf::fetch(chain8));
  if (!r.ok() || models::max_abs_diff(std::get<0>(*r).untyped(), out) > 1e-6) std::printf("!! fused chain disagrees\n");
  auto run_fused = [&] { auto y = fused.run(tf::feed(big, a), tf::feed(other, b), tf::fetch(chain8)); keep(y); };
  auto run_unfused = [&] { auto y = unfused.run(tf::feed(big, a), tf::feed(other, b), tf::fetch(chain8)); keep(y); };
  const std::string size = h.quick() ? "1M" : "16M";
  h.compare("8-op chain on " + size + " floats, fused", "hand-written fused loop", run_fused, by_hand, 11, 0.5);
  h.compare("8-op chain on " + size + " floats, fused", "the unfused graph", run_fused, run_unfused, 7, 0.5);
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("fusion", argc, argv);
  bench_fusion(h);
  return 0;
}
