// SPDX-License-Identifier: Apache-2.0
// The 12-layer transformer encoder of examples/transformer.cpp (hidden 256, 4 heads, feed-forward
// 1024, 128 tokens) as one static graph, against the same network written by hand against Eigen
// in this binary (examples/transformer.hpp), checked for agreement: batch 1 and 8, 1 and 2 threads;
// the session with its kernels compiled in place (default_registry) and with the kernels of the
// program's kernel table (dispatched<>, compiled once in default_kernels: what examples/transformer.cpp
// runs).
#include <typeflow/typeflow.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include <cstdio>
#include <string>

#include "../examples/transformer.hpp"
#include "harness.hpp"

namespace tf = typeflow;
using tf::bench::keep;

namespace {

using model = models::transformer<models::transformer_config{.layers = 12, .hidden = 256, .heads = 4, .ffn = 1024, .sequence = 128}>;

template <class Registry = tf::default_registry, class Device>
void bench_transformer(tf::bench::harness& h, Device& device, const model::weights& w, std::int64_t batch,
                       const std::string& label) {
  tf::session<model::built::graph, Device, Registry> s(model::built::graph{}, device);
  if (auto st = model::initialize(s, w); !st.ok()) std::printf("!! %s: %s\n", label.c_str(), st.to_string().c_str());
  const tf::tensor in = model::input(batch);
  model::eigen_forward reference(batch);
  auto r = s.run(tf::feed(model::built::node<"x">, in), tf::fetch(model::built::output<0>));
  if (!r.ok() || models::max_abs_diff(std::get<0>(*r).untyped(), reference(device.eigen(), in, w)) > 1e-3)
    std::printf("!! %s disagrees with Eigen\n", label.c_str());
  h.compare(label, "hand-written Eigen", [&] { auto y = s.run(tf::feed(model::built::node<"x">, in), tf::fetch(model::built::output<0>)); keep(y); },
            [&] { keep(reference(device.eigen(), in, w)); }, 7, 1.0);
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("transformer", argc, argv);
  const model::weights w;
  {
    tf::cpu device;
    bench_transformer(h, device, w, 1, "transformer 12 layers, batch 1, 1 thread");
    bench_transformer<tf::dispatched<>>(h, device, w, 1, "transformer 12 layers, batch 1, 1 thread, kernels from the table");
    bench_transformer(h, device, w, 8, "transformer 12 layers, batch 8, 1 thread");
    bench_transformer<tf::dispatched<>>(h, device, w, 8, "transformer 12 layers, batch 8, 1 thread, kernels from the table");
  }
  {
    tf::thread_pool device(2);
    bench_transformer(h, device, w, 1, "transformer 12 layers, batch 1, 2 threads");
    bench_transformer<tf::dispatched<>>(h, device, w, 1, "transformer 12 layers, batch 1, 2 threads, kernels from the table");
    bench_transformer(h, device, w, 8, "transformer 12 layers, batch 8, 2 threads");
    bench_transformer<tf::dispatched<>>(h, device, w, 8, "transformer 12 layers, batch 8, 2 threads, kernels from the table");
  }
  return 0;
}
