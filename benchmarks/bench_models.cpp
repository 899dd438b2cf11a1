// SPDX-License-Identifier: Apache-2.0
// The example networks (examples/models.hpp) as static graphs against the same networks written by
// hand against Eigen, checked for agreement: MLP 784-1024-1024-10 and the small CNN, batch 1 and
// 64, on 1 and 2 threads; with the default kernels, and (where oneDNN was found) with
// onednn_kernel_list first in the registry (cases marked "(oneDNN)").
#include <typeflow/typeflow.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "../examples/models.hpp"
#include "harness.hpp"

#if TYPEFLOW_BENCH_ONEDNN
#include <typeflow/kernels/onednn/kernel_list.hpp>
#endif

namespace tf = typeflow;
using namespace tf::literals;
using tf::bench::keep;
using tf::static_shape;

namespace {

template <class Model, class Registry = tf::default_registry, class Device>
void bench_model(tf::bench::harness& h, Device& device, std::int64_t batch, const std::string& label) {
  const typename Model::weights w;
  tf::session<typename Model::graph, Device, Registry> s(tf::graph(Model::y), device);
  (void)Model::initialize(s, w);
  const tf::tensor in = Model::input(batch);
  typename Model::eigen_forward reference(batch);
  auto r = s.run(tf::feed(Model::x, in), tf::fetch(Model::y));
  if (!r.ok() || models::max_abs_diff(std::get<0>(*r).untyped(), reference(device.eigen(), in, w)) > 1e-4)
    std::printf("!! %s disagrees with Eigen\n", label.c_str());
  h.compare(label, "hand-written Eigen", [&] { auto y = s.run(tf::feed(Model::x, in), tf::fetch(Model::y)); keep(y); },
            [&] { keep(reference(device.eigen(), in, w)); }, 11, 0.5);
}

template <class Registry, class Device>
void bench_models(tf::bench::harness& h, Device& device, const std::string& threads, const std::string& suffix) {
  bench_model<models::mlp, Registry>(h, device, 1, "MLP batch 1, " + threads + suffix);
  bench_model<models::mlp, Registry>(h, device, 64, "MLP batch 64, " + threads + suffix);
  bench_model<models::cnn, Registry>(h, device, 1, "CNN batch 1, " + threads + suffix);
  bench_model<models::cnn, Registry>(h, device, 64, "CNN batch 64, " + threads + suffix);
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("models", argc, argv);
  {
    tf::cpu device;
    bench_models<tf::default_registry>(h, device, "1 thread", "");
#if TYPEFLOW_BENCH_ONEDNN
    bench_models<tf::registry<tf::onednn_kernel_list, tf::cpu_kernel_list>>(h, device, "1 thread", " (oneDNN)");
#endif
  }
  {
    tf::thread_pool device(2);
    bench_models<tf::default_registry>(h, device, "2 threads", "");
#if TYPEFLOW_BENCH_ONEDNN
    bench_models<tf::registry<tf::onednn_kernel_list, tf::cpu_kernel_list>>(h, device, "2 threads", " (oneDNN)");
#endif
  }
  return 0;
}
